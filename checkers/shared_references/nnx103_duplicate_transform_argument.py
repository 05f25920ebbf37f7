"""NNX103 ``duplicate-transform-argument``: the rule, its examples and its reproduction builder."""
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
    shared_object,
    transform_stand_ins,
    viewed,
)
from nnx_lint.api import (
    ABSENT,
    Facts,
    Invalid,
    Reproduction,
    STATEFUL_KINDS,
    Valid,
    argument_views,
    fact_index,
    flax_table,
    object_flow,
    passed_here,
    pin_sites_in,
    programs,
    raises,
    returned_inputs,
    shared_objects,
    value_model,
)


#: The object-flow model's kinds this rule reports held twice inside one argument.
_MODULES_AND_VARIABLES = frozenset({"module", "variable"})


@dataclass(frozen=True, kw_only=True)
class DuplicateTransformArgumentFacts(Facts):
    """What ``NNX103`` reports (the diagnostic's ``facts``, in this order)."""

    #: The shared object's paths, as flax's aliasing errors name them (``Facts.paths``).
    paths: ClassVar[tuple[tuple[str, ...], ...]] = (("first_position",), ("second_position",))

    transform: str
    function: str
    form: str
    first: str
    second: str
    first_position: str
    second_position: str
    kinds: list
    first_part: str
    second_part: str
    first_view: str | None
    second_view: str | None
    confidence: str
    pin: list
    #: ``within``: one argument holds the object twice (``[v, v]``, ``Pair(a=m, b=m)``);
    #: ``tie``: two objects share a part after ``m2.kernel = m1.kernel``;
    #: ``held``: two arguments each hold it (``Container(v)`` twice).
    sharing: str = ABSENT
    #: For ``tie``: the statement that tied them.
    tie: str = ABSENT
    #: For ``within`` found by the object-flow model: ``must`` (one object at both paths on
    #: every run) or ``may`` (only on runs that take one side of a choice in the code).
    certainty: str = ABSENT
    #: For ``may``: the store that is one side of the choice.
    choice: str = ABSENT


