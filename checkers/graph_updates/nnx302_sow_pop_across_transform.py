"""NNX302 ``sow-pop-across-transform``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from checkers.graph_updates.reproduction import dedented, under
from nnx_lint.api import (
    ABSENT,
    Facts,
    Invalid,
    Reproduction,
    Rule,
    TransformedCode,
    Valid,
    differs,
    entry_pin_target,
    fact_index,
    flax_table,
    helper_summaries,
    pin_sites_in,
    programs,
    root_name,
    sown_state,
    transformed_code,
)


@dataclass(frozen=True, kw_only=True)
class SowPopAcrossTransformFacts(Facts):
    """What ``NNX302`` reports (the diagnostic's ``facts``, in this order)."""

    api: str
    model: str
    collection: str
    collection_lower: str
    transform: str
    transform_line: int
    entry: str
    confidence: str
    pin: list
    #: The project helpers the pop happens in, outermost first (only when through helpers).
    helpers: list = ABSENT


class SowPopAcrossTransform(Rule):
    """`nnx.pop` / `nnx.state` of sown intermediates after a transformed forward pass.

    What it does:
        Flags `nnx.pop(model, nnx.Intermediate)` (also `nnx.Perturbation`, and
        `nnx.state(model, nnx.Intermediate)`) when `model` was passed, earlier in the same
        function, to a function transformed by a Tree Mode NNX transform (`step(model, x)`
        with `step = nnx.jit(...)` or decorated, `nnx.jit(f)(model, x)`). Also when the pop
        happens inside a project helper (`take_sown(model)` with `def take_sown(m): return
        nnx.pop(m, nnx.Intermediate)`, also through helpers it calls and in other files):
        the finding is at the helper's call, with the pop as a related location. Popping
        inside the transform that ran the forward pass stays silent.

    Why is this bad?:
        `self.sow(...)` creates a new `Intermediate` attribute on first use. Inside a Tree
        Mode transform that attribute lands on the per-call copy and is dropped, so
        `nnx.pop` after the call silently returns an empty State (`{}`) — or, when an eager
        call created the attribute first, a mix that depends on call order. Use
        `y, intermediates = nnx.capture(model, nnx.Intermediate)(x)` inside the transform
        (or around it) instead.

    References:
        - Patterns in the catalogue: [C2](../catalogue.md#c2)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX302"
    facts_type = SowPopAcrossTransformFacts
    fixes = ("pin",)
    symbol = "sow-pop-across-transform"
    kind = "silent"
    catalogue = ("C2",)
    message = (
        "`nnx.{api}({model}, nnx.{collection})` after `{model}` ran under `nnx.{transform}` (line "
        "{transform_line}) is silently empty in Tree Mode"
    )
    #: The pop happens inside project helpers (:mod:`nnx_lint.analysis.summaries`).
    helper_message = (
        "`{helpers[0]}(...)` runs `nnx.{api}(..., nnx.{collection})` on `{model}` after it ran under "
        "`nnx.{transform}` (line {transform_line}): silently empty in Tree Mode"
    )
    help = (
        "In Tree Mode the {collection} attributes sown inside the transform are dropped. Use `out, "
        "{collection_lower} = nnx.capture({model}, nnx.{collection})(...)` inside the transform (or "
        "around the transformed call) instead"
    )
    VALID = [
        Valid(
            "capture-inside-and-around",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Foo(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                def __call__(self, x):
                    y = self.lin(x)
                    self.sow(nnx.Intermediate, 'y_mean', jnp.mean(y))
                    return y

            def run():
                x = jnp.ones((1, 2))
                model = Foo(nnx.Rngs(0))
                @nnx.jit
                def forward(m, x):
                    return nnx.capture(m, nnx.Intermediate)(x)
                y, interms = forward(model, x)
                y2, interms2 = nnx.capture(nnx.jit(lambda m, x: m(x)), nnx.Intermediate)(model, x)
                return dict(interms), dict(interms2)
            """,
        ),
        Valid(
            "pop-in-same-transform-and-eager",
            """
            from flax import nnx

            @nnx.jit
            def train_step(model, x):
                y = model(x)
                intermediates = nnx.pop(model, nnx.Intermediate)
                return y, intermediates

            def eager(model, x):
                model(x)
                return nnx.pop(model, nnx.Intermediate)

            def opted_in(model, x):
                nnx.compat.jit(lambda m, x: m(x))(model, x)
                return nnx.pop(model, nnx.Intermediate)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "pop-after-jit",
            """
            import jax.numpy as jnp
            from flax import nnx

            def run(m2, x):
                nnx.jit(lambda m, x: m(x))(m2, x)
                jitted = nnx.pop(m2, nnx.Intermediate)  # NNX302
                return jitted
            """,
            tree_mode=differs("nnx.pop returns an empty State ({}) instead of the sown value"),
        ),
        Invalid(
            "decorated-step-then-state",
            """
            from flax import nnx

            @nnx.jit
            def forward(model, x):
                return model(x)

            def evaluate(model, batches):
                for x in batches:
                    forward(model, x)
                    acts = nnx.state(model, nnx.Intermediate)  # NNX302
                return acts
            """,
            tree_mode=differs("nnx.state(model, nnx.Intermediate) is empty after the jitted call"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """A module that sows (or perturbs) in ``__call__``, run once through the flagged
        transform, then ``nnx.pop``/``nnx.state`` of the collection: the observation is the
        names found. The control captures inside the transform with ``nnx.capture``."""
        collection = "Perturbation" if facts.collection == "Perturbation" else "Intermediate"
        api = "state" if facts.api == "state" else "pop"
        record = ("x = self.perturb('grad_of_x', x)\ny = self.lin(x)" if collection == "Perturbation"
                  else "y = self.lin(x)\nself.sow(nnx.Intermediate, 'y_mean', jnp.mean(y))")
        name = "grad_of_x" if collection == "Perturbation" else "y_mean"
        transform = facts.transform
        if transform in flax_table.MAPPING_TRANSFORMS:
            transform = "jit"  # graph-mode vmap needs out_axes for the sown value; the copy is the same
        model = programs.filled("""
            class Foo(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)

                def __call__(self, x):
                    RECORD
                    return y


            model = Foo(nnx.Rngs(0))
            x = jnp.ones((1, 2))
        """, statements={"RECORD": record})
        statement, note = under(transform, "forward", "model, x", loss="jnp.sum(model(x))")
        main = model + dedented("""
            def forward(m, x):
                return m(x)
        """) + note + programs.lines(statement, programs.filled(
            "return sorted(nnx.API(model, nnx.COLLECTION).keys())", {"API": api, "COLLECTION": collection}))
        control = model + programs.filled("""
            @nnx.jit
            def forward(m, x):
                return nnx.capture(m, nnx.COLLECTION)(x)

            y, captured = forward(model, x)
            return sorted(captured.keys())
        """, {"COLLECTION": collection})
        return Reproduction(main, expect_tree=[], expect_graph=[name], control=control)

    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        if call is not None:
            if call.name in ("pop", "state") and len(call.args) >= 2:
                self._check(node, call, call.args[0], ())
            return
        for argument, graph_call in helper_summaries(self.context).graph_calls_through(node):
            if graph_call.call.name in ("pop", "state") and len(graph_call.call.args) >= 2:
                self._check(node, graph_call.call, argument, graph_call.chain)

    def _check(self, node: nodes.Call, call, argument: nodes.NodeNG, helpers: tuple[str, ...]) -> None:
        """``call`` pops/reads sown state of ``argument`` (at ``node``, directly or in helpers)."""
        collection = sown_state.sown_collection(self.context, call.args[1:])
        if collection is None:
            return
        model = root_name(argument)
        if model is None or not isinstance(argument, nodes.Name):
            return
        if collection == "Perturbation" and sown_state.perturb_recipe_diffstate(self.context, node) is not None:
            return  # NNX303 tells the whole perturb story
        service = transformed_code(self.context)
        scope = node.scope()
        if sown_state.uses_capture(self.context, scope):
            return
        found = _earlier_transformed_call(self.context, service, scope, node, model.name)
        if found is None:
            return
        transform_call, entry = found
        facts = dict(
            api=call.name,
            model=model.name,
            collection=collection,
            collection_lower=collection.lower() + "s",
            transform=entry.transform,
            transform_line=transform_call.lineno,
            entry=getattr(entry.function, "name", "<lambda>"),
            confidence="transform",
            pin=pin_sites_in(self.context, entry_pin_target(entry)),
        )
        if not helpers:
            self.report(node, **facts)
            return
        self.report(node, message=self.helper_message, helpers=list(helpers), **facts,
                    related=[(call.node, f"`nnx.{call.name}` of the sown {collection_word(collection)} "
                                         f"in `{helpers[-1]}`")])


def collection_word(collection: str) -> str:
    """``intermediates`` / ``perturbations``."""
    return collection.lower() + "s"


def _earlier_transformed_call(context, service: TransformedCode, scope, node: nodes.Call, model: str):
    """The last call before ``node`` in ``scope`` that passes ``model`` to a Tree Mode
    transformed function, with its entry."""
    best = None
    for call in fact_index(context).calls_in(scope):
        if call.lineno is None or call.lineno >= node.lineno or call.scope() is not scope:
            continue
        if not any(isinstance(a, nodes.Name) and a.name == model for a in call.args) and not any(
                isinstance(k.value, nodes.Name) and k.value.name == model for k in call.keywords or []):
            continue
        entry = service.transforms.running_entry(call)
        if entry is None or not entry.affected:
            continue
        if best is None or call.lineno > best[0].lineno:
            best = (call, entry)
    return best
