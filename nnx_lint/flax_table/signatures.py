"""How each NNX transform binds its arguments, as data (the flax table).

The transform resolver (:func:`nnx_lint.analysis.transform_types.decode_transform`) binds a
transform call's arguments with these signatures, so ``argnums``, ``has_aux``,
``nondiff_argnums``, ``in_axes`` / ``out_axes`` and the mode flags are decoded in one place.
``tests/test_transform_signatures.py`` holds every row to ``inspect.signature`` of the
installed flax: the positional parameters and their order, the ``*args`` name, the
keyword-only parameters, and each default written here.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Signature:
    """The parameters of one ``flax.nnx`` transform (flax 0.12.8)."""

    #: Parameters that may be passed by position, in order.
    positional: tuple[str, ...]
    #: Keyword-only parameters.
    keyword_only: tuple[str, ...]
    #: The name of the ``*args`` parameter (``operands`` of ``nnx.cond``), None if there is none.
    variadic: str | None = None
    #: Parameters that take the functions the transform traces.
    traced: tuple[str, ...] = ("f",)
    #: Defaults the analysis relies on, as Python literals (``argnums`` 0, ``has_aux`` False).
    defaults: dict[str, object] = field(default_factory=dict)

    @property
    def parameters(self) -> tuple[str, ...]:
        """Every named parameter (the ``*args`` one aside)."""
        return self.positional + self.keyword_only


_FLAGS = ("graph", "graph_updates")
_JIT = ("in_shardings", "out_shardings", "static_argnums", "static_argnames", "donate_argnums",
        "donate_argnames", "keep_unused", "device", "backend", "inline") + _FLAGS
_GRAD = Signature(("f",), ("argnums", "has_aux", "holomorphic", "allow_int", "reduce_axes") + _FLAGS,
                  defaults={"argnums": 0, "has_aux": False, "holomorphic": False, "allow_int": False})

#: Every NNX transform's signature, by short name (the keys are ``nnx_api.TRANSFORMS``).
TRANSFORM_SIGNATURES: dict[str, Signature] = {
    "grad": _GRAD,
    "value_and_grad": _GRAD,
    "custom_vjp": Signature(("fun",), ("nondiff_argnums",) + _FLAGS, traced=("fun",),
                            defaults={"nondiff_argnums": ()}),
    "vjp": Signature(("f",), ("has_aux", "reduce_axes") + _FLAGS, "primals", defaults={"has_aux": False}),
    "jvp": Signature(("f", "primals", "tangents"), ("has_aux",) + _FLAGS, defaults={"has_aux": False}),
    "jit": Signature(("fun",), _JIT, traced=("fun",)),
    "jit_partial": Signature(("fun",), _JIT, "partial_args", traced=("fun",)),
    "shard_map": Signature(("f",), ("mesh", "in_specs", "out_specs", "axis_names", "check_vma") + _FLAGS),
    "remat": Signature(("f",), ("prevent_cse", "static_argnums", "policy") + _FLAGS),
    "vmap": Signature(("f",), ("in_axes", "out_axes", "axis_name", "axis_size", "spmd_axis_name",
                               "transform_metadata") + _FLAGS, defaults={"in_axes": 0, "out_axes": 0}),
    "pmap": Signature(("f",), ("axis_name", "in_axes", "out_axes", "static_broadcasted_argnums", "devices",
                               "backend", "axis_size", "donate_argnums", "transform_metadata") + _FLAGS,
                      defaults={"in_axes": 0, "out_axes": 0}),
    # scan's axes default to (nnx.Carry, 0): not a literal, so not written here.
    "scan": Signature(("f",), ("length", "reverse", "unroll", "_split_transpose", "in_axes", "out_axes",
                               "transform_metadata") + _FLAGS),
    "while_loop": Signature(("cond_fun", "body_fun", "init_val"), _FLAGS, traced=("cond_fun", "body_fun")),
    "fori_loop": Signature(("lower", "upper", "body_fun", "init_val"), ("unroll",) + _FLAGS, traced=("body_fun",)),
    "eval_shape": Signature(("f",), _FLAGS, "args"),
    "cond": Signature(("pred", "true_fun", "false_fun"), _FLAGS, "operands", traced=("true_fun", "false_fun")),
    "switch": Signature(("index", "branches"), _FLAGS, "operands", traced=("branches",)),
    "checkify": Signature(("f", "errors", "graph", "graph_updates"), ()),
    "make_jaxpr": Signature(("f",), ("graph", "graph_updates", "static_argnums")),
    "cached_partial": Signature(("f",), _FLAGS, "cached_args"),
    "split_rngs": Signature(("node",), ("splits", "only", "squeeze") + _FLAGS, traced=("node",)),
    "fork_rngs": Signature(("node",), ("split",) + _FLAGS, traced=("node",)),
    "with_rngs": Signature(("node",), ("split", "fork", "broadcast", "only") + _FLAGS, traced=("node",)),
}

#: NNX transforms that trace the functions given to them (``split_rngs`` and its kin wrap a
#: function without tracing it).
TRACING_TRANSFORMS: frozenset[str] = frozenset(
    """
    jit jit_partial shard_map grad value_and_grad custom_vjp vjp jvp remat vmap pmap scan
    while_loop fori_loop eval_shape cond switch checkify make_jaxpr cached_partial
    """.split()
)
#: Transforms whose first argument is the function they transform (and that return it
#: transformed, to be called later).
FUNCTION_TRANSFORMS: frozenset[str] = frozenset(
    {"jit", "vmap", "pmap", "grad", "value_and_grad", "remat", "checkify", "shard_map", "scan", "custom_vjp"}
)
#: Transforms applied directly to a function and its operands in one call.
DIRECT_TRANSFORMS: frozenset[str] = frozenset({"eval_shape", "jit_partial", "cond", "switch", "fori_loop", "while_loop"})
#: Methods of a transformed function that check and trace their inputs like a call does
#: (measured with flax 0.12.8: ``nnx.jit(f).lower(m, m)`` raises the duplicate error too).
AHEAD_OF_TIME_METHODS: frozenset[str] = frozenset({"lower", "trace"})
#: Function transforms that raise on a bound Module method (``nnx.jit(model.step)``; flax 0.12.8).
REJECTING_TRANSFORMS: frozenset[str] = frozenset({
    "jit", "vmap", "pmap", "scan", "grad", "value_and_grad", "remat", "checkify", "shard_map",
    "custom_vjp", "eval_shape", "vjp", "jvp",
})
#: Transforms that split RNG streams around the function they wrap (graph mode splits in place).
RNG_SPLITTING_TRANSFORMS: frozenset[str] = frozenset({"split_rngs", "fork_rngs"})
#: Transforms that map a function over an axis of its inputs.
MAPPING_TRANSFORMS: frozenset[str] = frozenset({"vmap", "pmap"})
#: Loops whose body takes and returns the carry (flax checks the carry's Variables keep their identity).
CARRY_LOOPS: frozenset[str] = frozenset({"fori_loop", "while_loop"})
#: Transforms whose function returns its carry by design (not output aliasing).
CARRY_TRANSFORMS: frozenset[str] = CARRY_LOOPS | {"scan"}
#: Carry loops whose graph mode accepts a body that returns a new object as the carry, where Tree
#: Mode raises (Variable identity must be preserved); ``while_loop`` rejects a new carry in graph
#: mode too (measured with flax 0.12.8).
NEW_CARRY_IN_GRAPH_MODE: frozenset[str] = frozenset({"fori_loop"})
#: Transforms that check their inputs for aliasing as soon as ``graph_updates=False``, even in
#: graph mode (measured with flax 0.12.8; the others accept shared inputs while ``graph=True``).
ALIAS_CHECKING_WITHOUT_UPDATES: frozenset[str] = frozenset({"eval_shape", "custom_vjp"})
#: Transforms that take ``in_axes`` / ``out_axes``.
AXES_TRANSFORMS: frozenset[str] = frozenset(
    name for name, signature in TRANSFORM_SIGNATURES.items() if "in_axes" in signature.parameters)
#: Transforms that take ``transform_metadata=``.
METADATA_TRANSFORMS: frozenset[str] = frozenset(
    name for name, signature in TRANSFORM_SIGNATURES.items() if "transform_metadata" in signature.parameters)
#: Transforms that pass their ``*operands`` to the functions they choose between (``cond``, ``switch``).
BRANCH_TRANSFORMS: frozenset[str] = frozenset(
    name for name, signature in TRANSFORM_SIGNATURES.items() if signature.variadic == "operands")


def traced_arguments(name: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Where a call of transform ``name`` passes the functions it traces: positions and keyword
    names (``nnx.cond(pred, true_fun, false_fun)``: positions 1 and 2).

    >>> traced_arguments("cond"), traced_arguments("jit")
    (((1, 2), ('true_fun', 'false_fun')), ((0,), ('fun',)))
    """
    signature = TRANSFORM_SIGNATURES[name]
    positions = tuple(signature.positional.index(p) for p in signature.traced if p in signature.positional)
    return positions, signature.traced
