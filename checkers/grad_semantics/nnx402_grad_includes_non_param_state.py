"""NNX402 ``grad-includes-non-param-state``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from checkers.grad_semantics.facts import DifferentiatedArgumentFacts, grad_sites
from checkers.grad_semantics.reproduction import SHARED_VARIABLE_TYPES, dedented, grad_application_code
from nnx_lint.api import (
    ABSENT,
    FLOAT_STATE,
    NON_DIFFERENTIABLE,
    UNKNOWN_DTYPE,
    Facts,
    Invalid,
    Reproduction,
    Rule,
    Valid,
    differs,
    flax_table,
    programs,
    gradients,
)




@dataclass(frozen=True, kw_only=True)
class GradIncludesNonParamStateFacts(DifferentiatedArgumentFacts):
    """What ``NNX402`` reports (the diagnostic's ``facts``: the shared
    :class:`DifferentiatedArgumentFacts`, then these)."""

    consumer: str
    transform: str
    argnums: list
    holding: str
    non_param: list
    gradient_via: list
    application_line: int
    #: Never carried by an NNX402 finding: declared so the shared reproduction builder
    #: (:func:`~checkers.grad_semantics.reproduction.grad_application_code`) reads them as ABSENT.
    has_aux: bool = ABSENT
    argnums_is_tuple: bool = ABSENT


class GradIncludesNonParamState(Rule):
    """Gradients of a Module with non-`Param` float Variables reach a whole-tree reduction.

    What it does:
        Flags `optax.global_norm(grads)`, `jax.tree.leaves(grads)`, `jax.tree.reduce`,
        `ravel_pytree` and similar whole-tree consumers of the result of `nnx.grad` /
        `nnx.value_and_grad` (default or integer `argnums`) when the differentiated Module
        is known to hold float Variables that are not `Param`s (`nnx.BatchNorm`'s `BatchStat`
        mean/var, `nnx.Cache`, a float `nnx.Variable`, a plain float array). The gradient
        is followed through assignments, `value_and_grad` / `has_aux` unpacking and
        `jax.tree.map(f, grads)`. Gradients that go only to `optimizer.update(model, grads)`
        (which filters by `wrt`) or through `nnx.state(grads, nnx.Param)` stay silent. Norms
        and reductions are flagged only when a non-Param leaf is read by the forward pass
        (`BatchNorm(use_running_average=True)`, a Variable a method reads): unread leaves get
        zero gradients, which change leaf lists and flattened vectors but not a norm.

    Why is this bad?:
        Tree Mode differentiates the whole argument: the gradient now has leaves for the
        `BatchStat`s (non-zero ones), so a logged gradient norm, global-norm clipping or a
        flattened gradient vector silently change (catalogue: 31.84 -> 35.60). Filter first
        with `nnx.state(grads, nnx.Param)`, or split by `nnx.Param` and differentiate
        `(params, rest)`.

    References:
        - [Tree Mode in brief](../tree-mode.md#grad) — patterns [D1](../catalogue.md#d1)
        - [FLIP 5310, "nnx.grad"](https://github.com/google/flax/issues/5310)
    """

    code = "NNX402"
    facts_type = GradIncludesNonParamStateFacts
    visits_transform_calls_only = True
    fixes = ("pin",)
    symbol = "grad-includes-non-param-state"
    kind = "silent"
    catalogue = ("D1",)
    message = (
        "`{consumer}` over the gradient of `{class}` silently changes in Tree Mode (non-Param "
        "Variables are included)"
    )
    help = (
        "In Tree Mode `nnx.{transform}` also differentiates the non-Param Variables ({holding}). "
        "Filter first with `nnx.state(grads, nnx.Param)`, or split by `nnx.Param` and differentiate "
        "`(params, rest)`"
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._reported: set[int] = set()

    def visit_call(self, node: nodes.Call) -> None:
        analysis = gradients.grad_analysis(self.context)
        non_param = {FLOAT_STATE, UNKNOWN_DTYPE}
        # unknown contents, or NNX401's (raises first), do not count
        breaks = lambda d: d.holdings is not None and not d.holdings.of(NON_DIFFERENTIABLE) \
            and bool(d.holdings.of(non_param))  # noqa: E731
        for application, differentiated, use in analysis.gradient_uses(node, breaks):
            holdings = differentiated.holdings
            read = [h for h in holdings.of(non_param) if h.read]
            found = analysis.whole_tree_usage(use.name)
            if found is None:
                continue
            consumer, used = found
            where, elsewhere = analysis.reported_at(use, used, f"`{consumer}` reduces it here")
            if where.lineno in self._reported:
                continue
            if consumer in flax_table.NORM_CONSUMERS and not read:
                continue  # unread non-Param leaves get zero gradients: a norm does not change
            self._reported.add(where.lineno)
            self.report(
                where,
                consumer=consumer,
                transform=application.transform,
                argnums=list(application.argnums or ()),
                holding=gradients.describe_holdings(holdings, non_param),
                non_param=gradients.holding_facts(holdings, non_param),
                gradient_via=use.via,
                application_line=node.lineno,
                **differentiated.facts(),
                pin=gradients.grad_pin_sites(self.context, application),
                related=elsewhere + grad_sites(application),
            )

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """A Module with one Param and one non-Param float Variable, reduced by the flagged consumer.

        The values are explicit (``w = 1``, the non-Param Variable ``= 0``), so the numbers do
        not depend on either implementation's initialisers. Variants by facts: the non-Param
        Variable's type (``BatchStat``, ``Cache``, ``Variable``, a plain array via
        ``nnx.data``) and whether the forward pass reads it (``read_in_forward``), the
        consumer (a norm: ``optax.global_norm`` & co. are computed as the square root of
        the sum of squared leaves, since the program may only use jax; ``jax.tree.reduce``;
        ``jax.tree.leaves`` / ``flatten``: the leaf count; ``ravel_pytree``: the vector
        size), ``transform``, ``has_aux``, ``argnums`` and ``position``. Values are computed
        under ``jax.ensure_compile_time_eval()`` so they are concrete inside the trace.
        Tree Mode: the non-Param leaf has a gradient (norm 16.0, 2 leaves, size 4); graph
        mode: Params only (norm 11.314, 1 leaf, size 2). Control: the consumer over
        ``nnx.state(grads, nnx.Param)``.
        """
        holdings = facts.non_param or [{}]
        read = [h for h in holdings if h.get("read_in_forward")]
        holding = (read or holdings)[0]
        variable_type = holding.get("type")
        if variable_type == "array":
            stat = "nnx.data(jnp.zeros((2,)))"
        else:
            stat = programs.call(programs.attribute("nnx", variable_type if variable_type in SHARED_VARIABLE_TYPES - {"Param"}
                                                    else "Variable"), "jnp.zeros((2,))")
        forward = "(x - self.stat[...]) * self.w[...]" if read else "x * self.w[...]"
        consumer = facts.consumer or flax_table.DEFAULT_NORM
        if consumer in flax_table.TREE_REDUCES:
            observe = "round(float(jnp.sqrt(jax.tree.reduce(lambda a, g: a + jnp.sum(g ** 2), G, 0.0))), 3)"
            tree, graph = (16.0, 11.314) if read else (11.314, 11.314)
        elif consumer in flax_table.NORM_CONSUMERS:
            observe = "round(float(jnp.sqrt(sum(jnp.sum(g ** 2) for g in jax.tree.leaves(G)))), 3)"
            tree, graph = (16.0, 11.314) if read else (11.314, 11.314)
        elif consumer == flax_table.RAVEL_PYTREE:
            observe = "ravel_pytree(G)[0].size"
            tree, graph = 4, 2
        elif consumer in flax_table.TREE_FLATTENS:
            observe = "len(jax.tree.flatten(G)[0])"
            tree, graph = 2, 1
        else:
            observe = "len(jax.tree.leaves(G))"
            tree, graph = 2, 1
        model = programs.filled("""
            class Model(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.ones((2,)))
                    self.stat = STAT
                def __call__(self, x):
                    return FORWARD

            model, x = Model(), jnp.ones((4, 2))
        """, expressions={"STAT": stat, "FORWARD": forward})
        if consumer == flax_table.RAVEL_PYTREE:
            model = "from jax.flatten_util import ravel_pytree\n" + dedented(model)
        program = dedented(model) + "\n" + grad_application_code(facts, "jnp.sum(M(x) ** 2)")
        # G is the gradient: a placeholder name, replaced on the syntax tree
        body = _concrete(program + programs.filled(programs.returning(observe), expressions={"G": "grads"}))
        control = _concrete(program + programs.filled(programs.returning(observe),
                                                      expressions={"G": "nnx.state(grads, nnx.Param)"}))
        return Reproduction(body, expect_tree=tree, expect_graph=graph, control=control)

    VALID = [
        Valid(
            "norm-of-param-state",
            """
            import jax.numpy as jnp
            import optax
            from flax import nnx

            class Net(nnx.Module):
                def __init__(self, rngs):
                    self.linear = nnx.Linear(2, 2, rngs=rngs)
                    self.bn = nnx.BatchNorm(2, use_running_average=True, rngs=rngs)
                def __call__(self, x):
                    return self.bn(self.linear(x))

            model, x = Net(nnx.Rngs(0)), jnp.ones((4, 2))
            graphdef, params, rest = nnx.split(model, nnx.Param, ...)
            grads = nnx.grad(lambda p, r: jnp.sum(nnx.merge(graphdef, p, r)(x) ** 2))(params, rest)
            norm = optax.global_norm(grads)
            g_model = nnx.grad(lambda m: jnp.sum(m(x) ** 2))(model)
            norm_params = optax.global_norm(nnx.state(g_model, nnx.Param))
            """,
        ),
        Valid(
            "params-only-model",
            """
            import jax.numpy as jnp
            import optax
            from flax import nnx

            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            grads = nnx.grad(lambda m: jnp.sum(m(jnp.ones((1, 2)))))(model)
            norm = optax.global_norm(grads)
            """,
        ),
        Valid(
            "optimizer-update-only",
            """
            import jax.numpy as jnp
            import optax
            from flax import nnx

            class Net(nnx.Module):
                def __init__(self, rngs):
                    self.linear = nnx.Linear(2, 2, rngs=rngs)
                    self.bn = nnx.BatchNorm(2, rngs=rngs)
                def __call__(self, x):
                    return self.bn(self.linear(x))

            model = Net(nnx.Rngs(0))
            optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
            grads = nnx.grad(lambda m: jnp.sum(m(jnp.ones((4, 2)))))(model)
            optimizer.update(model, grads)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "global-norm-batchnorm",
            """
            import jax.numpy as jnp
            import optax
            from flax import nnx

            class Net(nnx.Module):
                def __init__(self, rngs):
                    self.linear = nnx.Linear(2, 2, rngs=rngs)
                    self.bn = nnx.BatchNorm(2, use_running_average=True, rngs=rngs)
                def __call__(self, x):
                    return self.bn(self.linear(x))

            model, x = Net(nnx.Rngs(0)), jnp.ones((4, 2))
            grads = nnx.grad(lambda m: jnp.sum(m(x) ** 2))(model)
            grad_norm = optax.global_norm(grads)  # NNX402
            """,
            tree_mode=differs("optax.global_norm(grads) is 35.60 instead of 31.84 (BatchStat mean/var get gradients)"),
        ),
        Invalid(
            "value-and-grad-aux-leaves",
            """
            import jax
            import jax.numpy as jnp
            from flax import nnx

            class Net(nnx.Module):
                def __init__(self, rngs):
                    self.linear = nnx.Linear(2, 2, rngs=rngs)
                    self.bn = nnx.BatchNorm(2, use_running_average=True, rngs=rngs)
                def __call__(self, x):
                    return self.bn(self.linear(x))

            def step(model: Net, x):
                def loss_fn(model):
                    y = model(x)
                    return jnp.sum(y ** 2), y
                (loss, aux), grads = nnx.value_and_grad(loss_fn, has_aux=True)(model)
                return sum(jnp.sum(g ** 2) for g in jax.tree.leaves(grads))  # NNX402
            """,
            tree_mode=differs("jax.tree.leaves(grads) has 6 leaves instead of 4 (BatchStat mean/var gradients)"),
        ),
    ]


def _concrete(code: str) -> str:
    """``code`` run under ``jax.ensure_compile_time_eval()``: concrete values inside the trace."""
    import textwrap

    return "with jax.ensure_compile_time_eval():  # concrete numbers inside the trace\n" + textwrap.indent(code, "    ")
