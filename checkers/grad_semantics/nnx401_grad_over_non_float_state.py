"""NNX401 ``grad-over-non-float-state``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from checkers.grad_semantics.facts import DifferentiatedArgumentFacts, grad_sites
from checkers.grad_semantics.reproduction import SHARED_VARIABLE_TYPES, dedented
from nnx_lint.api import (
    NON_DIFFERENTIABLE,
    Facts,
    Invalid,
    Reproduction,
    Rule,
    Valid,
    flax_table,
    passed_at,
    programs,
    raises,
    gradients,
)


@dataclass(frozen=True, kw_only=True)
class GradOverNonFloatStateFacts(DifferentiatedArgumentFacts):
    """What ``NNX401`` reports (the diagnostic's ``facts``: the shared
    :class:`DifferentiatedArgumentFacts`, then these)."""

    transform: str
    argnums: list
    has_aux: bool
    holding: str
    non_float: list
    transform_line: int


class GradOverNonFloatState(Rule):
    """`nnx.grad` over a Module that holds RNG state or integer Variables.

    What it does:
        Flags an application of `nnx.grad` / `nnx.value_and_grad` (default or integer
        `argnums`) whose differentiated argument is a Module known to hold RNG state
        (`nnx.Dropout(..., rngs=rngs)`, a stored `nnx.Rngs` / `RngStream`, `nnx.RNN`,
        `nnx.MultiHeadAttention(dropout_rate>0, rngs=...)`) or integer/bool leaves
        (`nnx.Variable(jnp.array(0))`, a plain int array attribute). What the class holds is
        followed through its submodules, project classes in other files, and containers
        (also Variables stored with `setattr(self, "name", ...)`), and what is stored onto the
        argument after it is built (`model.rngs = nnx.Rngs(1)`, `model.set_attributes(
        noise_rngs=nnx.Rngs(0))`), also when its class is unknown. The argument's class comes
        from its annotation, its construction, a project factory that returns one class
        (`make_policy(0)`), or the calls of the enclosing function (`update(Policy(...))`),
        in this file or in other project files that import it; when callers pass several
        classes, the finding names the one that breaks and where it is called
        (`call site main.py:40`, also a related location). `nnx.grad(trainer.loss)(model)`
        (a bound method of a plain object) differentiates `model`; `nnx.grad(model.loss)`,
        a bound Module method, raises in both modes (flax rejects it), so it stays silent.

    Why is this bad?:
        Graph mode differentiated only the `Param`s of the argument. Tree Mode differentiates
        the whole argument, and `jax.grad` raises `TypeError: grad requires real- or
        complex-valued inputs ... but got uint32` (`int32`) on the RNG counter / integer
        leaves. Split the model by `nnx.Param` and differentiate only the params: `graphdef,
        params, rest = nnx.split(model, nnx.Param, ...)`, `nnx.grad(loss)(params, rest)`
        with `nnx.merge(graphdef, params, rest)` inside the loss (updates of `rest`, such as
        RNG counters, still propagate). Keep graph mode with `nnx.compat.grad` instead.

    References:
        - [Tree Mode in brief](../tree-mode.md#grad) — patterns [D2](../catalogue.md#d2)
        - [FLIP 5310, "nnx.grad"](https://github.com/google/flax/issues/5310)
    """

    code = "NNX401"
    facts_type = GradOverNonFloatStateFacts
    visits_transform_calls_only = True
    fixes = ("pin",)
    symbol = "grad-over-non-float-state"
    kind = "raises"
    #: jax.grad rejects the non-float leaves when it traces, after the inputs are flattened.
    stage = "traced"
    catalogue = ("D2",)
    message = (
        "`nnx.{transform}` differentiates all of `{argument}`, and `{class}` holds non-float state: "
        "Tree Mode raises TypeError"
    )
    #: When callers pass several classes, the one that breaks is named with its call's line.
    call_site_message = (
        "`nnx.{transform}` differentiates all of `{argument}`, called with `{class}` ({class_evidence}), "
        "which holds non-float state: Tree Mode raises TypeError"
    )
    #: The class is unknown; what it holds was stored onto it after its construction.
    stored_message = (
        "`nnx.{transform}` differentiates all of `{argument}`, which is given non-float state after it is built: "
        "Tree Mode raises TypeError"
    )
    help = (
        "In Tree Mode jax.grad sees every leaf of `{argument}`, including its integer/key state "
        "({holding}). Split by `nnx.Param` (`graphdef, params, rest = nnx.split(model, nnx.Param, "
        "...)`) and pass `(params, rest)` with `nnx.merge` inside the loss, or keep graph mode with "
        "`nnx.compat.{transform}`"
    )

    #: Audit mode (``--strict``): the argument is a Module whose contents are unknown.
    unproven_message = (
        "`nnx.{transform}` differentiates all of `{value}`, whose contents are unknown ({reason}): "
        "if it holds RNG state or integer Variables, Tree Mode raises TypeError"
    )

    def visit_call(self, node: nodes.Call) -> None:
        breaks = lambda d: d.holdings is not None and bool(d.holdings.of(NON_DIFFERENTIABLE))  # noqa: E731
        analysis = gradients.grad_analysis(self.context)
        reported = False
        for application, differentiated in analysis.differentiated_at(node, breaks, containers=True):
            reported = True
            holdings = differentiated.holdings
            stored = _stored_non_float(differentiated)
            stored_names = {store.attribute for store in stored}
            if differentiated.class_name is None or (stored and all(
                    h.path.split(".")[0] in stored_names for h in holdings.of(NON_DIFFERENTIABLE))):
                message = self.stored_message
            elif differentiated.evidence.startswith("call site"):
                message = self.call_site_message
            else:
                message = None
            self.report(
                node,
                message=message,
                transform=application.transform,
                argnums=list(application.argnums or ()),
                has_aux=application.has_aux,
                holding=gradients.describe_holdings(holdings, NON_DIFFERENTIABLE),
                non_float=gradients.holding_facts(holdings, NON_DIFFERENTIABLE),
                transform_line=application.transform_node.lineno,
                **differentiated.facts(),
                pin=gradients.grad_pin_sites(self.context, application),
                related=grad_sites(application) + _caller(differentiated)
                + [(store.node, f"`{store.attribute}` is stored onto it here") for store in stored],
            )
        if not reported:
            for application, differentiated, reason in analysis.unresolved_at(node):
                self.report_unproven(node, value=programs.clipped(differentiated.argument.as_string()), reason=reason,
                                     transform=application.transform, related=grad_sites(application))

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """The flagged application on a Linear plus the non-float state the facts name.

        Variants by facts: the holding's category (``rng``: a ``Dropout`` with stored
        ``rngs``, i.e. ``RngKey``/``RngCount``; ``integer``: an int32 Variable of the
        flagged Variable type), ``transform`` (``grad`` / ``value_and_grad``), ``has_aux``,
        and the differentiated argument's ``position`` among the ``argnums`` (the other
        differentiated positions get float arrays). Control: the FLIP recipe, split by
        ``nnx.Param`` and differentiate ``(params, rest)``.
        """
        transform = facts.transform if facts.transform in flax_table.GRAD_TRANSFORMS else "grad"
        categories = {h.get("category") for h in facts.non_float or []}
        types = [h.get("type") for h in facts.non_float or [] if h.get("category") == "integer"]
        if "rng" in categories or not types:
            holding, call = "self.drop = nnx.Dropout(0.5, rngs=rngs)", "self.drop(self.lin(x))"
        else:
            variable = types[0] if types[0] in SHARED_VARIABLE_TYPES else "Variable"
            holding = programs.assign("self.steps", programs.call(programs.attribute("nnx", variable), "jnp.array(0)"))
            call = "self.lin(x)"
        position = programs.bounded_index(facts.position if isinstance(facts.position, int) else 0, "the position")
        argnums = [programs.bounded_index(a, "argnums") for a in facts.argnums or [position]
                   if isinstance(a, int)] or [position]
        count = max(argnums + [position]) + 1
        parameters = ["a%d" % i for i in range(count)]
        options = {"argnums": programs.literal(argnums[0] if len(argnums) == 1 else tuple(argnums))}
        if facts.has_aux:
            options["has_aux"] = "True"

        def differentiated(model: str, called: str) -> tuple[list[str], str]:
            """``(arguments, loss value)``: ``model`` at the position, called as ``called``."""
            value = programs.sum_of(programs.call("jnp.sum", programs.call(called, "x")),
                                    *[programs.call("jnp.sum", parameters[i]) for i in range(count) if i != position])
            return ([model if i == position else "x" for i in range(count)],
                    programs.items(value, "0.0") if facts.has_aux else value)

        def gradient_type(loss_parameters: list[str], value: str, arguments: list[str]) -> str:
            """``loss`` returning ``value``, differentiated at ``arguments``: the observation is the result's type."""
            gradient = programs.call(programs.call(programs.attribute("nnx", transform), "loss", **options), *arguments)
            return programs.lines(programs.function("loss", loss_parameters, programs.returning(value)),
                                  programs.assign("out", gradient), "return type(out).__name__")

        arguments, value = differentiated("model", parameters[position])
        fixed_arguments, fixed_value = differentiated(
            "params", programs.call("nnx.merge", "graphdef", parameters[position], "rest"))
        model = programs.filled("""
            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                    HOLDING
                def __call__(self, x):
                    return CALL

            model, x = Model(nnx.Rngs(0)), jnp.ones((1, 2))
        """, expressions={"CALL": call}, statements={"HOLDING": holding})
        use = gradient_type(parameters, value, arguments)
        # the control passes rest (RNG counters, ...) without differentiating it
        control = programs.lines("graphdef, params, rest = nnx.split(model, nnx.Param, ...)",
                                 gradient_type(parameters + ["rest"], fixed_value, fixed_arguments + ["rest"]))
        return Reproduction(dedented(model) + dedented(use), expect_error="grad-non-float",
                            control=dedented(model) + dedented(control))

    VALID = [
        Valid(
            "split-params-fix",
            """
            import jax.numpy as jnp
            from flax import nnx

            class WithDropout(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                    self.drop = nnx.Dropout(0.5, rngs=rngs)
                def __call__(self, x):
                    return self.drop(self.lin(x))

            model, x = WithDropout(nnx.Rngs(0)), jnp.ones((1, 2))
            graphdef, params, rest = nnx.split(model, nnx.Param, ...)
            def loss(params, rest):
                return jnp.sum(nnx.merge(graphdef, params, rest)(x))
            grads = nnx.grad(loss)(params, rest)
            """,
        ),
        Valid(
            "dropout-without-stored-rngs",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Net(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                    self.drop = nnx.Dropout(0.5)          # rngs passed at call time
                def __call__(self, x, rngs):
                    return self.drop(self.lin(x), rngs=rngs)

            model = Net(nnx.Rngs(0))
            grads = nnx.grad(lambda m: jnp.sum(m(jnp.ones((1, 2)), nnx.Rngs(1))))(model)
            """,
        ),
        Valid(
            "compat-grad",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Counter(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                    self.steps = nnx.Variable(jnp.array(0))
                def __call__(self, x):
                    return self.lin(x)

            model = Counter(nnx.Rngs(0))
            grads = nnx.compat.grad(lambda m: jnp.sum(m(jnp.ones((1, 2)))))(model)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "dropout-with-rngs",
            """
            import jax.numpy as jnp
            from flax import nnx

            class WithDropout(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                    self.drop = nnx.Dropout(0.5, rngs=rngs)
                def __call__(self, x):
                    return self.drop(self.lin(x))

            model = WithDropout(nnx.Rngs(0))
            grads = nnx.grad(lambda m: jnp.sum(m(jnp.ones((1, 2)))))(model)  # NNX401
            """,
            tree_mode=raises("TypeError", "grad requires real- or complex-valued inputs"),
        ),
        Invalid(
            "int-counter-value-and-grad",
            """
            import jax.numpy as jnp
            from flax import nnx

            class WithCounter(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                    self.steps = nnx.Variable(jnp.array(0))
                def __call__(self, x):
                    return self.lin(x)

            def train_step(model: WithCounter, x):
                def loss_fn(model):
                    return jnp.sum(model(x))
                grad_fn = nnx.value_and_grad(loss_fn)
                loss, grads = grad_fn(model)  # NNX401
                return loss
            """,
            tree_mode=raises("TypeError", "grad requires real- or complex-valued inputs"),
        ),
    ]


def _stored_non_float(differentiated) -> list:
    """The stores onto the argument after its construction that give it non-float state."""
    if not differentiated.later_stores:
        return []
    paths = {h.path.split(".")[0] for h in differentiated.holdings.of(NON_DIFFERENTIABLE)}
    return [store for store in differentiated.later_stores if store.attribute in paths]


def _caller(differentiated) -> list:
    """The call (in this file or another) that passes the class that breaks."""
    if differentiated.call is None:
        return []
    return [passed_at(differentiated.call, differentiated.class_name)]
