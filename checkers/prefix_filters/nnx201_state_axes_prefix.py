"""NNX201 ``state-axes-prefix``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from checkers.prefix_filters.base import PrefixFilterRule
from checkers.prefix_filters.reproduction import dedented
from nnx_lint.api import Facts, Invalid, Reproduction, Valid, raises


class StateAxesPrefix(PrefixFilterRule):
    """`nnx.StateAxes` prefix in `vmap` / `scan` / `pmap` axes.

    What it does:
        Flags `nnx.StateAxes(...)` reaching `in_axes` / `out_axes` of an NNX transform
        (directly, through a variable, in a decorator or a `functools.partial`), and
        `StateAxes` objects built where no transform in the file keeps graph mode.

    Why is this bad?:
        Tree Mode has no prefix filters. Creating the transform raises
        `ValueError: in_axes cannot contain StateAxes objects when graph=False or
        graph_updates=False` — at decoration time, so often when the module is imported.

    References:
        - [Tree Mode in brief: prefix filters](../tree-mode.md#prefix-filters) — patterns [B1](../catalogue.md#b1)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX201"
    fixes = ("pin",)
    symbol = "state-axes-prefix"
    kind = "raises"
    catalogue = ("B1",)
    filter_name = "StateAxes"
    message = (
        "`nnx.StateAxes` in `{argument}` of `nnx.{transform}`: Tree Mode raises ValueError (prefix "
        "filters are rejected)"
    )
    help = (
        "Tree Mode rejects prefix filters when the transform is created. Split the model by filter "
        "(`graphdef, a, b = nnx.split(model, nnx.Param, ...)`), pass each group with a plain axis and "
        "`nnx.merge` inside, or keep graph mode with `nnx.compat.{transform}`"
    )
    unused_message = (
        "`nnx.StateAxes` is a graph-mode-only prefix filter: every Tree Mode transform raises ValueError on it"
    )
    unused_help = "Split the model by filter and pass plain axes per state group instead"
    VALID = [
        Valid(
            "split-and-plain-axes",
            """
            from flax import nnx

            def ensemble_forward(model, x):
                graphdef, params, rest = nnx.split(model, nnx.Param, ...)

                @nnx.vmap(in_axes=(0, None, None))
                def forward(params, rest, x):
                    return nnx.merge(graphdef, params, rest)(x)

                return forward(params, rest, x)
            """,
        ),
        Valid(
            "compat-vmap",
            """
            from flax import nnx

            axes = nnx.StateAxes({nnx.Param: 0, ...: None})
            forward = nnx.compat.vmap(lambda m, x: m(x), in_axes=(axes, None))
            """,
        ),
        Valid(
            "explicit-graph-flags",
            """
            from flax import nnx

            @nnx.vmap(in_axes=(nnx.StateAxes({nnx.Param: 0, ...: None}), None),
                      graph=True, graph_updates=True)
            def forward(model, x):
                return model(x)
            """,
        ),
        Valid(
            "jax-vmap-and-user-class",
            """
            import jax
            from flax import nnx

            class StateAxes(dict):
                pass

            forward = jax.vmap(lambda p, x: p @ x, in_axes=(StateAxes(w=0), None))
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "vmap-decorator",
            """
            from flax import nnx

            @nnx.vmap(in_axes=(nnx.StateAxes({nnx.Param: 0, ...: None}), None))  # NNX201
            def forward(model, x):
                return model(x)
            """,
            tree_mode=raises("ValueError", "cannot contain `StateAxes` objects"),
        ),
        Invalid(
            "scan-through-variable",
            """
            from functools import partial
            from flax import nnx

            axes = nnx.StateAxes({nnx.Param: 0, ...: None})
            scan_layers = partial(nnx.scan, in_axes=(nnx.Carry, axes), out_axes=nnx.Carry)  # NNX201
            """,
            tree_mode=raises("ValueError", "cannot contain `StateAxes` objects"),
        ),
        Invalid(
            "constructed-for-later",
            """
            from flax import nnx

            ENSEMBLE_AXES = nnx.StateAxes({nnx.Param: 0, ...: None})  # NNX201
            """,
            tree_mode=raises("ValueError", "cannot contain `StateAxes` objects"),
        ),
    ]


    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """A two-Variable model vectorised with a StateAxes prefix, in the flagged position."""
        transform = facts.transform or "vmap"
        model = """
            class Ensemble(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.ones((4, 3)))
                    self.scale = nnx.BatchStat(jnp.array(2.0))
        """
        axes = "axes = nnx.StateAxes({nnx.Param: 0, ...: None})\n"
        if transform == "scan":
            use = """
            step = nnx.scan(lambda c, m: (c + m.w.sum() * m.scale, None),
                            in_axes=(nnx.Carry, axes), out_axes=(nnx.Carry, 0))
            return step(jnp.array(0.0), Ensemble())[0].shape
            """
        elif facts.argument == "out_axes":
            use = """
            create = nnx.vmap(lambda x: Ensemble(), in_axes=0, out_axes=axes)
            return create(jnp.arange(4)).w.shape
            """
        else:  # vmap, and pmap (one CPU device: the same prefix check, at creation)
            use = """
            forward = nnx.vmap(lambda m, x: (m.w @ x) * m.scale, in_axes=(axes, None))
            return forward(Ensemble(), jnp.ones((3,))).shape
            """
        control = model + """
            graphdef, params, rest = nnx.split(Ensemble(), nnx.Param, ...)
            forward = nnx.vmap(lambda p, r, x: (nnx.merge(graphdef, p, r).w @ x) * r["scale"][...],
                               in_axes=(0, None, None))
            return forward(params, rest, jnp.ones((3,))).shape
        """
        return Reproduction(dedented(model) + "\n" + axes + dedented(use), expect_error="prefix-filter",
                            control=dedented(control))
