"""NNX309 ``stale-loop-carry``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from nnx_lint.api import (
    PIN,
    Facts,
    Invalid,
    Reproduction,
    Rule,
    Valid,
    differs,
    fact_index,
    flax_table,
    object_flow,
    pin_sites_in,
    programs,
)


@dataclass(frozen=True, kw_only=True)
class StaleLoopCarryFacts(Facts):
    """What ``NNX309`` reports (the diagnostic's ``facts``, in this order)."""

    transform: str
    stale: str
    attribute: str
    write_line: int
    loop_line: int
    pin: list


class StaleLoopCarry(Rule):
    """A reference to a loop's carry, taken before the loop, read after it.

    What it does:
        Flags a read, after `nnx.fori_loop`, `nnx.while_loop` or a call of an `nnx.scan`
        function, of a name or attribute that still holds the carry from before the loop
        (the input when the loop's output is ignored, a submodule taken before the loop, an
        owner's attribute), when the loop body stores a non-Variable attribute (a plain array,
        a number) on that object or on a part of it. The object-flow model answers which
        objects each read holds: a read of the loop's result stays silent.

    Why is this bad?:
        Graph-mode loops update the input objects in place and return them. Tree Mode loops
        return fresh objects: Variables come back as themselves (their values are written
        back in both modes), but a non-Variable attribute the body stores lands only on the
        fresh copy. A reference taken before the loop silently keeps the old value. Read the
        loop's result (`model = nnx.fori_loop(..., model)` and no reference taken before),
        or keep that state in an `nnx.Variable`.

    References:
        - Patterns in the catalogue: [C10](../catalogue.md#c10)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX309"
    facts_type = StaleLoopCarryFacts
    fixes = (PIN,)
    symbol = "stale-loop-carry"
    kind = "silent"
    catalogue = ("C10",)
    message = (
        "`{stale}` predates `nnx.{transform}` (line {loop_line}): in Tree Mode the body's write of "
        "`{attribute}` silently misses it"
    )
    help = (
        "Tree Mode returns a fresh object from the loop, and the write of `{attribute}` (line {write_line}) "
        "reaches only that copy. Read the loop's result instead of a reference taken before it (`model = nnx.{transform}(..., "
        "model)`, then `model.{attribute}`), or keep `{attribute}` in an `nnx.Variable`, whose value flax "
        "writes back in both modes"
    )
    #: Audit mode (``--strict``): the stale object or the written one comes from outside the analysis.
    unproven_message = (
        "`{value}` still holds the carry from before `nnx.{transform}`, whose body writes an attribute on "
        "it that may not be a Variable ({reason})"
    )

    VALID = [
        Valid(
            "loop-output-used",
            """
            import jax
            import jax.numpy as jnp
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.zeros(()))
                    self.total = jnp.zeros(())

            def body(i, m):
                m.w[...] += 1.0
                m.total = m.total + 1.0
                return m

            def run():
                model = Model()
                model = nnx.fori_loop(0, 3, body, model)
                kept = nnx.compat.fori_loop(0, 3, body, Model())
                count = jax.lax.fori_loop(0, 3, lambda i, v: v + 1, jnp.zeros(()))
                return model.total, kept.total, count
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "stale-reference-after-the-loop",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Stats(nnx.Module):
                def __init__(self):
                    self.total = jnp.zeros(())

            class Model(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.zeros(()))
                    self.stats = Stats()

            def body(i, m):
                m.w[...] += 1.0
                m.stats.total = m.stats.total + 1.0
                return m

            def run():
                model = Model()
                stats = model.stats
                model = nnx.fori_loop(0, 3, body, model)
                return stats.total  # NNX309
            """,
            tree_mode=differs("the stale reference keeps 0.0 (graph mode: 3.0)"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """A Module with a plain array attribute the loop body adds to, run through the flagged
        loop (``fori_loop``, ``while_loop`` or an ``nnx.scan`` function) with the result ignored;
        the observation is the attribute read on the input afterwards. The control reads it on the
        loop's result.

        Not traced: the observation is a number read after the loop."""
        attribute = facts.attribute if programs.is_identifier(facts.attribute or "") else "total"
        model = programs.filled("""
            class Model(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.zeros(()))
                    self.ATTR = jnp.zeros(())


            def body(m):
                m.w[...] += 1.0
                m.ATTR = m.ATTR + 1.0
                return m


            model = Model()
        """, {"ATTR": attribute})
        if facts.transform == "while_loop":
            loop = "result = nnx.while_loop(lambda m: m.w[...] < 3.0, body, model)\n"
        elif facts.transform == "scan":
            loop = ("result, _ = nnx.scan(lambda m, x: (body(m), x), in_axes=(nnx.Carry, 0), "
                    "out_axes=(nnx.Carry, 0))(model, jnp.arange(3.0))\n")
        else:
            loop = "result = nnx.fori_loop(0, 3, lambda i, m: body(m), model)\n"
        main = model + loop + programs.filled("return float(model.ATTR)\n", {"ATTR": attribute})
        control = model + loop + programs.filled("return float(result.ATTR)\n", {"ATTR": attribute})
        return Reproduction(main, expect_tree=0.0, expect_graph=3.0, control=control, traced=False)

    def visit_module(self, node: nodes.Module) -> None:
        loops = [call for call in fact_index(self.context).calls if self._changed_loop(call)]
        if not loops:
            return  # no loop here that the flip changes: the model is not built for nothing
        # The model is asked about the code that can reach these loops, not the whole file.
        with object_flow.object_model(self.context).focused_on(*loops) as model:
            self._report_stale_reads(node, model)

    def _report_stale_reads(self, node: nodes.Module, model) -> None:
        reported: set[int] = set()
        for loop in object_flow.loop_records(model):
            call = self._loop_call(loop)
            if call is None or id(loop.node) in reported or loop.node.root() is not node:
                continue
            if call.name not in flax_table.CARRY_TRANSFORMS or call.is_compat \
                    or not self.context.flip_changes(call):
                continue
            reads = object_flow.stale_carry_reads(model, loop)
            if not reads:
                continue
            reported.add(id(loop.node))
            read = reads[0]
            related = [(loop.node, f"`nnx.{call.name}` returns a fresh object here in Tree Mode"),
                       (read.write, f"the body writes `{read.attribute}` on the carry here")]
            if not read.proven:
                written = read.write.expr.as_string() if isinstance(read.write, nodes.AssignAttr) else "the carry"
                reason = object_flow.unknown_link(read.holder, written) or "the written object was not seen made"
                self.report_unproven(read.expression, value=programs.clipped(read.expression.as_string()),
                                     reason=reason, transform=call.name, related=related)
                continue
            self.report(read.expression, transform=call.name, stale=programs.clipped(read.expression.as_string()),
                        attribute=read.attribute, write_line=read.write.lineno, loop_line=loop.node.lineno,
                        pin=pin_sites_in(self.context, call), related=related)

    def _changed_loop(self, node: nodes.Call) -> bool:
        call = self.context.nnx_call(node)
        return call is not None and call.name in flax_table.CARRY_TRANSFORMS and not call.is_compat \
            and self.context.flip_changes(call)

    def _loop_call(self, loop):
        """The ``nnx.*`` call that makes the loop (``nnx.fori_loop(...)``, ``nnx.scan(...)``)."""
        site = loop.transform_site
        call = self.context.nnx_call(site)
        if call is None and isinstance(site, nodes.Call):
            call = self.context.nnx_call(site.func)
        return call
