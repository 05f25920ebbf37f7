"""NNX2xx: prefix filters (``StateAxes``, ``DiffState``, ``StateSharding``) — catalogue B1-B3.

Tree Mode transforms reject prefix filters when the transform is *created* (decoration
time, often import time). A filter is reported where it reaches a transform's prefix
argument (``in_axes``, ``argnums``, ``in_shardings``, ...), or, when it reaches none in
this file, where it is constructed. Transforms that keep graph mode (``graph=True,
graph_updates=True``, ``nnx.compat.*``, a graph-mode scope) stay silent.
"""
from __future__ import annotations

from typing import ClassVar

from astroid import nodes

from nnx_lint.calls import NNXCall
from nnx_lint.fixes.sites import pin_sites_in
from nnx_lint.flow import expressions_within, position_in
from nnx_lint.nnx_api import PREFIX_KEYWORDS
from nnx_lint.rule import Invalid, Reproduction, Rule, Valid, raises

_SPEC = "https://github.com/google/flax/issues/5310"


class _PrefixFilterRule(Rule):
    """Shared logic: find one filter class in the prefix arguments of NNX transforms."""

    filter_name: ClassVar[str]
    unused_message: ClassVar[str]
    unused_help: ClassVar[str]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._constructions: list[nodes.Call] = []
        self._consumed: set[int] = set()

    def _is_filter(self, node: nodes.NodeNG) -> bool:
        call = self.context.nnx_call(node)
        return call is not None and call.name == self.filter_name and not call.via_partial

    def visit_call(self, node: nodes.Call) -> None:
        if self._is_filter(node):
            self._constructions.append(node)
            return
        call = self.context.nnx_call(node)
        if call is None or not call.is_transform:
            return
        affected = self.context.flip_changes(call)
        for argument in sorted(PREFIX_KEYWORDS & call.keywords.keys()):
            value = call.keywords[argument]
            for expression, reference in expressions_within(value):
                if not self._is_filter(expression):
                    continue
                self._consumed.add(id(expression))
                if affected:
                    self._report_use(call, argument, value, expression, reference)

    def _report_use(self, call: NNXCall, argument: str, value, construction: nodes.Call, reference) -> None:
        self.report(
            reference,
            filter=self.filter_name,
            transform=call.name,
            argument=argument,
            position=position_in(value, reference),
            filter_args=[a.as_string() for a in construction.args],
            form=_form(call),
            line_constructed=construction.lineno,
            pin=pin_sites_in(self.context, call),
        )

    def leave_module(self, node: nodes.Module) -> None:
        for construction in self._constructions:
            if id(construction) in self._consumed or _is_dead_local(construction):
                continue
            if self.context.mode.scope_keeps_graph_mode(construction):
                continue
            self.report(
                construction,
                message=self.unused_message,
                help=self.unused_help,
                filter=self.filter_name,
                transform=None,
                argument=None,
                position=None,
                filter_args=[a.as_string() for a in construction.args],
                form="construction",
                line_constructed=construction.lineno,
            )


def _is_dead_local(construction: nodes.Call) -> bool:
    """``axes = nnx.StateAxes(...)`` in a function, and ``axes`` never used: nothing can break.

    (Constructing a filter does not raise; only passing it to a transform does.)
    """
    assign = construction.parent
    if not (isinstance(assign, nodes.Assign) and len(assign.targets) == 1):
        return False
    target = assign.targets[0]
    scope = assign.scope()
    if not isinstance(target, nodes.AssignName) or isinstance(scope, nodes.Module):
        return False
    return not any(name.name == target.name for name in scope.nodes_of_class(nodes.Name))


def _form(call: NNXCall) -> str:
    if call.via_partial:
        return "partial"
    if isinstance(call.node.parent, nodes.Decorators):
        return "decorator"
    return "call"


