"""NNX712 ``graphdef-nodes-read``: the rule and its examples."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from nnx_lint.api import ABSENT, Facts, Invalid, Rule, Valid, differs, pin_sites_in, value_model


@dataclass(frozen=True, kw_only=True)
class GraphDefNodesReadFacts(Facts):
    """What ``NNX712`` reports (the diagnostic's ``facts``, in this order)."""

    api: str
    pin: list = ABSENT


class GraphDefNodesRead(Rule):
    """`graphdef.nodes` of a GraphDef made in the default mode: graph mode's node list becomes a `TreeNodeDef`.

    What it does:
        Flags a read of `.nodes` on a GraphDef that an `nnx.split` / `nnx.graphdef` /
        `nnx.flatten` (also `nnx.graphlib.flatten`) in the same function made without
        choosing a mode (no `graph=`, no graph-mode scope): the GraphDef is bound to the call
        (`graphdef, state = nnx.split(m)`, `nnx.split(m)[0]`) or is the call itself, or is a
        parameter that every call of its function in the file passes such a GraphDef. A
        GraphDef of unknown origin may be a graph-mode one: silent.

    Why is this bad?:
        `GraphDef.nodes` is the flattened structure the split recorded, and its element types
        are the mode's own: in graph mode a `NodeDef` per graph node, a `VariableDef` per
        Variable and a `NodeRef` per repeated reference (`nnx.split(nnx.Param(1))` gives
        `[VariableDef]`); in Tree Mode the split treats the node as a pytree and records a
        single `TreeNodeDef` holding the treedef (`nnx.split(nnx.Param(1))` gives
        `[TreeNodeDef]`). Code that inspects the node list (dispatches on
        `isinstance(graphdef.nodes[0], nnx.graphlib.NodeDef)`, counts the `VariableDef`s,
        reads `nodes[0].type`) silently takes another branch after the flip. Keep graph mode
        where the GraphDef is made (`nnx.split(m, graph=True)`), or read the structure through
        the public API (`nnx.state`, `jax.tree.structure`, `type(nnx.merge(graphdef, state))`).

    References:
        - Patterns in the catalogue: [H13](../catalogue.md#h13)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX712"
    facts_type = GraphDefNodesReadFacts
    fixes = ("pin",)
    symbol = "graphdef-nodes-read"
    kind = "silent"
    catalogue = ("H13",)
    no_reproduction_reason = (
        "`GraphDef.nodes` and its node types (`NodeDef`, `VariableDef`, `TreeNodeDef`) are flax's internal "
        "representation; the Tree Mode reference runtime has its own GraphDef without them, so no program with "
        "names both implementations provide reads them"
    )
    message = "`.nodes` of a GraphDef from `{api}` (default mode) silently becomes one `TreeNodeDef` in Tree Mode"
    help = (
        "In graph mode `GraphDef.nodes` lists a `NodeDef` / `VariableDef` / `NodeRef` per graph node; in Tree Mode "
        "it holds a single `TreeNodeDef`. Keep graph mode where the GraphDef is made (`graph=True`), or read the "
        "structure through the public API (`nnx.state`, `jax.tree.structure`)"
    )
    VALID = [
        Valid(
            "graph-mode-or-public-api",
            """
            import jax
            from flax import nnx

            def structure(model, graphdef):
                kept, _ = nnx.split(model, graph=True)
                chosen, _ = nnx.split(model, graph=False)
                _, state = nnx.split(model)
                return kept.nodes[0], chosen.nodes[0], graphdef.nodes, jax.tree.structure(state)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "node-types-of-a-default-split",
            """
            from flax import nnx

            def is_variable_def(v):
                graphdef, state = nnx.split(v)
                return isinstance(graphdef.nodes[0], nnx.graphlib.VariableDef)  # NNX712
            """,
            tree_mode=differs("`graphdef.nodes[0]` is a `TreeNodeDef`: the check turns False"),
        ),
    ]

    def visit_attribute(self, node: nodes.Attribute) -> None:
        if node.attrname != "nodes":  # an Attribute node is a read (stores are AssignAttr)
            return
        source = value_model(self.context).graphdef_source(node.expr)
        if source is None or source.via_partial or not self.context.flip_changes(source):
            return
        self.report(node, api=f"nnx.{source.name}", pin=pin_sites_in(self.context, source),
                    related=[(source.node, "the GraphDef is made here, in the default mode")])
