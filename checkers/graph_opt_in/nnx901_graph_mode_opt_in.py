"""NNX901 ``graph-mode-opt-in``: the rule, its examples."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from nnx_lint.api import Facts, Invalid, Rule, Valid, constant_bool, flax_table


_SETTERS = frozenset(flax_table.MODE_SETTERS)


@dataclass(frozen=True, kw_only=True)
class GraphModeOptInFacts(Facts):
    """What ``NNX901`` reports (the diagnostic's ``facts``, in this order)."""

    what: str


class GraphModeOptIn(Rule):
    """Code that explicitly keeps graph mode (advisory, off by default).

    What it does:
        Flags `graph=True` / `graph_updates=True` on NNX calls, every `nnx.compat.*` call,
        `nnx.set_graph_mode(True)` / `nnx.set_graph_updates(True)` and
        `flax.config.update('nnx_graph_mode', True)`. Off by default: select `NNX9` to
        enable it.

    Why is this bad?:
        It is not a break: these opt-ins keep graph semantics after the flip. They are what
        a team leaving graph mode entirely still has to remove, and graph mode may not be
        supported forever.

    References:
        - [Tree Mode in brief: opting in](../tree-mode.md#opting-in-to-graph-mode) — patterns [G1](../catalogue.md#g1)
    """

    code = "NNX901"
    facts_type = GraphModeOptInFacts
    no_fix_reason = "these opt-ins are the pins themselves: removing one is the Tree Mode migration of that code, which the other rules' findings guide"
    symbol = "graph-mode-opt-in"
    kind = "advisory"
    catalogue = ("G1",)
    default_enabled = False
    no_reproduction_reason = "it is not a break: opted-in code keeps graph semantics"
    message = "{what} keeps graph mode"
    help = "Remove it once this code is migrated to Tree Mode"
    VALID = [
        Valid(
            "tree-mode-code",
            """
            from flax import nnx

            step = nnx.jit(lambda m, x: m(x))
            nnx.set_graph_mode(False)
            """,
        )
    ]
    INVALID = [
        Invalid(
            "all-opt-ins",
            """
            import flax
            from flax import nnx

            flax.config.update('nnx_graph_mode', True)  # NNX901
            step = nnx.compat.jit(lambda m, x: m(x))  # NNX901
            graphdef, state = nnx.split(object(), graph=True)  # NNX901
            with nnx.set_graph_mode(True):  # NNX901
                pass
            """,
        )
    ]

    def visit_call(self, node: nodes.Call) -> None:
        name = self.context.qualified_name(node.func)
        if name in _SETTERS and node.args and constant_bool(node.args[0]) is True:
            self.report(node, what=f"`nnx.{name.rpartition('.')[2]}(True)`")
            return
        if name == flax_table.FLAX_CONFIG_UPDATE and len(node.args) >= 2:
            key, value = node.args[0], node.args[1]
            if isinstance(key, nodes.Const) and key.value in ("nnx_graph_mode", "nnx_graph_updates"):
                if constant_bool(value) is True:
                    self.report(node, what=f"`flax.config.update({key.value!r}, True)`")
            return
        call = self.context.nnx_call(node)
        if call is None:
            return
        if call.is_compat:
            self.report(node, what=f"`nnx.compat.{call.name}`")
        elif any(constant_bool(call.keywords.get(flag)) is True for flag in ("graph", "graph_updates")):
            self.report(node, what=f"`graph=True` on `nnx.{call.name}`")
