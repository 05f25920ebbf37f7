"""NNX203 ``state-sharding-prefix``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from checkers.prefix_filters.base import PrefixFilterRule
from checkers.prefix_filters.reproduction import dedented
from nnx_lint.api import Facts, Invalid, Reproduction, Valid, raises


class StateShardingPrefix(PrefixFilterRule):
    """`nnx.StateSharding` in `jit` shardings or `shard_map` specs.

    What it does:
        Flags `nnx.StateSharding(...)` reaching `in_shardings` / `out_shardings` of
        `nnx.jit` or `in_specs` / `out_specs` of `nnx.shard_map`, and `StateSharding`
        objects built where no transform in the file keeps graph mode.

    Why is this bad?:
        Tree Mode has no prefix filters: creating the transform raises `ValueError:
        in_shardings cannot contain StateSharding objects when graph=False or
        graph_updates=False`. Build a per-Variable prefix tree with
        `nnx.prefix(model, {filter: sharding, ...: other}, graph=False)` instead; migrate the
        call site together with its transform (graph-mode transforms reject `nnx.prefix` trees).

    References:
        - [Tree Mode in brief: prefix filters](../tree-mode.md#prefix-filters) — patterns [B3](../catalogue.md#b3)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX203"
    fixes = ("pin",)
    symbol = "state-sharding-prefix"
    kind = "raises"
    catalogue = ("B3",)
    filter_name = "StateSharding"
    message = (
        "`nnx.StateSharding` in `{argument}` of `nnx.{transform}`: Tree Mode raises ValueError (prefix "
        "filters are rejected)"
    )
    help = (
        "Tree Mode rejects prefix filters when the transform is created. Use `nnx.prefix(model, "
        "filter_map, graph=False)` as the prefix, or keep graph mode with `nnx.compat.{transform}`"
    )
    unused_message = (
        "`nnx.StateSharding` is a graph-mode-only prefix filter: Tree Mode `jit`/`shard_map` raise ValueError on it"
    )
    unused_help = "Build the prefix with `nnx.prefix(model, filter_map, graph=False)` instead"
    VALID = [
        Valid(
            "nnx-prefix",
            """
            from flax import nnx

            def sharded_apply(model, x, kernel_sharding, replicated):
                shardings = nnx.prefix(model, {nnx.PathContains('kernel'): kernel_sharding,
                                               ...: replicated}, graph=False)
                return nnx.jit(lambda m, x: m(x), in_shardings=(shardings, replicated))(model, x)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "jit-in-shardings",
            """
            from flax import nnx

            def sharded_apply(model, x, row, rep):
                shardings = nnx.StateSharding({nnx.PathContains('kernel'): row, ...: rep})
                return nnx.jit(lambda m, x: m(x), in_shardings=(shardings, rep))(model, x)  # NNX203
            """,
            tree_mode=raises("ValueError", "cannot contain `StateSharding` objects"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """A Linear jitted with a StateSharding prefix on a one-device mesh."""
        mesh = """
            mesh = jax.sharding.Mesh(jax.devices()[:1], ("d",))
            replicated = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        """
        if facts.argument == "out_shardings":
            use = """
            create = nnx.jit(lambda: nnx.Linear(2, 2, rngs=nnx.Rngs(0)),
                             out_shardings=nnx.StateSharding({...: replicated}))
            return type(create()).__name__
            """
        else:  # in_shardings, and shard_map's specs (the same prefix check, at creation)
            use = """
            forward = nnx.jit(lambda m, x: m(x), in_shardings=(nnx.StateSharding({...: replicated}), replicated))
            return forward(model, jnp.ones((1, 2))).shape
            """
        control = mesh + """
            forward = nnx.jit(lambda m, x: m(x))
            return forward(model, jnp.ones((1, 2))).shape
        """
        return Reproduction(dedented(mesh) + "\n" + dedented(use), expect_error="prefix-filter", control=dedented(control))
