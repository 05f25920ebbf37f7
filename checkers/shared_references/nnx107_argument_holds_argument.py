"""NNX107 ``argument-holds-argument``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from typing import ClassVar

from dataclasses import dataclass

from astroid import nodes

from checkers.shared_references.messages import DUPLICATE, KIND_WORDS, describe_use, short_source
from checkers.shared_references.base import FamilyRule
from checkers.shared_references.reproduction import (
    BOX,
    aliasing_reproduction,
    applied,
    dedented,
    emit_tree,
    shared_object,
    tree_of,
)
from nnx_lint.api import (
    ArgumentView,
    Facts,
    Invalid,
    Reproduction,
    STATEFUL_KINDS,
    Valid,
    argument_views,
    fact_index,
    flax_table,
    held_items,
    join_path,
    object_flow,
    opaque_builder,
    pin_sites_in,
    programs,
    raises,
)


#: The objects whose second path among a transform's inputs Tree Mode rejects.
_HELD_KINDS = frozenset({"module", "variable", "rngs"})


@dataclass(frozen=True, kw_only=True)
class ArgumentHoldsArgumentFacts(Facts):
    """What ``NNX107`` reports (the diagnostic's ``facts``, in this order)."""

    #: The shared object's paths, as flax's aliasing errors name them (``Facts.paths``).
    paths: ClassVar[tuple[tuple[str, ...], ...]] = (("held_position",), ("holder_position", "held_path"))

    transform: str
    function: str
    form: str
    holder: str
    holder_class: str
    holder_position: str
    held: str
    held_path: str
    held_position: str
    kind: str
    confidence: str
    pin: list


class ArgumentHoldsArgument(FamilyRule):
    """A transform argument holds another argument (`ModelAndOptimizer` passed with its model).

    What it does:
        Flags a call of an NNX-transformed function where one argument was built holding
        another one: `nnx.ModelAndOptimizer(model, tx)` (it keeps `.model`) passed next to
        `model`, a project container class (a `TrainState`-like `nnx.Pytree`), a dataclass,
        `flax.struct` dataclass, NamedTuple or dict that keeps the model, or a model that keeps
        the `rngs` also passed. The arguments are also seen as the callers of the enclosing
        function pass them (`measure(model, optimizer, x)` with the optimizer built by the
        caller) and as a project function returns them (`model, optimizer = make(tx)`). `nnx.Optimizer` does not
        hold the model and stays silent. Respects the transform's opt-in.

    Why is this bad?:
        The held object is reachable twice among the inputs; Tree Mode transforms raise
        `ValueError: Duplicate Param(...) found at paths: .args[0].bias,
        .args[1].model.bias ... does not support Variable aliasing`. Use `nnx.Optimizer`
        (which does not hold the model) with `optimizer.update(model, grads)`, or pass only
        the holder.

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references) — patterns [A9](../catalogue.md#a9), [A7](../catalogue.md#a7)
        - {spec}
    """

    code = "NNX107"
    facts_type = ArgumentHoldsArgumentFacts
    visits_transform_calls_only = True
    fixes = ("pin",)
    symbol = "argument-holds-argument"
    kind = "raises"
    #: Variable aliasing among the inputs is found when they are flattened (before tracing).
    stage = "inputs-flattened"
    catalogue = ("A9",)
    message = (
        "`{holder}` holds `{held}` at `.{held_path}`; both passed to `nnx.{transform}`-transformed "
        "`{function}`: Tree Mode raises ValueError"
    )
    help = (
        "`{holder}` is {holder_position} and `{held}` is {held_position}: Tree Mode rejects the "
        "duplicate Variables (ValueError: Duplicate ...). Pass only one of them; for optimizers use "
        "`nnx.Optimizer` (it does not hold the model) with `optimizer.update(model, grads)`"
    )
    #: Audit mode (``--strict``): an argument built by a call whose code cannot be read, from
    #: another argument (``optimizer = make_optimizer(model)``, ``make_optimizer`` from elsewhere).
    unproven_message = (
        "`{value}` may hold another argument of the `nnx.{transform}`-transformed call ({reason}): "
        "if it keeps it, Tree Mode raises ValueError (Duplicate ...)"
    )
    VALID = [
        Valid(
            "optimizer-r81-fix",
            """
            import jax.numpy as jnp
            import optax
            from flax import nnx

            def run():
                model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
                @nnx.jit
                def train_step(model, optimizer, x):
                    grads = nnx.grad(lambda m: jnp.sum(m(x) ** 2))(model)
                    optimizer.update(model, grads)
                train_step(model, optimizer, jnp.ones((1, 2)))
                return int(optimizer.step[...])
            """,
        ),
        Valid(
            "holder-alone",
            """
            import optax
            from flax import nnx

            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            optimizer = nnx.ModelAndOptimizer(model, optax.sgd(0.1))

            @nnx.jit
            def train_step(optimizer, x):
                return optimizer.model(x)

            train_step(optimizer, None)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "model-and-optimizer-r81",
            """
            import jax.numpy as jnp
            import optax
            from flax import nnx

            def run():
                model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                optimizer = nnx.ModelAndOptimizer(model, optax.sgd(0.1))
                @nnx.jit
                def train_step(model, optimizer, x):
                    grads = nnx.grad(lambda m: jnp.sum(m(x) ** 2))(model)
                    optimizer.update(grads)
                train_step(model, optimizer, jnp.ones((1, 2)))  # NNX107
            """,
            tree_mode=raises("ValueError", DUPLICATE),
        ),
        Invalid(
            "holder-built-by-the-caller",
            """
            import optax
            from flax import nnx

            def train_step(model, optimizer, x):
                optimizer.update(nnx.grad(lambda m: m(x).sum())(model))

            def measure(model, optimizer, x):
                return nnx.jit(train_step).lower(model, optimizer, x)  # NNX107

            def main(x):
                model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                optimizer = nnx.ModelAndOptimizer(model, optax.sgd(0.1))
                measure(model, optimizer, x)
            """,
            tree_mode=raises("ValueError", DUPLICATE),
        ),
        Invalid(
            "model-keeps-rngs-also-passed",
            """
            from flax import nnx

            class Noisy(nnx.Module):
                def __init__(self, rngs):
                    self.rngs = rngs

            rngs = nnx.Rngs(0)
            model = Noisy(rngs)
            nnx.jit(lambda m, r: None)(model, rngs)  # NNX107
            """,
            tree_mode=raises("ValueError", "Duplicate RngCount"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """The holder (a real `nnx.ModelAndOptimizer`, else a Module keeping the held
        object at `held_path`) and the held object at the finding's positions of the
        finding's transform. Control: `nnx.Optimizer` (the r81 fix) or an independent copy."""
        return _argument_holds_argument_reproduction(facts)

    def visit_call(self, node: nodes.Call) -> None:
        use = fact_index(self.context).application(node)
        if use is None or use.accepts_shared_inputs or use.name in flax_table.CARRY_LOOPS:
            return
        # the arguments as this function sees them, then as its callers do (`measure(model,
        # optimizer, x)` called with `optimizer = nnx.ModelAndOptimizer(model, tx)`)
        views = argument_views(self.context, [argument.expression for argument in use.arguments])
        for view in views:
            if self._holder_in(node, use, view):
                return
        if self._holder_in_the_model(node, use):
            return
        for view in views:
            if self._opaque_holder_in(node, use, view):
                return

    def _holder_in_the_model(self, node: nodes.Call, use) -> bool:
        """What the argument views do not follow, from the object-flow model: arguments read from
        ``self`` (a trainer's ``self._train_step(self.model, self.optimizer, x)``, its transform
        stored on an attribute). Asked only when an argument is such an attribute."""
        arguments = use.arguments
        if not any(isinstance(a.expression, nodes.Attribute) and isinstance(a.expression.expr, nodes.Name)
                   and a.expression.expr.name == "self" for a in arguments):
            return False
        model = object_flow.object_model(self.context)
        for holder in arguments:
            for other in arguments:
                if other is holder:
                    continue
                held = {o for o in model.objects(other.expression) if o.proven and o.kind in _HELD_KINDS}
                found = object_flow.reached_from(model, holder.expression, held)
                if found is None:
                    continue
                root, path, obj = found
                holder_text = short_source(holder.expression)
                self.report(
                    node, **describe_use(use), holder=holder_text,
                    holder_class=(root.class_name or "").rpartition(".")[2] or None,
                    holder_position=holder.label, held=short_source(other.expression),
                    held_path=path.text().lstrip("."), held_position=other.label,
                    kind=KIND_WORDS.get(obj.kind, obj.kind), confidence="static",
                    pin=pin_sites_in(self.context, use.transform),
                    related=[*[(store, f"`{holder_text}` is built holding it here") for store in path.stores[:1]
                               if store.root() is self.context.module],
                             (use.transform.node, f"transformed by `nnx.{use.name}` here")],
                )
                return True
        return False

    def _opaque_holder_in(self, node: nodes.Call, use, view: ArgumentView) -> bool:
        """Audit mode: an argument built by a call the analysis cannot read from another
        stateful argument (``optimizer = make_optimizer(model)``): it may keep it."""
        arguments = use.arguments
        for position, holder in enumerate(arguments):
            if view.expressions[position] is None:
                continue
            built = opaque_builder(self.context, view.expressions[position])
            if built is None:
                continue
            for other, other_ref in zip(arguments, view.refs):
                if other is holder or other_ref is None or self.classes.kind_of(other_ref) not in STATEFUL_KINDS:
                    continue
                given = next((argument for argument, ref in built.passed if ref.overlaps(other_ref)), None)
                if given is None:
                    continue
                kind = "imported from outside the project" if built.outside else "a callable the analysis cannot follow"
                reason = (f"it is built by `{short_source(built.call.func)}(...)`, {kind}, "
                          f"from `{short_source(given)}` ({other.label})")
                self.report_unproven(node, value=short_source(holder.expression), reason=reason,
                                     transform=use.name,
                                     related=[(built.call, f"`{short_source(holder.expression)}` is built here"),
                                              *[(call, f"`{short_source(call.func)}` is called here with both")
                                                for call in view.via],
                                              (use.transform.node, f"transformed by `nnx.{use.name}` here")])
                return True
        return False

    def _holder_in(self, node: nodes.Call, use, view: ArgumentView) -> bool:
        arguments = use.arguments
        for position, holder in enumerate(arguments):
            held = held_items(self.context, view.expressions[position], view.refs[position], view.substitutions)
            if held is None:
                continue
            construction, items = held
            for path, held_ref in items:
                if held_ref is None:
                    continue
                for other, other_ref in zip(arguments, view.refs):
                    if other is holder or other_ref is None or not other_ref.overlaps(held_ref):
                        continue
                    kind = self.classes.kind_of(other_ref)
                    if kind not in STATEFUL_KINDS:
                        continue
                    cls = self.classes.class_of(construction) if isinstance(construction, nodes.Call) else None
                    holder_text = short_source(holder.expression)
                    self.report(
                        node,
                        **describe_use(use),
                        holder=holder_text,
                        holder_class=cls.short_name if cls else None,
                        holder_position=holder.label,
                        held=short_source(other.expression),
                        held_path=join_path(path),
                        held_position=other.label,
                        kind=KIND_WORDS.get(kind, kind),
                        confidence="static",
                        pin=pin_sites_in(self.context, use.transform),
                        related=[(construction, f"`{holder_text}` is built holding it here"),
                                 *[(call, f"`{short_source(call.func)}` is called here with both")
                                   for call in view.via],
                                 (use.transform.node, f"transformed by `nnx.{use.name}` here")],
                    )
                    return True
        return False


def _argument_holds_argument_reproduction(facts: Facts) -> Reproduction:
    """NNX107: an argument built holding another argument, both passed to the transform."""
    kind = facts.kind or "Module"
    held = shared_object(kind, [])
    holder_label, held_label = facts.holder_position or "args[1]", facts.held_position or "args[0]"
    if facts.holder_class == "ModelAndOptimizer":
        setup = programs.lines("import optax", programs.assign("held", held),
                               "holder = nnx.ModelAndOptimizer(held, optax.sgd(0.1))")
        fixed_setup = programs.lines("import optax", programs.assign("held", held),
                                     "holder = nnx.Optimizer(held, optax.sgd(0.1), wrt=nnx.Param)")
    else:
        path = facts.held_path or "model"
        tree = tree_of([(path, "held")])
        setup = programs.lines(programs.assign("held", held), programs.assign("holder", emit_tree(tree)))
        fixed_setup = programs.lines(programs.assign("held", held),
                                     programs.assign("holder", emit_tree(tree_of([(path, "nnx.clone(held)")]))))
    definition, call = applied(facts.transform, {holder_label: "holder", held_label: "held"})
    # the rewrite differentiates the model only (an nnx.Optimizer holds integer state)
    fixed_definition, fixed_call = applied(facts.transform, {holder_label: "holder", held_label: "held"},
                                            differentiated=[held_label])
    body = dedented(BOX, setup, definition, call, "return 'ran'")
    control = dedented(BOX, fixed_setup, fixed_definition, fixed_call, "return 'ran'")
    return aliasing_reproduction(body, control, facts.transform)