class StateAxesPrefix(_PrefixFilterRule):
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
        - [Tree Mode in brief: prefix filters](../tree-mode.md#prefix-filters) — catalogue row B1
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
    def reproduce(cls, facts: dict) -> Reproduction:
        """A two-Variable model vectorised with a StateAxes prefix, in the flagged position."""
        transform = facts.get("transform") or "vmap"
        model = """
            class Ensemble(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.ones((4, 3)))
                    self.scale = nnx.BatchStat(jnp.array(2.0))

            axes = nnx.StateAxes({nnx.Param: 0, ...: None})
        """
        if transform == "scan":
            use = """
            step = nnx.scan(lambda c, m: (c + m.w.sum() * m.scale, None),
                            in_axes=(nnx.Carry, axes), out_axes=(nnx.Carry, 0))
            return step(jnp.array(0.0), Ensemble())[0].shape
            """
        elif facts.get("argument") == "out_axes":
            use = """
            create = nnx.vmap(lambda x: Ensemble(), in_axes=0, out_axes=axes)
            return create(jnp.arange(4)).w.shape
            """
        else:  # vmap, and pmap (one CPU device: the same prefix check, at creation)
            use = """
            forward = nnx.vmap(lambda m, x: (m.w @ x) * m.scale, in_axes=(axes, None))
            return forward(Ensemble(), jnp.ones((3,))).shape
            """
        control = model.replace("axes = nnx.StateAxes({nnx.Param: 0, ...: None})", "") + """
            graphdef, params, rest = nnx.split(Ensemble(), nnx.Param, ...)
            forward = nnx.vmap(lambda p, r, x: (nnx.merge(graphdef, p, r).w @ x) * r["scale"][...],
                               in_axes=(0, None, None))
            return forward(params, rest, jnp.ones((3,))).shape
        """
        return Reproduction(_dedent(model) + "\n" + _dedent(use), expect_error="prefix-filter", control=_dedent(control))


class DiffStatePrefix(_PrefixFilterRule):
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
        - [Tree Mode in brief: prefix filters](../tree-mode.md#prefix-filters) — catalogue rows B2, C3
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
    def reproduce(cls, facts: dict) -> Reproduction:
        """A Linear differentiated (or custom_vjp'd) with a DiffState prefix."""
        if facts.get("transform") == "custom_vjp":
            use = """
            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            f = nnx.custom_vjp(lambda m, x: jnp.sum(m(x)), nondiff_argnums=(nnx.DiffState(1, nnx.Param),))
            return "created"
            """
        else:
            transform = facts.get("transform") if facts.get("transform") in ("grad", "value_and_grad") else "grad"
            use = f"""
            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            only_kernel = nnx.DiffState(0, nnx.PathContains("kernel"))
            grad_fn = nnx.{transform}(lambda m, x: jnp.sum(m(x)), argnums=only_kernel)
            return type(grad_fn(model, jnp.ones((1, 2)))).__name__
            """
        control = """
            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            graphdef, diff, rest = nnx.split(model, nnx.PathContains("kernel"), ...)
            grads = nnx.grad(lambda d, r, x: jnp.sum(nnx.merge(graphdef, d, r)(x)))(diff, rest, jnp.ones((1, 2)))
            return type(grads).__name__
        """
        return Reproduction(_dedent(use), expect_error="prefix-filter", control=_dedent(control))


class StateShardingPrefix(_PrefixFilterRule):
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
        - [Tree Mode in brief: prefix filters](../tree-mode.md#prefix-filters) — catalogue row B3
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
    def reproduce(cls, facts: dict) -> Reproduction:
        """A Linear jitted with a StateSharding prefix on a one-device mesh."""
        mesh = """
            mesh = jax.sharding.Mesh(jax.devices()[:1], ("d",))
            replicated = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        """
        if facts.get("argument") == "out_shardings":
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
        return Reproduction(_dedent(mesh) + "\n" + _dedent(use), expect_error="prefix-filter", control=_dedent(control))


def _dedent(code: str) -> str:
    import textwrap

    return textwrap.dedent(code).strip("\n") + "\n"
