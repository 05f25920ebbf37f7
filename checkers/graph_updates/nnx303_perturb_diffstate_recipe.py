"""NNX303 ``perturb-diffstate-recipe``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from checkers.graph_updates.reproduction import dedented
from nnx_lint.api import Facts, Invalid, Reproduction, Rule, Valid, pin_sites_in, raises, sown_state


@dataclass(frozen=True, kw_only=True)
class PerturbDiffStateRecipeFacts(Facts):
    """What ``NNX303`` reports (the diagnostic's ``facts``, in this order)."""

    api: str
    diffstate_line: int
    diffstate: str
    confidence: str
    pin: list


class PerturbDiffStateRecipe(Rule):
    """The graph-mode `perturb` recipe: Perturbation state read back after a `DiffState` grad.

    What it does:
        Flags the first read of `nnx.Perturbation` state (`nnx.state(grads, nnx.Param,
        nnx.Perturbation)`, `nnx.pop(model, nnx.Perturbation)`, `nnx.split(...,
        nnx.Perturbation, ...)`) in a function that differentiates with
        `nnx.DiffState(..., (..., nnx.Perturbation))` and does not use `nnx.capture`. The
        `DiffState` itself is reported by NNX202; this diagnostic points at the rest of the
        recipe and at its Tree Mode rewrite.

    Why is this bad?:
        The recipe (`self.perturb(...)` in the model, an eager `model(x)` to create the
        Perturbation attributes, `DiffState(0, (Param, Perturbation))`, `nnx.state(grads,
        ...)`, `nnx.pop`) depends on graph mode twice: the `DiffState` raises a ValueError
        when the `grad` is created, and perturbations created inside a transform would be
        dropped. Tree Mode's recipe: `_, perturbs = nnx.capture(model, nnx.Perturbation)(x)`,
        then `nnx.grad(loss, argnums=(0, 1))(model, perturbs)` with `nnx.capture(model,
        init=perturbs)(x)` inside the loss.

    References:
        - Patterns in the catalogue: [C3](../catalogue.md#c3)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX303"
    visits_nnx_calls_only = True
    facts_type = PerturbDiffStateRecipeFacts
    fixes = ("pin",)
    symbol = "perturb-diffstate-recipe"
    kind = "raises"
    catalogue = ("C3",)
    message = (
        "Perturbation gradients read here come from `nnx.DiffState(..., nnx.Perturbation)` (line "
        "{diffstate_line}): Tree Mode raises ValueError"
    )
    help = (
        "This is the graph-mode perturb recipe, and Tree Mode rejects its DiffState prefix filter "
        "(NNX202). Rewrite: `_, perturbs = nnx.capture(model, nnx.Perturbation)(x)`, then "
        "`nnx.grad(loss, argnums=(0, 1))(model, perturbs)` with `nnx.capture(model, init=perturbs)(x)` "
        "in the loss"
    )
    VALID = [
        Valid(
            "capture-recipe",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                def __call__(self, x):
                    x = self.perturb('grad_of_x', x)
                    return self.lin(x)

            def run():
                model, x = Model(nnx.Rngs(0)), jnp.ones((1, 2))
                @nnx.jit
                def step(model, x):
                    _, perturbs = nnx.capture(model, nnx.Perturbation)(x)
                    def loss_fn(model, perturbs):
                        y = nnx.capture(model, init=perturbs)(x)
                        return jnp.mean(y ** 2)
                    grads, interm_grads = nnx.grad(loss_fn, argnums=(0, 1))(model, perturbs)
                    return interm_grads
                return step(model, x)
            """,
        ),
        Valid(
            "compat-grad-recipe",
            """
            from flax import nnx

            def run(model, x, loss_fn):
                model(x)
                diff_state = nnx.DiffState(0, (nnx.Param, nnx.Perturbation))
                grads = nnx.compat.grad(loss_fn, argnums=diff_state)(model)
                grads, interm_grads = nnx.state(grads, nnx.Param, nnx.Perturbation)
                nnx.pop(model, nnx.Perturbation)
                return interm_grads
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "old-recipe",
            """
            import jax.numpy as jnp
            from flax import nnx

            def run(model, x):
                model(x)
                loss_fn = lambda m: jnp.mean(m(x) ** 2)
                diff_state = nnx.DiffState(0, (nnx.Param, nnx.Perturbation))
                grads = nnx.grad(loss_fn, argnums=diff_state)(model)
                grads, interm_grads = nnx.state(grads, nnx.Param, nnx.Perturbation)  # NNX303
                nnx.pop(model, nnx.Perturbation)
                return interm_grads
            """,
            tree_mode=raises("ValueError", "cannot contain `DiffState` objects"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """The old recipe with the flagged read-back API (``DiffState`` grad, then
        ``nnx.{state,pop,split}`` of the Perturbation state); the control is the
        ``nnx.capture`` recipe."""
        api = facts.api if facts.api in ("state", "pop", "split") else "state"
        model = dedented("""
            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)

                def __call__(self, x):
                    x = self.perturb('grad_of_x', x)
                    return self.lin(x)


            model, x = Model(nnx.Rngs(0)), jnp.ones((1, 2))
        """)
        read = {
            "state": "grads, interm_grads = nnx.state(grads, nnx.Param, nnx.Perturbation)\n"
                     "nnx.pop(model, nnx.Perturbation)",
            "pop": "interm_grads = nnx.state(grads, nnx.Perturbation)\nnnx.pop(model, nnx.Perturbation)",
            "split": "_, grads, interm_grads = nnx.split(grads, nnx.Param, nnx.Perturbation)",
        }[api]
        main = model + dedented("""
            model(x)  # creates the Perturbation attribute eagerly
            diff_state = nnx.DiffState(0, (nnx.Param, nnx.Perturbation))
            grads = nnx.grad(lambda m: jnp.mean(m(x) ** 2), argnums=diff_state)(model)
        """) + read + "\nreturn sorted(interm_grads.keys())\n"
        control = model + dedented("""
            _, perturbs = nnx.capture(model, nnx.Perturbation)(x)

            def loss_fn(model, perturbs):
                return jnp.mean(nnx.capture(model, init=perturbs)(x) ** 2)

            grads, interm_grads = nnx.grad(loss_fn, argnums=(0, 1))(model, perturbs)
            return sorted(interm_grads.keys())
        """)
        return Reproduction(main, expect_error="prefix-filter", control=control)

    def __init__(self, context) -> None:
        super().__init__(context)
        self._reported_scopes: set[int] = set()

    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        if call is None or call.name not in ("pop", "state", "split") or len(call.args) < 2:
            return
        if sown_state.sown_collection(self.context, call.args[1:]) != "Perturbation":
            return
        scope = node.scope()
        if id(scope) in self._reported_scopes or sown_state.uses_capture(self.context, scope):
            return
        diffstate = sown_state.perturb_recipe_diffstate(self.context, node)
        if diffstate is None:
            return
        self._reported_scopes.add(id(scope))
        pin = pin_sites_in(self.context, *(g for g in sown_state.grads_of(self.context, diffstate) if not self.context.keeps_graph_mode(g)))
        self.report(node, api=call.name, diffstate_line=diffstate.lineno,
                    diffstate=diffstate.as_string(), confidence="transform", pin=pin)