class DuplicateTransformArgument(FamilyRule):
    """One object passed twice into an NNX transform (`f(m, m)`, `f(m, m.sub)`, `f(m, nnx.state(m))`).

    What it does:
        Flags a call of an NNX-transformed function (decorated with `@nnx.jit` & co.,
        wrapped as `nnx.jit(f)`, bound to a name, imported from another project module,
        or a direct form such as `nnx.eval_shape(f, ...)` / `nnx.cond(...)`) where two
        arguments (keywords included) are the same Module / Variable / Rngs / State, or
        one is a part of the other (`model` and `model.encoder`, `model` and
        `nnx.state(model)`, `model` and a state group of `nnx.split(model)`). Objects are
        followed through local assignments; a parameter's class comes from the calls of its
        function (in this file or in other project files) when they agree, and that call is
        a related location; unknown types stay silent.
        Also flagged: one argument that holds an object twice (`[v, v]`, `dict(a=p, b=p)`,
        `Pair(a=m, b=m)` when `Pair.__init__` stores both), also given to a graph API that
        checks aliasing (`nnx.split`, `nnx.state`, `nnx.graphdef`, `nnx.clone`, ...), and two
        arguments tied after construction (`m2.kernel = m1.kernel` before the call), and
        two arguments that each hold one object (`f(Container(v), Container(v))`). Through the
        object-flow model: one argument whose tree reaches one Module or Variable at two paths
        (`self.teacher = student if cfg.self_distill else build(rngs)`), on every run ("holds") or
        on the runs that take one side of a choice it names ("may hold", a default finding: Tree
        Mode raises on those runs; silent when the test is known false). Objects made in a loop or
        past the model's context bounds are never taken for one object. Silent where the flip
        changes nothing: the transform keeps graph mode (`graph=True, graph_updates=True`,
        `nnx.compat.*`, scope, or `graph=True` alone: graph mode takes shared inputs also
        with `graph_updates=False`) or already chooses Tree Mode (`graph=False`). Note that
        `graph_updates=False` alone does not: the transform runs in graph mode today and
        takes shared inputs, and raises once `graph` defaults to False (measured with flax
        0.12.8) -- except `nnx.eval_shape` and `nnx.custom_vjp`, which reject shared inputs
        as soon as `graph_updates=False`, whatever the defaults.

    Why is this bad?:
        Tree Mode transforms reject Variable aliasing among their inputs: `ValueError:
        Duplicate Param(...) found at paths: .args[0].bias, .args[1].bias ... does not
        support Variable aliasing`. In graph mode `nnx.grad(f, argnums=(0, 1))(m, m)`
        already put the whole gradient under the first argument. Pass the object once and
        use it twice inside, or pass an independent `nnx.clone(...)`; disjoint state
        groups (`nnx.split(m, nnx.Param, ...)`) are fine.

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references) — patterns [A4](../catalogue.md#a4)
        - {spec}
    """

    code = "NNX103"
    facts_type = DuplicateTransformArgumentFacts
    visits_transform_calls_only = True
    fixes = ("pin",)
    symbol = "duplicate-transform-argument"
    kind = "raises"
    #: Variable aliasing among the inputs is found when they are flattened (before tracing).
    stage = "inputs-flattened"
    catalogue = ("A4",)
    message = (
        "`{first}` and `{second}` share Variables, both passed to `nnx.{transform}`-transformed "
        "`{function}`: Tree Mode raises ValueError"
    )
    help = (
        "`{first}` ({first_position}) and `{second}` ({second_position}) are the same object or one "
        "holds the other, and Tree Mode rejects Variable aliasing among inputs (ValueError: Duplicate "
        "...). Pass it once and use it twice inside, or pass `nnx.clone(...)`"
    )
    VALID = [
        Valid(
            "once-or-clone-r04-fix",
            """
            import jax.numpy as jnp
            from flax import nnx

            def run():
                model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                x = jnp.ones((3, 2))
                f = lambda teacher, student, x: jnp.mean((teacher(x) - 2 * student(x)) ** 2)
                one = nnx.grad(lambda m, x: f(m, m, x))(model, x)
                teacher = nnx.clone(model)
                two = nnx.grad(f, argnums=(0, 1))(teacher, model, x)
                return one, two
            """,
        ),
        Valid(
            "disjoint-groups-plain-jax-opt-in",
            """
            import jax
            from flax import nnx

            def run(x):
                model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                graphdef, params, rest = nnx.split(model, nnx.Param, ...)
                step = nnx.jit(lambda p, r: nnx.merge(graphdef, p, r)(x))
                step(params, rest)
                jax.jit(lambda a, b: a)(params, params)
                nnx.jit(lambda a, b: a, graph=True, graph_updates=True)(model, model)
                other = nnx.Linear(2, 2, rngs=nnx.Rngs(1))
                nnx.jit(lambda a, b: a(x) + b(x))(model, other)
                nnx.jit(lambda a, b: a)(x, x)
            """,
        ),
        Valid(
            "blocks-built-by-one-constructor",
            """
            import jax.numpy as jnp
            from flax import nnx

            class ResidualBlock(nnx.Module):
                def __init__(self, channels, rngs):
                    self.conv1 = nnx.Conv(channels, channels, kernel_size=(3, 3), rngs=rngs)

            class CIFAR10Net(nnx.Module):
                def __init__(self, rngs):
                    self.block1 = ResidualBlock(8, rngs=rngs)
                    self.block2 = ResidualBlock(8, rngs=rngs)

            class Stack(nnx.Module):
                def __init__(self, rngs):
                    blocks = [ResidualBlock(8, rngs=rngs) for _ in range(2)]
                    self.first = blocks[0]
                    self.second = blocks[1]

            step = nnx.jit(lambda m, x: m.block1.conv1(x))
            for seed in range(3):
                step(CIFAR10Net(nnx.Rngs(seed)), jnp.ones((1, 4, 4, 8)))
            nnx.jit(lambda m: None)(Stack(nnx.Rngs(3)))
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "same-object-r04",
            """
            import jax.numpy as jnp
            from flax import nnx

            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            x = jnp.ones((3, 2))
            f = lambda teacher, student, x: jnp.mean((teacher(x) - student(x)) ** 2)
            nnx.jit(f)(model, model, x)  # NNX103
            nnx.vmap(f, in_axes=(None, None, 0))(model, model, x)  # NNX103
            nnx.grad(f, argnums=(0, 1))(model, model, x)  # NNX103
            """,
            tree_mode=raises("ValueError", DUPLICATE),
        ),
        Invalid(
            "object-and-its-part",
            """
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.encoder = nnx.Linear(2, 2, rngs=rngs)

            @nnx.jit
            def step(model, encoder, state):
                return None

            model = Model(nnx.Rngs(0))
            step(model, model.encoder, None)  # NNX103
            step(model, None, nnx.state(model))  # NNX103
            """,
            tree_mode=raises("ValueError", DUPLICATE),
        ),
        Invalid(
            "one-value-holds-it-twice-or-tied",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Pair(nnx.Module):
                def __init__(self, a, b):
                    self.a = a
                    self.b = b

            def run():
                v = nnx.Param(jnp.ones(2))
                nnx.split([v, v])  # NNX103
                lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                nnx.jit(lambda p: None)(Pair(a=lin, b=lin))  # NNX103
                other = nnx.Linear(2, 2, rngs=nnx.Rngs(1))
                other.kernel = lin.kernel
                nnx.jit(lambda a, b: None)(lin, other)  # NNX103
            """,
            tree_mode=raises("ValueError", DUPLICATE),
        ),
        Invalid(
            "two-arguments-hold-it",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Container(nnx.Module):
                def __init__(self, v):
                    self.v = v

            @nnx.jit
            def f(c1, c2):
                return c1.v[...] + c2.v[...]

            v = nnx.Param(jnp.ones(2))
            f(Container(v), Container(v))  # NNX103
            """,
            tree_mode=raises("ValueError", DUPLICATE),
        ),
        Invalid(
            "teacher-may-be-the-student",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Distiller(nnx.Module):
                def __init__(self, student, self_distill, rngs):
                    self.student = student
                    self.teacher = student if self_distill else nnx.Linear(2, 2, rngs=rngs)

            step = nnx.jit(lambda d, x: d.teacher(x) - d.student(x))
            pair = Distiller(nnx.Linear(2, 2, rngs=nnx.Rngs(0)), True, nnx.Rngs(1))
            step(pair, jnp.ones(2))  # NNX103

            def train(self_distill: bool):
                student = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                pair = Distiller(student, self_distill, nnx.Rngs(1))
                return step(pair, jnp.ones(2))  # NNX103
            """,
            tree_mode=raises("ValueError", DUPLICATE),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """The finding's transform called with one object at both argument positions
        (itself, a part of it, `nnx.state(...)` or a split group, as the facts say).
        pmap / shard_map / checkify / custom_vjp / scan are reproduced with nnx.jit (the
        same input check; tree_runtime lacks the first three). Control: an independent
        `nnx.clone(...)` at the second position."""
        return _duplicate_argument_reproduction(facts)

    #: One argument holds the object twice.
    within_message = (
        "`{first}` holds one {kinds[0]} at `{first_position}` and `{second_position}`, passed to "
        "`nnx.{transform}`: Tree Mode raises ValueError"
    )
    #: One argument that holds the object twice on one side of a choice (the object-flow model).
    #: The choice (``{choice}``) is the finding's related location, not in the message: it can be long.
    may_within_message = (
        "`{first}` may hold one {kinds[0]} at `{first_position}` and `{second_position}` for "
        "`nnx.{transform}`: Tree Mode raises ValueError then"
    )
    #: Two arguments that each hold the object.
    held_message = (
        "`{first}` and `{second}` both hold one {kinds[0]} (`{first_position}`), passed to `nnx.{transform}`: "
        "Tree Mode raises ValueError"
    )
    #: Two arguments that are one raw mutable array ref (``jax.new_ref``): no Variables.
    ref_message = (
        "`{first}` and `{second}` are one mutable array ref, both passed to `nnx.{transform}`-transformed "
        "`{function}`: Tree Mode raises ValueError"
    )
    #: Two arguments tied after construction.
    tie_message = (
        "`{first}` and `{second}` share a {kinds[1]} (`{tie}`), both given to `nnx.{transform}`: "
        "Tree Mode raises ValueError"
    )

    def visit_call(self, node: nodes.Call) -> None:
        use = fact_index(self.context).application(node)
        if use is None:
            self._graph_api_call(node)
            return
        if use.accepts_shared_inputs or use.name in flax_table.CARRY_LOOPS:
            return
        views = argument_views(self.context, [argument.expression for argument in use.arguments])
        refs = list(zip(use.arguments, views[0].refs))
        # the arguments as this function sees them, then as its callers do (`f(m, m)` calling
        # `def f(a, b): nnx.jit(g)(a, b)`)
        pair, via = None, ()
        for view in views:
            pair = shared_objects.overlapping_pair(self.classes, list(zip(use.arguments, view.refs)))
            if pair is not None:
                via = view.via
                break
        if pair is not None:
            first, ref_a, second, ref_b, kinds = pair
            first_part, second_part = shared_objects.relative_parts(ref_a, ref_b)
            self.report(
                node,
                message=self.ref_message if "ref" in kinds else None,
                **describe_use(use),
                first=short_source(first.expression),
                second=short_source(second.expression),
                first_position=first.label,
                second_position=second.label,
                kinds=[KIND_WORDS.get(k, k) for k in kinds],
                first_part=first_part,
                second_part=second_part,
                first_view=returned_inputs.view_of(self.context, first.expression),
                second_view=returned_inputs.view_of(self.context, second.expression),
                confidence="static",
                pin=pin_sites_in(self.context, use.transform),
                related=passed_here(self.context, first.expression, second.expression)
                + [(call, f"`{short_source(call.func)}` is called here with both") for call in via],
            )
            return
        if self._tied_pair(node, use, refs) or self._held_by_both(node, use):
            return
        for argument in use.arguments:
            if self._within(node, argument.expression, argument.label, describe_use(use), use.transform):
                return
        for argument in use.arguments:
            if self._model_within(node, argument.expression, argument.label, describe_use(use), use.transform):
                return

    def _model_within(self, node: nodes.Call, expression: nodes.NodeNG, label: str, described: dict,
                      pin_target) -> bool:
        """The object-flow model's answer for one argument of a project class
        (:func:`~nnx_lint.analysis.objects.guards.shared_inside`); ``may``: one step is one side
        of a choice in the code, named in the message. An Rngs held twice is NNX105's finding."""
        ref = self.classes.class_of(expression)
        shared = object_flow.shared_inside(object_flow.object_model(self.context), expression, _MODULES_AND_VARIABLES) \
            if ref is not None and ref.definition is not None else None
        if shared is None or (shared.certainty == "may" and not shared.choices):
            return False
        first, second, may = shared.first, shared.second, shared.certainty == "may"
        owners = [shared.root.definition] + [store.frame().parent for store in first.stores + second.stores]
        if any(isinstance(owner, nodes.ClassDef) and self.classes.construction(owner).aliases for owner in owners):
            return False  # a class's own construction shares it: NNX101's finding, with its opt-ins
        kind = {"module": "Module", "variable": "Variable"}[shared.target.kind]
        self.report(
            node, message=self.may_within_message if may else self.within_message, **described,
            first=short_source(expression), second=short_source(expression),
            first_position=label + first.text(), second_position=label + second.text(),
            kinds=[kind, kind], first_part="", second_part="", first_view=None, second_view=None,
            confidence="static", pin=pin_sites_in(self.context, pin_target), sharing="within",
            certainty=shared.certainty, choice=short_source(shared.choices[0]) if may else ABSENT,
            related=([(choice, "the choice: the object is shared on the runs that take this side")
                      for choice in shared.choices] + [(store, "stored here") for store in first.stores + second.stores]
                     )[:6],
        )
        return True

    def _held_by_both(self, node: nodes.Call, use) -> bool:
        """Two arguments that each hold one object below them (``Container(v)`` twice)."""
        values = value_model(self.context)
        arguments = use.arguments
        for i, first in enumerate(arguments):
            for second in arguments[i + 1:]:
                shared = values.shared_between(first.expression, second.expression)
                if shared is None:
                    continue
                kind = KIND_WORDS.get(shared.kind, shared.kind)
                self.report(
                    node, message=self.held_message, **describe_use(use),
                    first=short_source(first.expression), second=short_source(second.expression),
                    first_position=_element_label(first.label, shared.first_path),
                    second_position=_element_label(second.label, shared.second_path),
                    kinds=[kind, kind], first_part="", second_part="", first_view=None, second_view=None,
                    confidence="static", pin=pin_sites_in(self.context, use.transform), sharing="held",
                )
                return True
        return False

    def _tied_pair(self, node: nodes.Call, use, refs) -> bool:
        """Two arguments that share a part through a tie made before the call."""
        values = value_model(self.context)
        for i, (first, ref_a) in enumerate(refs):
            for second, ref_b in refs[i + 1:]:
                if ref_a is None or ref_b is None:
                    continue
                tie = values.tie_between(ref_a, ref_b, node)
                if tie is None:
                    continue
                kinds = [self.classes.kind_of(ref_a), self.classes.kind_of(tie.value)]
                if not all(kind in STATEFUL_KINDS for kind in kinds):
                    continue
                self._report_tie(node, use, first, second, kinds, tie.node.parent)
                return True
        return False

    def _report_tie(self, node, use, first, second, kinds, statement) -> None:
        self.report(
            node, message=self.tie_message, **describe_use(use),
            first=short_source(first.expression), second=short_source(second.expression),
            first_position=first.label, second_position=second.label,
            kinds=[KIND_WORDS.get(k, k) for k in kinds], first_part="", second_part="",
            first_view=None, second_view=None, confidence="static",
            pin=pin_sites_in(self.context, use.transform), sharing="tie", tie=short_source(statement),
            related=[(statement, "the tie: after it both objects hold this Variable")],
        )

    def _graph_api_call(self, node: nodes.Call) -> None:
        """``nnx.split([v, v])``: a graph API given a value that holds one object twice."""
        call = self.context.nnx_call(node)
        walked = call.graph_node_argument if call is not None else None
        if walked is None or call.name not in flax_table.ALIAS_CHECKING_GRAPH_APIS or call.via_partial:
            return
        if not self.context.flip_changes(call):
            return
        label = f"args[{call.args.index(walked)}]"
        self._within(node, walked, label, {"transform": call.name, "function": None, "form": "graph API"}, call)

    def _within(self, node: nodes.Call, expression: nodes.NodeNG, label: str, described: dict, pin_target) -> bool:
        shared = value_model(self.context).shared_within(expression)
        if shared is None or (shared.tie is None and self._nnx_container(shared.container)):
            return False  # an nnx.List/Dict/Sequential holding it twice is NNX102's finding
        kind = KIND_WORDS.get(shared.kind, shared.kind)
        self.report(
            node, message=self.within_message, **described,
            first=short_source(expression), second=short_source(expression),
            first_position=_element_label(label, shared.first_path),
            second_position=_element_label(label, shared.second_path),
            kinds=[kind, kind], first_part="", second_part="", first_view=None, second_view=None,
            confidence="static", pin=pin_sites_in(self.context, pin_target), sharing="within",
            related=[(shared.tie, "the tie: after it both places hold this Variable")] if shared.tie else None,
        )
        return True


    def _nnx_container(self, container: nodes.NodeNG | None) -> bool:
        call = self.context.nnx_call(container) if isinstance(container, nodes.Call) else None
        return call is not None and call.qualified_name in flax_table.CONTAINER_MODULES


def _element_label(label: str, path: str) -> str:
    """``args[0]`` and ``[1]`` -> ``args[0][1]``; ``a`` -> ``args[0].a`` (flax's path style)."""
    return f"{label}{path}" if path.startswith("[") else f"{label}.{path}"


def _duplicate_argument_reproduction(facts: Facts) -> Reproduction:
    """NNX103: one object (or it and its part / its state) at the finding's two positions;
    for ``sharing="within"`` one list holding it twice, for ``sharing="tie"`` two Linears
    tied by ``b.kernel = a.kernel`` (the user's own pattern, not a substitute)."""
    if facts.sharing == "within":
        return _within_reproduction(facts)
    if facts.sharing == "tie":
        return _tie_reproduction(facts)
    if facts.sharing == "held":
        return _held_reproduction(facts)
    kinds = facts.kinds or ["Module", "Module"]
    first_part, second_part = facts.first_part, facts.second_part
    kind = kinds[0] if not first_part else (kinds[1] if not second_part else "Module")
    shared = shared_object(kind, [first_part, second_part])
    first_label, second_label = facts.first_position or "args[0]", facts.second_position or "args[1]"
    first = viewed("shared", first_part, facts.first_view)
    second = viewed("shared", second_part, facts.second_view)
    definition, call = applied(facts.transform, {first_label: first, second_label: second})
    # the rewrite: pass the object once (the other position gets an independent copy)
    fixed = viewed(_independent_copy(kind, "shared"), second_part, facts.second_view)
    fixed_definition, fixed_call = applied(facts.transform, {first_label: first, second_label: fixed})
    body = dedented(BOX, programs.assign("shared", shared), definition, call, "return 'ran'")
    control = dedented(BOX, programs.assign("shared", shared), fixed_definition, fixed_call, "return 'ran'")
    return aliasing_reproduction(body, control, facts.transform)


def _within_reproduction(facts: Facts) -> Reproduction:
    """A list holding one object of the finding's kind twice, given to the finding's transform
    or graph API. Control: the second element an independent ``nnx.clone``."""
    kind = _buildable_kind(facts)
    shared = shared_object(kind, [])
    api = facts.transform

    def program(holder: str) -> str:
        if facts.form == "graph API":
            name = api if api in _GRAPH_API_CALLS else "split"
            return dedented(programs.assign("shared", shared), programs.assign("holder", holder),
                            programs.call(programs.attribute("nnx", name), "holder"), "return 'ran'")
        definition, call = applied(api, {"args[0]": "holder"})
        return dedented(BOX, programs.assign("shared", shared), programs.assign("holder", holder), definition, call,
                        "return 'ran'")

    if facts.form == "graph API":
        stand_ins = () if api in _GRAPH_API_CALLS else (
            "`nnx.split` stands for `nnx.%s`" % programs.identifier_or(api, "?"),)
    else:
        stand_ins = transform_stand_ins(api)
    return Reproduction(program("[shared, shared]"), expect_error="aliasing",
                        control=program(programs.items("shared", _independent_copy(kind, "shared"), kind="list")),
                        stand_ins=stand_ins)


def _buildable_kind(facts: Facts) -> str:
    """The finding's kind, when a program can build one such object; a Module otherwise."""
    kinds = facts.kinds or ["Module"]
    return kinds[0] if kinds[0] in ("Variable", "Module", "Rngs", "mutable array ref") else "Module"


def _independent_copy(kind: str | None, name: str) -> str:
    """Source text of an independent copy of ``name``: ``nnx.clone`` for NNX objects, a
    fresh ``jax.new_ref`` for a raw mutable array ref (not an NNX graph node)."""
    return shared_object(kind, []) if kind == "mutable array ref" else programs.call("nnx.clone", name)


def _held_reproduction(facts: Facts) -> Reproduction:
    """Two lists each holding one object of the finding's kind, given to the finding's
    transform at the finding's argument positions. Control: the second holds an independent
    copy."""
    kind = _buildable_kind(facts)
    shared = shared_object(kind, [])
    # `args[1].v` places the holder at args[1] (what it holds at `.v` is the shared object)
    definition, call = applied(facts.transform, {facts.first_position or "args[0]": "first",
                                                         facts.second_position or "args[1]": "second"})

    def program(second: str) -> str:
        return dedented(BOX, programs.assign("shared", shared), "first = [shared]",
                        programs.assign("second", programs.items(second, kind="list")), definition, call, "return 'ran'")

    return aliasing_reproduction(program("shared"), program(_independent_copy(kind, "shared")), facts.transform)


def _tie_reproduction(facts: Facts) -> Reproduction:
    """Two Linears, the second's kernel tied to the first's, both given to the finding's
    transform at the finding's positions. Control: the same without the tie."""
    first_label = facts.first_position or "args[0]"
    second_label = facts.second_position or "args[1]"
    definition, call = applied(facts.transform, {first_label: "a", second_label: "b"})
    models = "a = nnx.Linear(2, 2, rngs=nnx.Rngs(0))\nb = nnx.Linear(2, 2, rngs=nnx.Rngs(1))"
    body = dedented(BOX, models, "b.kernel = a.kernel", definition, call, "return 'ran'")
    control = dedented(BOX, models, definition, call, "return 'ran'")
    return aliasing_reproduction(body, control, facts.transform)


#: Graph APIs a ``within`` reproduction calls (all check aliasing in Tree Mode).
_GRAPH_API_CALLS = frozenset({"split", "state", "graphdef", "clone"})
