"""NNX404 ``grads-checked-as-state``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from checkers.grad_semantics.facts import DifferentiatedArgumentFacts, grad_sites
from checkers.grad_semantics.reproduction import dedented, grad_application_code
from nnx_lint.api import Facts, Invalid, Reproduction, Rule, Valid, differs, flax_table, programs, gradients


@dataclass(frozen=True, kw_only=True)
class GradsCheckedAsStateFacts(DifferentiatedArgumentFacts):
    """What ``NNX404`` reports (the diagnostic's ``facts``: the shared
    :class:`DifferentiatedArgumentFacts`, then these)."""

    #: The check as the message shows it (``isinstance(grads, nnx.State)``, ``type(g) is nnx.State``).
    check: str
    #: The statement or expression as written (``self.assertIsInstance(grads, grad_type)``).
    written: str
    #: ``isinstance``, ``assertIsInstance``, ``assertNotIsInstance``, ``type-is``, ``type-is-not``.
    test: str
    #: The spelling of ``nnx.State`` that reaches the check, and how (``""``: written there,
    #: ``in the tuple``, ``one value of `grad_type```).
    state_class: str
    state_class_via: str
    tree_mode_value: bool
    graph_mode_value: bool
    consequence: str
    type_name: str
    transform: str
    argnums: list
    has_aux: bool
    argnums_is_tuple: bool
    gradient_via: list
    application_line: int


class GradsCheckedAsState(Rule):
    """The gradient of a Module is checked against `nnx.State` (`isinstance`, `assertIsInstance`, `type(g) is`).

    What it does:
        Follows the result of `nnx.grad` / `nnx.value_and_grad` (default or integer
        `argnums`) over a Module argument, or over an `nnx.Dict` / `nnx.List` / `nnx.Sequential`,
        as NNX403 does (assignments, `value_and_grad` / `has_aux` unpacking,
        `jax.tree.map(f, grads)`, project functions it is passed to), and flags a check of
        its class against `nnx.State`: `isinstance(grads, nnx.State)`,
        `isinstance(grads, (nnx.State, dict))`, `self.assertIsInstance(grads, nnx.State)` /
        `assertNotIsInstance`, `type(grads) is nnx.State` (`==`, `is not`, `!=`). The class
        expression may also be a name bound to `nnx.State` or to `nnx.State if flag else
        Net` (one branch is enough). Any spelling the name resolver knows counts
        (`flax.nnx.State`, `nnx.statelib.State`, `from flax.nnx import State`). A gradient
        taken over an `nnx.State` (split Params) stays silent: it is a State in both modes.

    Why is this bad?:
        Graph mode returned an `nnx.State`; Tree Mode returns the argument's own type
        (`Linear`, `Net`, `Dict`). Nothing raises at the check: `isinstance(grads,
        nnx.State)` is silently False, so the branch it guards changes, and
        `assertIsInstance(grads, nnx.State)` starts failing (flax 0.12.8, both modes
        measured). Check for the argument's type, convert with `nnx.state(grads,
        nnx.Param)` (a State in both modes), or split by `nnx.Param` and differentiate
        `(params, rest)`.

    References:
        - [Tree Mode in brief](../tree-mode.md#grad) — patterns [D1](../catalogue.md#d1)
        - [FLIP 5310, "nnx.grad"](https://github.com/google/flax/issues/5310)
    """

    code = "NNX404"
    facts_type = GradsCheckedAsStateFacts
    visits_transform_calls_only = True
    fixes = ("pin",)
    symbol = "grads-checked-as-state"
    kind = "silent"
    catalogue = ("D1",)
    message = "`{check}` is silently {tree_mode_value} in Tree Mode: the gradient is a `{type_name}`, not a State"
    help = (
        "In Tree Mode `nnx.{transform}` returns the argument's own type (`{type_name}`){consequence}. "
        "Check for that type, convert with `nnx.state(grads, nnx.Param)` (a State in both modes), or split "
        "by `nnx.Param` and differentiate `(params, rest)`"
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._reported: set[int] = set()

    def visit_call(self, node: nodes.Call) -> None:
        analysis = gradients.grad_analysis(self.context)
        for application, differentiated, use in analysis.gradient_uses(node):
            check = analysis.state_type_check(use.name)
            if check is None or id(check.node) in self._reported:
                continue  # one per check, also when several applications reach it
            self._reported.add(id(check.node))
            where, elsewhere = analysis.reported_at(use, check.node, "checked against `nnx.State` here")
            self.report(
                where,
                check=_shown(check, use.name),
                written=programs.clipped(check.text, 80),
                test=check.test,
                state_class=check.state_class,
                state_class_via=check.how,
                tree_mode_value=check.tree_mode_value,
                graph_mode_value=not check.tree_mode_value,
                consequence=_CONSEQUENCES.get(check.test, ""),
                **analysis.use_facts(application, differentiated, use, node),
                related=elsewhere + grad_sites(application),
            )

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """The gradient of a Module (or of the flagged container) checked against ``nnx.State``.

        Variants by facts: the ``test`` (``isinstance`` and the ``unittest`` assertions observe
        ``isinstance(grads, nnx.State)``; ``type-is`` / ``type-is-not`` observe ``type(grads)
        is nnx.State`` / ``is not``), the differentiated argument (a Module ``Net``; an
        ``nnx.Dict`` / ``nnx.List`` of one Param when ``class_qualified_name`` names one),
        ``transform``, ``has_aux``, ``argnums`` (tuple or int) and the ``position``. Tree Mode
        observes ``tree_mode_value`` (False for ``isinstance``), graph mode the opposite.
        Control: the same check of ``nnx.state(grads, nnx.Param)``, a State in both modes.
        """
        test = facts.test
        observe = {"type-is": "type(G) is nnx.State", "type-is-not": "type(G) is not nnx.State"}.get(
            test, "isinstance(G, nnx.State)")
        tree = gradients.tree_mode_value(test)
        container = facts.class_qualified_name
        if container == flax_table.NNX_DICT:
            model, forward = "model = nnx.Dict(w=nnx.Param(jnp.ones((2, 2))))", "jnp.sum(x @ M['w'][...])"
        elif container == flax_table.NNX_LIST:
            model, forward = "model = nnx.List([nnx.Param(jnp.ones((2, 2)))])", "jnp.sum(x @ M[0][...])"
        else:
            model = dedented("""
                class Net(nnx.Module):
                    def __init__(self, rngs):
                        self.linear = nnx.Linear(2, 2, rngs=rngs)
                    def __call__(self, x):
                        return self.linear(x)

                model = Net(nnx.Rngs(0))
            """)
            forward = "jnp.sum(M(x))"
        program = dedented(model) + "x = jnp.ones((1, 2))\n\n" + grad_application_code(facts, forward)
        # G is the gradient: a placeholder name, replaced on the syntax tree
        body = program + programs.filled(programs.returning(observe), expressions={"G": "grads"})
        control = program + programs.filled(programs.returning(observe),
                                            expressions={"G": "nnx.state(grads, nnx.Param)"})
        return Reproduction(body, expect_tree=tree, expect_graph=not tree, control=control)

    VALID = [
        Valid(
            "state-of-split-params-or-module-type",
            """
            import jax.numpy as jnp
            from flax import nnx

            model, x = nnx.Linear(2, 2, rngs=nnx.Rngs(0)), jnp.ones((1, 2))
            graphdef, params, rest = nnx.split(model, nnx.Param, ...)
            grads = nnx.grad(lambda p, r: jnp.sum(nnx.merge(graphdef, p, r)(x)))(params, rest)
            assert isinstance(grads, nnx.State)
            g_model = nnx.grad(lambda m: jnp.sum(m(x)))(model)
            assert isinstance(g_model, nnx.Linear)
            assert isinstance(nnx.state(g_model, nnx.Param), nnx.State)
            """,
        ),
        Valid(
            "graph-mode-kept",
            """
            import jax.numpy as jnp
            from flax import nnx

            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            grads = nnx.compat.grad(lambda m: jnp.sum(m(jnp.ones((1, 2)))))(model)
            assert isinstance(grads, nnx.State)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "isinstance-state",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Net(nnx.Module):
                def __init__(self, rngs):
                    self.linear = nnx.Linear(2, 2, rngs=rngs)
                def __call__(self, x):
                    return self.linear(x)

            model = Net(nnx.Rngs(0))
            grads = nnx.grad(lambda m: jnp.sum(m(jnp.ones((1, 2)))))(model)
            if isinstance(grads, nnx.State):  # NNX404
                grads = grads.filter(nnx.Param)
            """,
            tree_mode=differs("isinstance(grads, nnx.State) is False (grads is a Net), so the branch is skipped"),
        ),
        Invalid(
            "assert-is-instance-of-a-flagged-type",
            """
            import unittest
            import jax.numpy as jnp
            from flax import nnx

            class GradTest(unittest.TestCase):
                def test_grad(self, graph_updates=True):
                    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
                    loss, grads = nnx.value_and_grad(lambda m: jnp.mean(m.kernel[...]))(m)
                    grad_type = nnx.State if graph_updates else nnx.Linear
                    self.assertIsInstance(grads, grad_type)  # NNX404
            """,
            tree_mode=differs("isinstance(grads, nnx.State) is False (grads is a Linear): the assertion fails"),
        ),
        Invalid(
            "type-is-not-over-an-nnx-dict",
            """
            import jax.numpy as jnp
            from flax import nnx

            params = nnx.Dict(w=nnx.Param(jnp.ones((2, 2))), n=3)
            grads = nnx.grad(lambda d: jnp.sum(d['w'][...]))(params)
            needs_conversion = type(grads) is not nnx.State  # NNX404
            """,
            tree_mode=differs("type(grads) is not nnx.State is True: the gradient is an nnx.Dict"),
        ),
    ]


#: What follows from the changed test, by test (for the help).
_CONSEQUENCES = {
    "assertIsInstance": ", so the assertion fails",
    "assertNotIsInstance": ", so the assertion no longer fails",
}


def _shown(check: gradients.StateTypeCheck, gradient: nodes.NodeNG) -> str:
    """The check as the message shows it: the boolean test, short enough for an editor."""
    if check.test.startswith("type-"):
        return programs.clipped(check.text, 40)
    written = check.node.args[1] if len(check.node.args) > 1 else next(
        k.value for k in check.node.keywords if k.arg == "cls")
    return programs.clipped(f"isinstance({programs.clipped(gradient.as_string(), 12)}, {written.as_string()})", 40)
