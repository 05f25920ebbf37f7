"""NNX202 ``diff-state-prefix``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from checkers.prefix_filters.base import PrefixFilterRule
from checkers.prefix_filters.reproduction import dedented
from nnx_lint.api import Facts, Invalid, Reproduction, Valid, flax_table, programs, raises


class DiffStatePrefix(PrefixFilterRule):
    """`nnx.DiffState` in `grad` / `value_and_grad` `argnums` or `custom_vjp` `nondiff_argnums`.

    What it does:
        Flags `nnx.DiffState(...)` reaching `argnums` of `nnx.grad` / `nnx.value_and_grad`
        or `nondiff_argnums` of `nnx.custom_vjp`, and `DiffState` objects built where no
        transform in the file keeps graph mode.

    Why is this bad?:
        Tree Mode has no prefix filters: creating the transform raises `ValueError: argnums
        cannot contain DiffState objects when graph=False or graph_updates=False`. The
        recipe that replaces it differentiates a state group explicitly: split by the
        filter and pass the groups as separate arguments.

    References:
        - [Tree Mode in brief: prefix filters](../tree-mode.md#prefix-filters) — patterns [B2](../catalogue.md#b2), [C3](../catalogue.md#c3)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX202"
    fixes = ("pin",)
    symbol = "diff-state-prefix"
    kind = "raises"
    catalogue = ("B2", "C3")
    filter_name = "DiffState"
    message = (
        "`nnx.DiffState` in `{argument}` of `nnx.{transform}`: Tree Mode raises ValueError (prefix "
        "filters are rejected)"
    )
    help = (
        "Tree Mode rejects prefix filters when the transform is created. Split by the filter "
        "(`graphdef, diff, rest = nnx.split(model, filter, ...)`), differentiate `diff` (argnums=0) "
        "and `nnx.merge` inside the loss, or keep graph mode with `nnx.compat.{transform}`"
    )
    unused_message = (
        "`nnx.DiffState` is a graph-mode-only prefix filter: Tree Mode `grad`/`custom_vjp` raise ValueError on it"
    )
    unused_help = "Split by the filter and differentiate that state group instead"
    VALID = [
        Valid(
            "split-then-grad",
            """
            import jax.numpy as jnp
            from flax import nnx

            def kernel_grads(model, x):
                graphdef, diff, rest = nnx.split(model, nnx.PathContains('kernel'), ...)

                def loss(diff, rest, x):
                    return jnp.sum(nnx.merge(graphdef, diff, rest)(x))

                return nnx.grad(loss)(diff, rest, x)
            """,
        ),
        Valid(
            "compat-grad",
            """
            from flax import nnx

            grad_fn = nnx.compat.grad(lambda m: m.loss(), argnums=nnx.DiffState(0, nnx.Param))
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "grad-argnums",
            """
            import jax.numpy as jnp
            from flax import nnx

            only_kernel = nnx.DiffState(0, nnx.PathContains('kernel'))
            grad_fn = nnx.grad(lambda m, x: jnp.sum(m(x)), argnums=only_kernel)  # NNX202
            """,
            tree_mode=raises("ValueError", "cannot contain `DiffState` objects"),
        ),
        Invalid(
            "custom-vjp-nondiff",
            """
            from flax import nnx

            @nnx.custom_vjp(nondiff_argnums=(nnx.DiffState(1, nnx.Param),))  # NNX202
            def f(m, x):
                return m(x)
            """,
            tree_mode=raises("ValueError", "cannot contain `DiffState` objects"),
        ),
    ]


    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """A Linear differentiated (or custom_vjp'd) with a DiffState prefix."""
        if facts.transform == "custom_vjp":
            use = """
            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            f = nnx.custom_vjp(lambda m, x: jnp.sum(m(x)), nondiff_argnums=(nnx.DiffState(1, nnx.Param),))
            return "created"
            """
        else:
            transform = facts.transform if facts.transform in flax_table.GRAD_TRANSFORMS else "grad"
            use = programs.filled("""
            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            only_kernel = nnx.DiffState(0, nnx.PathContains("kernel"))
            grad_fn = nnx.TRANSFORM(lambda m, x: jnp.sum(m(x)), argnums=only_kernel)
            return type(grad_fn(model, jnp.ones((1, 2)))).__name__
            """, {"TRANSFORM": transform})
        control = """
            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            graphdef, diff, rest = nnx.split(model, nnx.PathContains("kernel"), ...)
            grads = nnx.grad(lambda d, r, x: jnp.sum(nnx.merge(graphdef, d, r)(x)))(diff, rest, jnp.ones((1, 2)))
            return type(grads).__name__
        """
        return Reproduction(dedented(use), expect_error="prefix-filter", control=dedented(control))
