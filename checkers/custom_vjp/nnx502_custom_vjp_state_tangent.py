"""NNX502 ``custom-vjp-state-tangent``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from checkers.custom_vjp.reproduction import other_arguments, tangent_arguments, tree_bwd, vjp_program
from nnx_lint.api import Facts, Invalid, Reproduction, Rule, Valid, flax_table, programs, raises, custom_vjps


@dataclass(frozen=True, kw_only=True)
class CustomVjpStateTangentFacts(Facts):
    """What ``NNX502`` reports (the diagnostic's ``facts``, in this order)."""

    tangent: str
    argument: str
    tangent_index: int
    module_evidence: str
    confidence: str
    primal: str
    fwd: str | None
    bwd: str | None
    primal_args: list
    nondiff_argnums: list | None
    defvjp_line: int
    pin: list


class CustomVjpStateTangent(Rule):
    """An `nnx.custom_vjp` backward function returns an `nnx.State` tangent for a Module input.

    What it does:
        For `f.defvjp(fwd, bwd)` on an `nnx.custom_vjp` function `f`, flags tangents returned
        by `bwd`, in the position of a Module argument of `f`, that are `nnx.State`s:
        `nnx.state(...)`, `nnx.clone(nnx.state(...))`, `nnx.State(...)`, an `nnx.split(...)`
        state, a State taken from the old protocol's `input_updates_g`, or a value the bwd
        indexes with strings (`m_g['x']`). The argument is a Module by its annotation or,
        heuristically, because `f` reads its attributes or calls it.

    Why is this bad?:
        Tree Mode follows `jax.custom_vjp`: the tangent must have the input's pytree
        structure, so a `State` for a Module input raises `TypeError: Custom VJP bwd rule
        must produce an output with the same container (pytree) structure as the args
        tuple of the primal function`. Build the tangent as the Module's own type instead:
        `m_g = nnx.clone(m)` (or `jax.tree.map(jnp.zeros_like, m)`), then set
        `m_g.x[...] = ...` and return `(m_g,)`.

    References:
        - [Tree Mode in brief](../tree-mode.md#custom-vjp) — patterns [E2](../catalogue.md#e2)
        - [FLIP 5310, "nnx.custom_vjp"](https://github.com/google/flax/issues/5310)
    """

    code = "NNX502"
    facts_type = CustomVjpStateTangentFacts
    fixes = ("pin",)
    symbol = "custom-vjp-state-tangent"
    kind = "raises"
    catalogue = ("E2",)
    message = (
        "`{bwd}` returns a State tangent for the Module argument `{argument}` of `nnx.custom_vjp` "
        "`{primal}`: Tree Mode raises"
    )
    help = (
        "Tree Mode (jax.custom_vjp protocol) needs a tangent of the argument's own type, not "
        "`{tangent}`. Build it as `m_g = nnx.clone({argument})`, set `m_g.<attr>[...] = ...`"
    )

    def visit_call(self, node: nodes.Call) -> None:
        analysis = custom_vjps.custom_vjp_analysis(self.context)
        registration = analysis.registration(node)
        if registration is None or registration.bwd is None:
            return
        diff = registration.diff_parameters()
        if diff is None:
            return
        bwd = registration.bwd
        cotangent = custom_vjps.cotangent_parameter(bwd)
        old = custom_vjps.old_parts(bwd, registration.primal)
        for statement in custom_vjps.own_body_nodes(bwd, nodes.Return):
            if not isinstance(statement.value, nodes.Tuple):
                continue
            if cotangent is not None and custom_vjps.guarded_by_protocol_check(statement, cotangent.name, bwd):
                continue
            for index, parameter in diff:
                if index >= len(statement.value.elts):
                    continue
                element = statement.value.elts[index]
                tangent = analysis.state_tangent(element, bwd, old)
                if tangent is None:
                    continue
                evidence = analysis.is_module_parameter(registration, parameter)
                if evidence is None:
                    continue
                self.report(
                    element,
                    tangent=tangent,
                    argument=parameter.name,
                    tangent_index=index,
                    module_evidence=evidence,
                    confidence="static" if evidence == "annotation" else "heuristic",
                    related=registration.related(),
                    **registration.facts(),
                )

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """r41: a bwd that reads ``g`` either way but returns an ``nnx.State`` tangent for a Module.

        Variants by facts: how the tangent is a State (``tangent``: ``nnx.clone(nnx.state(m))``,
        ``nnx.state(m)`` under ``jax.tree.map``, an ``nnx.split`` state; a State taken from
        the old protocol's ``input_updates_g`` or one indexed with strings is built with
        ``nnx.state`` here, since the old unpacking itself already raises in Tree Mode,
        which is NNX501's finding), the Module's position among the primal's arguments
        (``tangent_index``) and the other arguments (float arrays). Tree Mode: ``TypeError:
        Custom VJP bwd rule must produce an output with the same container (pytree)
        structure`` (``vjp-structure``); graph mode accepts the State. Control: the FLIP
        bwd returning a Module-typed tangent (its Tree Mode rewrite).
        """
        index = (programs.bounded_index(facts.tangent_index, "the tangent index")
                 if isinstance(facts.tangent_index, int) else 0)
        others = other_arguments(facts, index)
        tangent = str(facts.tangent or "")
        if "split" in tangent:
            build = "_, m_g = nnx.split(m)\nm_g = jax.tree.map(jnp.zeros_like, m_g)"
        elif tangent.startswith(flax_table.TREE_MAP):
            build = "m_g = jax.tree.map(jnp.zeros_like, nnx.state(m))"
        else:
            build = "m_g = nnx.clone(nnx.state(m))"
        tangents = tangent_arguments(others, index)
        # the bwd reads g by either protocol
        body = vjp_program(others, programs.filled("""
            def f_bwd(res, g):
                out_g = g[1] if isinstance(g, tuple) else g
                cos_x, m = res
                BUILD
                m_g['x'][...] = cos_x * out_g
                return TANGENTS
        """, expressions={"TANGENTS": tangents}, statements={"BUILD": build}), index)
        control = vjp_program(others, tree_bwd(tangents), index)
        return Reproduction(body, expect_error="vjp-structure", control=control)

    VALID = [
        Valid(
            "module-typed-tangent",
            """
            import jax
            import jax.numpy as jnp
            from flax import nnx

            class Foo(nnx.Module):
                def __init__(self):
                    self.x = nnx.Param(jnp.array(1.0))

            @nnx.custom_vjp
            def f(m):
                return jnp.sin(m.x[...])

            def f_fwd(m):
                return f(m), (jnp.cos(m.x[...]), m)

            def f_bwd(res, g):
                cos_x, m = res
                m_g = jax.tree.map(jnp.zeros_like, m)
                m_g.x[...] = cos_x * g
                return (m_g,)

            f.defvjp(f_fwd, f_bwd)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "r41-state-tangent",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Foo(nnx.Module):
                def __init__(self):
                    self.x = nnx.Param(jnp.array(1.0)); self.y = nnx.Param(jnp.array(2.0))

            @nnx.custom_vjp
            def f(m):
                return jnp.sin(m.x) * m.y

            def f_fwd(m):
                return f(m), (jnp.cos(m.x), jnp.sin(m.x), m)

            def f_bwd(res, g):
                out_g = g[1] if isinstance(g, tuple) else g
                cos_x, sin_x, m = res
                m_g = nnx.clone(nnx.state(m))
                m_g['x'][...] = cos_x * out_g * m.y
                m_g['y'][...] = sin_x * out_g
                return (m_g,)  # NNX502

            f.defvjp(f_fwd, f_bwd)
            """,
            tree_mode=raises("TypeError", "Custom VJP bwd rule must produce an output with the same container"),
        ),
    ]
