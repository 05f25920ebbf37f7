"""NNX706 ``graph-only-api``: the rule, its examples."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from nnx_lint.api import (
    ABSENT,
    Facts,
    Invalid,
    Rule,
    Valid,
    entry_pin_target,
    flax_table,
    pin_sites_in,
    raises,
    transform_resolver,
)


@dataclass(frozen=True, kw_only=True)
class GraphOnlyAPIFacts(Facts):
    """What ``NNX706`` reports (the diagnostic's ``facts``, in this order)."""

    api: str
    error: str
    instead: str
    pin: list = ABSENT


class GraphOnlyAPI(Rule):
    """Graph-mode-only APIs: `nnx.cached_partial`, and the always-broken `nnx.compat.vjp` / `jvp`.

    What it does:
        Flags `nnx.cached_partial(...)` unless graph mode is kept (`nnx.compat.cached_partial`,
        `graph=True, graph_updates=True`), and every call of `nnx.compat.vjp` /
        `nnx.compat.jvp`.

    Why is this bad?:
        `cached_partial` exists only for graph mode: Tree Mode raises `ValueError:
        cached_partial is a graph-mode-only API and requires graph_updates=True`; call the
        transformed function with the object directly (Tree Mode transforms are already
        cheap pytree wrappers). `nnx.compat.vjp` / `nnx.compat.jvp` fix `graph=True,
        graph_updates=True`, which `vjp`/`jvp` never supported: they always raise
        `NotImplementedError`. Use `nnx.vjp` / `nnx.jvp` (Tree Mode).

    References:
        - Patterns in the catalogue: [H8](../catalogue.md#h8)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX706"
    visits_nnx_calls_only = True
    facts_type = GraphOnlyAPIFacts
    fixes = ("pin",)
    symbol = "graph-only-api"
    kind = "raises"
    catalogue = ("H8",)
    no_reproduction_reason = (
        "the flagged APIs exist only for graph mode (`nnx.cached_partial`) or pin it (`nnx.compat.vjp`/`jvp`); "
        "the Tree Mode reference runtime implements Tree Mode only and has neither graph-only APIs nor "
        "`nnx.compat`, so no program with names both implementations provide contains the call (the error is "
        "the API's own mode check)"
    )
    message = "`{api}(...)`: {error}"
    help = "{instead}"
    VALID = [
        Valid(
            "tree-mode-apis",
            """
            from flax import nnx

            def run(m, x):
                step = nnx.jit(lambda m, x: m(x))
                cached = nnx.compat.cached_partial(step, m)
                y = nnx.vjp(lambda m, x: m(x), m, x)
                z = nnx.jvp(lambda m: m(x), (m,), (m,))
                return step(m, x), cached(x), y, z
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "cached-partial-and-compat-vjp",
            """
            from flax import nnx

            def run(m, x):
                step = nnx.jit(lambda m, x: m(x))
                cached = nnx.cached_partial(step, m)  # NNX706
                y = nnx.compat.vjp(lambda m, x: m(x), m, x)  # NNX706
                return cached(x), y
            """,
            tree_mode=raises("ValueError", "cached_partial is a graph-mode-only API"),
        ),
    ]

    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        if call is None:
            return
        if call.qualified_name in flax_table.UNSUPPORTED_COMPAT:
            self.report(node, api=f"nnx.compat.{call.name}",
                        error="NotImplementedError in every mode (graph-mode vjp/jvp with graph updates is "
                              "not supported)",
                        instead=f"Use `nnx.{call.name}` (Tree Mode) instead")
        elif call.name == "cached_partial" and not self.context.keeps_graph_mode(call):
            self.report(node, api="nnx.cached_partial",
                        error="Tree Mode raises ValueError (cached_partial is a graph-mode-only API)",
                        instead="Call the transformed function with the object directly, or keep graph mode "
                                "with `nnx.compat.cached_partial`", pin=self._cached_partial_pin(call))

    def _cached_partial_pin(self, call) -> list[dict]:
        """The call and the transform of the function it caches: flax's graph-mode
        ``cached_partial`` needs a graph-mode transform inside."""
        inner = transform_resolver(self.context).transformed_callable(call.args[0]) if call.args else None
        return pin_sites_in(self.context, call, entry_pin_target(inner))
