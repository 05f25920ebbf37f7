"""NNX701 ``split-rngs-context-manager``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

from astroid import nodes

from checkers.api_semantics.reproduction import FORK_NOTE
from nnx_lint.api import (
    Facts,
    Invalid,
    Reproduction,
    Rule,
    Valid,
    bound_values,
    fact_index,
    flax_table,
    pin_sites_in,
    raises,
)


def _code(text: str) -> str:
    return textwrap.dedent(text).strip("\n") + "\n"


#: A vmapped factory that needs a split ``Rngs`` (r70).
_CREATE = _code("""
    @nnx.vmap(in_axes=0, out_axes=0)
    def create(rngs):
        return nnx.Linear(2, 2, rngs=rngs)


    rngs = nnx.Rngs(0)
""")


@dataclass(frozen=True, kw_only=True)
class SplitRngsContextManagerFacts(Facts):
    """What ``NNX701`` reports (the diagnostic's ``facts``, in this order)."""

    usage: str
    api: str
    error: str
    form: str
    pin: list


class SplitRngsContextManager(Rule):
    """`nnx.split_rngs` / `nnx.fork_rngs` used as a context manager, or `nnx.restore_rngs`.

    What it does:
        Flags `with nnx.split_rngs(rngs, ...):` / `with nnx.fork_rngs(rngs, ...):` and
        `nnx.restore_rngs(backups)` on the result of such a call, unless graph mode is kept
        (`nnx.compat.split_rngs`, `graph=True, graph_updates=True`). The decorator form
        `@nnx.split_rngs(splits=n)` is fine.

    Why is this bad?:
        In graph mode these calls split the `Rngs` in place and return backups to restore.
        In Tree Mode they return a *new* split `Rngs` and leave the argument alone: `with`
        raises `TypeError: 'Rngs' object does not support the context manager protocol`,
        and `restore_rngs` raises `AttributeError`. Use the returned value:
        `create(nnx.split_rngs(rngs, splits=4))`, `rngs.split(4)` or `nnx.with_rngs`.

    References:
        - Patterns in the catalogue: [H1](../catalogue.md#h1)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX701"
    visits_nnx_calls_only = True  # `nnx.restore_rngs(...)` is a call of the nnx API
    facts_type = SplitRngsContextManagerFacts
    fixes = ("pin",)
    symbol = "split-rngs-context-manager"
    kind = "raises"
    catalogue = ("H1",)
    message = "{usage}: Tree Mode raises ({error})"
    help = (
        "Tree Mode `nnx.{api}` returns a new split `Rngs` instead of splitting in place. Use the "
        "returned value, e.g. `f(nnx.{api}(rngs, splits=n))` or `rngs.split(n)`"
    )
    VALID = [
        Valid(
            "functional-forms",
            """
            from flax import nnx

            @nnx.vmap(in_axes=0, out_axes=0)
            def create(rngs):
                return nnx.Linear(2, 2, rngs=rngs)

            def run():
                a = create(nnx.split_rngs(nnx.Rngs(0), splits=4))
                b = create(nnx.with_rngs(nnx.Rngs(0), split=4))
                c = nnx.split_rngs(splits=4)(create)(nnx.Rngs(0))
                d = create(nnx.Rngs(0).split(4))
                rngs = nnx.Rngs(0)
                with nnx.compat.split_rngs(rngs, splits=4):
                    e = create(rngs)
                return a, b, c, d, e
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "with-split-rngs",
            """
            from flax import nnx

            @nnx.vmap(in_axes=0, out_axes=0)
            def create(rngs):
                return nnx.Linear(2, 2, rngs=rngs)

            def run():
                rngs = nnx.Rngs(0)
                with nnx.split_rngs(rngs, splits=4):  # NNX701
                    model = create(rngs)
                backups = nnx.fork_rngs(rngs)
                nnx.restore_rngs(backups)  # NNX701
                return model
            """,
            tree_mode=raises("TypeError", "does not support the context manager protocol"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """``with nnx.split_rngs(rngs, splits=4):`` around a vmapped init (Tree Mode: the
        result is an ``Rngs``, not a context manager). For ``restore_rngs``, the code between
        the split and the restore relies on the in-place split: the vmapped init gets the
        unsplit ``rngs`` (Tree Mode: a rank error). The control passes the returned value on."""
        note = FORK_NOTE if facts.api == "fork_rngs" else ""
        if facts.form == "restore_rngs":
            main = _CREATE + note + _code("""
                backups = nnx.split_rngs(rngs, splits=4)  # graph mode: splits `rngs` in place
                model = create(rngs)  # ... then `nnx.restore_rngs(backups)`
                return list(model.kernel.shape)
            """)
            error = "other:ValueError"
        else:
            main = _CREATE + note + _code("""
                with nnx.split_rngs(rngs, splits=4):
                    model = create(rngs)
                return list(model.kernel.shape)
            """)
            error = "not-context-manager"
        control = _CREATE + "return list(create(nnx.split_rngs(rngs, splits=4)).kernel.shape)\n"
        return Reproduction(main, expect_error=error, control=control)

    def visit_with(self, node: nodes.With) -> None:
        for expression, _ in node.items:
            call = fact_index(self.context).rng_splitter(expression)
            if call is not None and not self.context.keeps_graph_mode(call):
                self.report(expression, usage=f"`with nnx.{call.name}(...)`", api=call.name,
                            error="TypeError: 'Rngs' object does not support the context manager protocol",
                            form="with", pin=pin_sites_in(self.context, call))

    def visit_call(self, node: nodes.Call) -> None:
        if self.context.qualified_name(node.func) != flax_table.NNX_RESTORE_RNGS or not node.args:
            return
        argument = node.args[0]
        if not isinstance(argument, nodes.Name):
            return
        values = bound_values(argument)
        splitters = [fact_index(self.context).rng_splitter(v) for v in values]
        if values and all(s is not None and not self.context.keeps_graph_mode(s) for s in splitters):
            self.report(node, usage="`nnx.restore_rngs(...)` on the result of "
                        f"`nnx.{splitters[0].name}`", api=splitters[0].name,
                        error="AttributeError: it is an Rngs, not backups", form="restore_rngs",
                        pin=pin_sites_in(self.context, *splitters))
