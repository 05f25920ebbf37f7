"""NNX501 ``custom-vjp-old-cotangent``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from checkers.custom_vjp.reproduction import other_arguments, tangent_arguments, tree_bwd, vjp_program
from nnx_lint.api import (
    DISPLAY_ONLY,
    PIN,
    Facts,
    Invalid,
    Reproduction,
    Rewrite,
    RewriteSite,
    Rule,
    Valid,
    programs,
    raises,
    custom_vjps,
)


@dataclass(frozen=True, kw_only=True)
class CustomVjpOldCotangentFacts(Facts):
    """What ``NNX501`` reports (the diagnostic's ``facts``, in this order)."""

    shape: str
    cotangent: str
    destructuring: str
    confidence: str
    primal: str
    fwd: str | None
    bwd: str | None
    primal_args: list
    nondiff_argnums: list | None
    defvjp_line: int
    pin: list


def new_backward_advice(site: RewriteSite):
    """The Tree Mode backward receives only the output cotangent; how the body used the input
    updates decides the rewrite, so the fix is display-only."""
    return site.todo(f"`{site.facts.cotangent}` is the output cotangent only in Tree Mode: use it directly and "
                     "return tangents of the inputs' own types")


NEW_CUSTOM_VJP_BACKWARD = Rewrite(
    "new-custom-vjp-backward", DISPLAY_ONLY,
    "a `# TODO(nnx-lint)` comment: use the cotangent directly and return tangents of the inputs' own types (the "
    "body decides how)",
    new_backward_advice,
)


class CustomVjpOldCotangent(Rule):
    """An `nnx.custom_vjp` backward function destructures its cotangent in the graph-mode form.

    What it does:
        For `f.defvjp(fwd, bwd)` on an `nnx.custom_vjp` function `f`, flags assignments in
        `bwd` that unpack the cotangent `g` as `(input_updates_g, out_g)`:
        `(m_updates_g,), out_g = g`, or `input_updates_g, out_g = g` when `f` returns a single
        value (not a pair). A bwd that checks `isinstance(g, tuple)` first handles both
        protocols and is not flagged.

    Why is this bad?:
        In Tree Mode `nnx.custom_vjp` uses the `jax.custom_vjp` protocol: `g` is only the
        output cotangent. Unpacking it raises (`TypeError: iteration over a 0-d array` for a
        scalar output), or, for an output of a matching shape, silently splits an array.
        Write the bwd like a `jax.custom_vjp` one: `def bwd(res, g)` with `g` the output
        cotangent, returning tangents of the inputs' own types; declare a keyword-only
        `updates_g` parameter if it needs the cotangents of Variable updates.

    References:
        - [Tree Mode in brief](../tree-mode.md#custom-vjp) — patterns [E1](../catalogue.md#e1)
        - [FLIP 5310, "nnx.custom_vjp"](https://github.com/google/flax/issues/5310)
    """

    code = "NNX501"
    facts_type = CustomVjpOldCotangentFacts
    fixes = (PIN, NEW_CUSTOM_VJP_BACKWARD)
    symbol = "custom-vjp-old-cotangent"
    kind = "raises"
    catalogue = ("E1",)
    message = (
        "`{shape}`: in Tree Mode `{cotangent}` of `nnx.custom_vjp` `{primal}` is only the output "
        "cotangent, so this raises"
    )
    help = (
        "Graph mode passed `(input_updates_g, out_g)`; Tree Mode follows the jax.custom_vjp protocol, "
        "so unpacking raises or splits the array. Use `{cotangent}` directly and return tangents of "
        "the inputs' own types"
    )

    def visit_call(self, node: nodes.Call) -> None:
        registration = custom_vjps.custom_vjp_analysis(self.context).registration(node)
        if registration is None or registration.bwd is None:
            return
        for assign, shape, confidence in custom_vjps.old_destructures(registration.bwd, registration.primal):
            self.report(
                assign,
                shape=shape,
                cotangent=custom_vjps.cotangent_parameter(registration.bwd).name,
                destructuring=assign.targets[0].as_string(),
                confidence=confidence,
                related=registration.related(),
                **registration.facts(),
            )

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """r40: an ``nnx.custom_vjp`` with a scalar output whose bwd unpacks ``g`` the graph-mode way.

        Variants by facts: the destructuring (nested ``(m_updates_g, ...), out_g = g`` or
        flat ``input_updates_g, out_g = g``) and the primal's arguments (a Module, then
        float arrays for the others). The graph-mode bwd returns ``State`` tangents, so it
        runs in graph mode. Tree Mode: ``g`` is the 0-d output cotangent, unpacking it
        raises ``TypeError: iteration over a 0-d array`` (``vjp-structure``). Control: the
        FLIP bwd (its Tree Mode rewrite), ``g`` used directly and a Module-typed tangent.
        """
        others = other_arguments(facts, 0)
        nested = str(facts.destructuring or "").startswith("((")
        if nested:
            unpack = programs.assign(programs.items(programs.items("m_updates_g", *["_"] * len(others)), "out_g"), "g")
        else:
            unpack = "input_updates_g, out_g = g"
        tangents = tangent_arguments(others, 0)
        body = vjp_program(others, programs.filled("""
            def f_bwd(res, g):
                UNPACK
                cos_x, m = res
                m_g = jax.tree.map(jnp.zeros_like, nnx.state(m))
                m_g['x'][...] = cos_x * out_g
                return TANGENTS
        """, expressions={"TANGENTS": tangents}, statements={"UNPACK": unpack}))
        return Reproduction(body, expect_error="vjp-structure", control=vjp_program(others, tree_bwd(tangents)))

    VALID = [
        Valid(
            "r40-fix",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Foo(nnx.Module):
                def __init__(self):
                    self.x = nnx.Param(jnp.array(1.0)); self.y = nnx.Param(jnp.array(2.0))

            @nnx.custom_vjp(graph=False, graph_updates=False)
            def f(m):
                return jnp.sin(m.x) * m.y

            def f_fwd(m):
                return f(m), (jnp.cos(m.x), jnp.sin(m.x), m)

            def f_bwd(res, g):
                cos_x, sin_x, m = res
                m_g = nnx.clone(m)
                m_g.x[...] = cos_x * g * m.y
                m_g.y[...] = sin_x * g
                return (m_g,)

            f.defvjp(f_fwd, f_bwd)
            """,
        ),
        Valid(
            "pair-output-and-compat",
            """
            import jax.numpy as jnp
            from flax import nnx

            @nnx.custom_vjp
            def pair(m, x):
                return m.w * x, x

            def pair_fwd(m, x):
                return pair(m, x), (m, x)

            def pair_bwd(res, g):
                y_g, x_out_g = g            # the primal returns a pair
                m, x = res
                m_g = nnx.clone(m)
                m_g.w[...] = y_g * x
                return m_g, y_g * m.w + x_out_g

            pair.defvjp(pair_fwd, pair_bwd)

            @nnx.compat.custom_vjp
            def old(m):
                return m.w * 2.0

            def old_bwd(res, g):
                (m_updates_g,), out_g = g
                return (m_updates_g,)

            old.defvjp(lambda m: (old(m), None), old_bwd)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "r40-old-bwd",
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
                (m_updates_g,), out_g = g  # NNX501
                cos_x, sin_x, m = res
                m_g = nnx.clone(m_updates_g)
                m_g['x'][...] = cos_x * out_g * m.y
                m_g['y'][...] = sin_x * out_g
                return (m_g,)

            f.defvjp(f_fwd, f_bwd)
            """,
            tree_mode=raises("TypeError", "iteration over a 0-d array"),
        ),
        Invalid(
            "docstring-form",
            """
            import jax.numpy as jnp
            from flax import nnx

            @nnx.custom_vjp
            def f(m: nnx.Module, x):
                return jnp.sum(m.kernel[...] @ x)

            def f_fwd(m, x):
                return f(m, x), (m, x)

            def f_bwd(res, g):
                input_updates_g, out_g = g  # NNX501
                (m_updates_g, _) = input_updates_g
                return m_updates_g, None

            f.defvjp(f_fwd, f_bwd)
            """,
            tree_mode=raises("TypeError", "iteration over a 0-d array"),
        ),
    ]
