"""NNX702 ``split-rngs-result-discarded``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from checkers.api_semantics.reproduction import FORK_NOTE
from nnx_lint.api import (
    Facts,
    Invalid,
    PIN,
    Reproduction,
    Rewrite,
    RewriteSite,
    Rule,
    UNSAFE,
    Valid,
    differs,
    fact_index,
    pin_sites_in,
)


@dataclass(frozen=True, kw_only=True)
class SplitRngsResultDiscardedFacts(Facts):
    """What ``NNX702`` reports (the diagnostic's ``facts``, in this order)."""

    api: str
    rngs: str
    pin: list


def keep_result(site: RewriteSite):
    """``nnx.split_rngs(rngs, ...)`` as a statement becomes ``rngs = nnx.split_rngs(rngs, ...)``.

    Only when the first argument is a name or attribute chain (``rngs``, ``self.rngs``), so
    assigning to it is the same expression.
    """
    cst, index = site.cst, site.index
    call = site.node_at_diagnostic()
    if not isinstance(call, cst.Call) or not isinstance(index.parent(call), cst.Expr) or not call.args:
        return None
    first = call.args[0]
    if first.keyword is not None or first.star or not site.is_name_chain(first.value) or call.lpar:
        return None
    target = index.code(first.value)
    start = index.start_offset(call)
    return site.unsafe(f"Keep the result: `{target} = nnx.{site.facts.api}({target}, ...)`",
                       index.edit(start, start, f"{target} = "))


KEEP_SPLIT_RNGS_RESULT = Rewrite(
    "keep-split-rngs-result", UNSAFE,
    "assigns the result back: `nnx.split_rngs(rngs, ...)` becomes `rngs = nnx.split_rngs(rngs, ...)` (when the "
    "argument is a name or attribute)",
    keep_result,
)


class SplitRngsResultDiscarded(Rule):
    """`nnx.split_rngs(rngs, ...)` / `nnx.fork_rngs(rngs, ...)` with the result discarded.

    What it does:
        Flags a call `nnx.split_rngs(rngs, ...)` or `nnx.fork_rngs(rngs, ...)` used as a
        statement (its result unused), unless graph mode is kept.

    Why is this bad?:
        Graph mode splits `rngs` in place; Tree Mode returns a new split `Rngs` and leaves
        `rngs` unsplit (only its counter advances). Nothing raises: the code that follows
        silently uses unsplit keys (identical layers in a `vmap`ped init, a wrong key
        shape). Use the returned value.

    References:
        - Patterns in the catalogue: [H1](../catalogue.md#h1)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX702"
    facts_type = SplitRngsResultDiscardedFacts
    fixes = (PIN, KEEP_SPLIT_RNGS_RESULT)
    symbol = "split-rngs-result-discarded"
    kind = "silent"
    catalogue = ("H1",)
    message = "The result of `nnx.{api}(...)` is discarded: Tree Mode silently leaves `{rngs}` unsplit"
    help = (
        "In Tree Mode `nnx.{api}` returns a new split `Rngs`. Use the returned value (`{rngs} = "
        "nnx.{api}({rngs}, ...)` or pass it on)"
    )
    VALID = [
        Valid(
            "result-used",
            """
            from flax import nnx

            def run(rngs):
                split = nnx.split_rngs(rngs, splits=4)
                nnx.compat.split_rngs(rngs, splits=4)
                nnx.split_rngs(rngs, splits=4, graph=True, graph_updates=True)
                return split
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "discarded",
            """
            from flax import nnx

            def run(rngs, create):
                nnx.split_rngs(rngs, splits=4)  # NNX702
                return create(rngs)
            """,
            tree_mode=differs("rngs.params.key keeps shape () instead of (4,)"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """The split with its result discarded; the observation is the shape of the
        ``params`` key of the same ``rngs`` afterwards. The control keeps the result."""
        note = FORK_NOTE if facts.api == "fork_rngs" else ""
        main = "rngs = nnx.Rngs(0)\n" + note + "nnx.split_rngs(rngs, splits=4)  # result discarded\n" + \
            "return list(rngs.params.key.shape)\n"
        control = "rngs = nnx.Rngs(0)\nrngs = nnx.split_rngs(rngs, splits=4)\nreturn list(rngs.params.key.shape)\n"
        return Reproduction(main, expect_tree=[], expect_graph=[4], control=control)

    def visit_expr(self, node: nodes.Expr) -> None:
        call = fact_index(self.context).rng_splitter(node.value)
        if call is None or not call.args or self.context.keeps_graph_mode(call):
            return
        self.report(node.value, api=call.name, rngs=call.args[0].as_string(), pin=pin_sites_in(self.context, call))
