"""The catalogue of graph-mode patterns that break or change meaning in Tree Mode: id -> title.

``docs/catalogue.md`` describes each pattern under a heading ``### <id>. <title>`` with the
anchor ``#<id lowercased>``; rules name the patterns they flag in their ``catalogue`` ClassVar
and rule pages link to them. The titles live here (and not only in the document) because
``nnx-lint rule CODE`` renders a rule page from an installed package, where ``docs/`` is absent;
a test keeps the document's headings equal to this table.
"""
from __future__ import annotations

#: Pattern id -> short title, in the document's order.
PATTERNS: dict[str, str] = {
    "A1": "Tied Variable into a transform",
    "A2": "Shared submodule into a graph API",
    "A3": "Container holding one module twice",
    "A4": "One object passed twice into a transform",
    "A5": "Transformed function returns its input",
    "A6": "Tied model carried through fori_loop / while_loop",
    "A7": "One Rngs stored by several modules",
    "A8": "Transform builds a model that stores its Rngs argument",
    "A9": "ModelAndOptimizer passed with its model",
    "A10": "Plain jax transform un-ties a tied model",
    "A11": "Module stores itself (a cycle)",
    "A12": "Variable-free node reached twice by a graph traversal",
    "B1": "StateAxes in vmap / scan / pmap axes",
    "B2": "DiffState in grad / value_and_grad / custom_vjp",
    "B3": "StateSharding in jit shardings / shard_map specs",
    "C1": "Structural or static change inside a transform",
    "C2": "sow without capture, then pop after a transform",
    "C3": "The perturb + DiffState recipe",
    "C4": "Variable value updates (no change)",
    "C5": "eval() / train() inside a transform",
    "C6": "init_cache inside a transform",
    "C7": "Transform decorating __init__",
    "C8": "Static container mutated inside a transform",
    "C9": "Static update in cond; loop body returning a new module",
    "C10": "Writes to a scan broadcast argument",
    "C11": "RNG counters through transforms (no change)",
    "D1": "grad default argnums and the gradient's type",
    "D2": "grad over a model holding RNG or integer state",
    "E1": "custom_vjp backward with the graph-mode cotangent",
    "E2": "custom_vjp backward returning a State tangent",
    "E3": "Variable update inside custom_vjp",
    "E4": "custom_vjp gradient through an updated Variable",
    "F1": "transform_metadata= keyword",
    "G1": "Explicit graph-mode opt-ins",
    "G2": "When the mode is decided",
    "G3": "The four flag combinations",
    "H1": "split_rngs / fork_rngs used in place",
    "H2": "Keyword arguments to transformed functions",
    "H3": "pytree=False modules and nnx.Object",
    "H4": "nnx.bridge.Module in NNX APIs",
    "H5": "Python scalars inside nnx.data(...)",
    "H6": "eval_shape loses shardings",
    "H7": "iter_graph skips static attributes",
    "H8": "Graph-mode-only APIs and broken compat entries",
    "H9": "A Module is a plain JAX pytree (no change)",
    "H10": "APIs without graph= (no change)",
    "H11": "Graph-API options Tree Mode ignores",
    "H12": "nnx.prefix follows the default mode",
    "H13": "GraphDef node list read",
}


def anchor(pattern_id: str) -> str:
    """The fragment of ``pattern_id`` in ``docs/catalogue.md``.

    >>> anchor("A10")
    'a10'
    """
    return pattern_id.lower()
