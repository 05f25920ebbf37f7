"""NNX104 ``transform-returns-input``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from typing import ClassVar

from dataclasses import dataclass

from checkers.shared_references.messages import DUPLICATE, KIND_WORDS, describe_use, function_label, has_aux, short_source
from checkers.shared_references.returns import ReturnRule, input_facts
from checkers.shared_references.reproduction import (
    BOX,
    REPRO_TRANSFORMS,
    aliasing_reproduction,
    applied,
    dedented,
    shared_object,
    viewed,
)
from nnx_lint.api import ABSENT, Facts, Invalid, Reproduction, Valid, flax_table, programs, raises, returned_inputs


@dataclass(frozen=True, kw_only=True)
class TransformReturnsInputFacts(Facts):
    """What ``NNX104`` reports (the diagnostic's ``facts``, in this order)."""

    #: The shared object's paths, as flax's aliasing errors name them (``Facts.paths``).
    paths: ClassVar[tuple[tuple[str, ...], ...]] = (("position", "part"),)

    transform: str
    function: str
    form: str
    parameter: str | None
    position: int | None
    returned: str
    kind: str
    has_aux: bool
    evidence: str
    confidence: str
    part: str = ABSENT
    view: str | None = ABSENT
    duplicate_output: bool = ABSENT
    #: For an output built from another's Variables: where it holds them.
    held_at: str = ABSENT
    views: list = ABSENT
    pin: list


class TransformReturnsInput(ReturnRule):
    """An NNX-transformed function returns (part of) its input.

    What it does:
        Looks at the `return` values of functions given to NNX transforms (decorated,
        wrapped, lambdas, direct forms like `nnx.eval_shape(lambda m: m, model)` and
        `nnx.cond`) and flags a returned parameter, a returned Variable / submodule of
        it (`model.layer`, `model.kernel`), `nnx.state(param)` / `nnx.variables(param)` /
        a state group of `nnx.split(param)`, also inside a returned tuple, list, dict
        (`has_aux` outputs included). The parameter must be known to hold NNX state: an
        annotation, the arguments at the call sites in this file, a state view, or (marked
        `"confidence": "heuristic"`) a body that calls it or writes its Variables. flax's
        metrics (`nnx.MultiMetric`, `nnx.metrics.Average`, ...) hold Variables, and so does a
        project subclass of a flax layer or metric that stores nothing itself.
        `nnx.scan` / `fori_loop` / `while_loop` bodies return their carry by design and
        are skipped. Also flags one object returned twice, an object with its state
        (`return model, nnx.state(model)` after building `model` inside), or an object with
        another built from its Variables (`return model, SGD(nnx.variables(model, nnx.Param))`): Tree Mode rejects
        duplicate outputs too (`graph=True` alone still accepts them). Returning arrays (`m.kernel[...]`, `m(x)`), `nnx.clone(...)` or
        `nnx.graphdef(m)` stays silent. Respects the transform's opt-in.

    Why is this bad?:
        Tree Mode transforms reject input Variables returned as outputs: `ValueError:
        Duplicate Param(...) found at paths: .args[0].bias, .out.bias ... does not support
        Variable aliasing`. Inputs are updated in place, so returning them is unnecessary;
        return arrays or `nnx.clone(...)` copies instead. A very common graph-mode idiom
        hit by this is `return loss, (logits, nnx.state(model, nnx.BatchStat))` under
        `has_aux=True`.

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references) — patterns [A5](../catalogue.md#a5)
        - {spec}
    """

    code = "NNX104"
    facts_type = TransformReturnsInputFacts
    fixes = ("pin",)
    symbol = "transform-returns-input"
    kind = "raises"
    catalogue = ("A5",)
    message = (
        "`nnx.{transform}`-transformed `{function}` returns `{returned}`, (part of) its input "
        "`{parameter}`: Tree Mode raises ValueError"
    )
    help = (
        "Tree Mode rejects input Variables returned as outputs (ValueError: Duplicate ...). Inputs are "
        "updated in place: don't return them; return arrays or `nnx.clone(...)` copies"
    )
    VALID = [
        Valid(
            "in-place-clone-arrays-r05-fix",
            """
            import jax
            import jax.numpy as jnp
            from flax import nnx

            def run():
                model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                x = jnp.ones((1, 2))
                @nnx.jit
                def step(m):
                    m.kernel[...] += 1.0
                    return m(x).sum()
                loss = step(model)
                snap = nnx.jit(lambda m: nnx.clone(nnx.state(m)))(model)
                pure = nnx.jit(lambda m: jax.tree.map(lambda v: v[...], nnx.state(m),
                               is_leaf=lambda v: isinstance(v, nnx.Variable)))(model)
                (l, aux), g = nnx.value_and_grad(lambda m: (m(x).sum(), nnx.clone(nnx.state(m, nnx.Param))),
                                                 has_aux=True)(model)
                return loss, snap, pure, aux
            """,
        ),
        Valid(
            "scan-carry-and-arrays",
            """
            from flax import nnx

            @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))
            def body(model, x):
                return model, model(x)

            @nnx.jit
            def forward(model, x):
                return model(x), model.kernel[...], x, nnx.graphdef(model)

            @nnx.jit(graph=True, graph_updates=True)
            def identity(model: nnx.Linear):
                return model
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "returns-r05",
            """
            import jax.numpy as jnp
            from flax import nnx

            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            x = jnp.ones((1, 2))
            nnx.jit(lambda m: m)(model)  # NNX104
            nnx.jit(lambda m: m.kernel)(model)  # NNX104
            nnx.jit(lambda m: nnx.state(m))(model)  # NNX104
            nnx.value_and_grad(lambda m: (jnp.sum(m(x)), nnx.state(m)), has_aux=True)(model)  # NNX104
            nnx.eval_shape(lambda m: m, model)  # NNX104
            """,
            tree_mode=raises("ValueError", DUPLICATE),
        ),
        Invalid(
            "train-step-returns-model",
            """
            from flax import nnx

            @nnx.jit
            def train_step(model: nnx.Module, batch):
                loss = model(batch).mean()
                return loss, model  # NNX104
            """,
            tree_mode=raises("ValueError", DUPLICATE),
        ),
        Invalid(
            "returns-model-and-its-state",
            """
            from flax import nnx

            @nnx.jit
            def create(rngs):
                model = nnx.Linear(2, 2, rngs=rngs)
                state = nnx.state(model)
                return model, state  # NNX104
            """,
            tree_mode=raises("ValueError", DUPLICATE),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """The finding's transform over a function returning the same kind of part of its
        input at the same position: the input, an attribute (`m.kernel`), `nnx.state(m)` /
        a split group, inside `has_aux` aux for grad / value_and_grad; or an object built
        inside and returned with its state. Control: `nnx.clone(...)` of the returned part."""
        return _returned_input_reproduction(facts)
    finding_code = "NNX104"

    def finding(self, definition, uses, found):
        """A returned input, or one object returned twice (an object beside its state, or beside
        an object holding its Variables)."""
        if isinstance(found, returned_inputs.ReturnedInput) and found.construction is None:
            return found.expression, input_facts(definition, uses[0], found)
        if not isinstance(found, returned_inputs.DuplicateOutput):
            return None
        fields = {
            **describe_use(uses[0]),
            "function": function_label(definition),
            "parameter": None,
            "position": None,
            "returned": f"{short_source(found.first, 30)}` and `{short_source(found.second, 30)}",
            "kind": KIND_WORDS.get(found.kind, found.kind),
            "has_aux": has_aux(uses[0]),
            "evidence": found.evidence,
            "confidence": "static",
            "duplicate_output": True,
        }
        if found.held_at is not None:
            fields["held_at"] = found.held_at
        else:
            fields["views"] = list(found.views or (None, None))
        return found.value, fields

    def wording(self, fields):
        if fields.get("duplicate_output"):
            return _DUPLICATE_OUTPUT_MESSAGE, _DUPLICATE_OUTPUT_HELP
        return None, None


_DUPLICATE_OUTPUT_MESSAGE = (
    "`nnx.{transform}`-transformed `{function}` returns `{returned}`, one object twice: Tree Mode raises ValueError"
)


_DUPLICATE_OUTPUT_HELP = (
    "Tree Mode rejects duplicate outputs, including an object and its state (ValueError: Duplicate ...). "
    "Return it once and take `nnx.state(...)` outside the transform"
)


def _returned_input_reproduction(facts: Facts) -> Reproduction:
    """NNX104: the transformed function returns the finding's kind of part of its input
    (the input itself, an attribute, ``nnx.state`` / a split group, in ``has_aux`` aux),
    or builds an object and returns it twice."""
    transform = facts.transform
    if facts.duplicate_output:
        if facts.held_at:  # the second output holds the first one's Params (an optimizer built from them)
            holder = "class Holder(nnx.Pytree):\n    def __init__(self, params):\n        self.params = nnx.data(params)\n"
            returned = "m, Holder(nnx.variables(m, nnx.Param))"
        else:
            holder = ""
            returned = programs.items(*[viewed("m", None, view) for view in facts.views or [None, "state"]])
        body = dedented(holder, programs.filled("""
            def create():
                m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                return RETURNED
            nnx.jit(create)()
            return 'ran'
            """, expressions={"RETURNED": returned}))
        control = dedented("""
            def create():
                return nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            model = nnx.jit(create)()
            return len(nnx.state(model))
            """)
        return Reproduction(body, expect_error="aliasing", control=control)
    part, view = facts.part, facts.view
    kind = facts.kind
    if kind == "State":
        kind = "Module"
    holder = shared_object(kind if not part else "Module", [part])
    position = facts.position if isinstance(facts.position, int) else 0
    position = programs.bounded_index(position, "the argument position")
    label = programs.subscript("args" if transform not in flax_table.BRANCH_TRANSFORMS else "operands", position)
    parameter = "p%d" % position
    returned = viewed(parameter, part, view)
    if facts.has_aux or transform in flax_table.GRAD_TRANSFORMS:
        transform = transform if transform in flax_table.GRAD_TRANSFORMS else "value_and_grad"
    elif transform not in REPRO_TRANSFORMS:
        transform = "jit"
    definition, call = applied(transform, {label: "model"}, result=returned)
    fixed_definition, fixed_call = applied(transform, {label: "model"}, result=programs.call("nnx.clone", returned))
    body = dedented(BOX, programs.assign("model", holder), definition, call, "return 'ran'")
    control = dedented(BOX, programs.assign("model", holder), fixed_definition, fixed_call, "return 'ran'")
    return aliasing_reproduction(body, control, facts.transform)
