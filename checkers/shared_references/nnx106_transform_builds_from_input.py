"""NNX106 ``transform-builds-from-input``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from typing import ClassVar

from dataclasses import dataclass

from checkers.shared_references.messages import KIND_WORDS, describe_use
from checkers.shared_references.returns import ReturnRule, input_facts
from checkers.shared_references.reproduction import BOX, dedented, emit_tree, shared_object, tree_of
from nnx_lint.api import ABSENT, Facts, Invalid, Reproduction, Valid, join_path, programs, raises, returned_inputs


@dataclass(frozen=True, kw_only=True)
class TransformBuildsFromInputFacts(Facts):
    """What ``NNX106`` reports (the diagnostic's ``facts``, in this order)."""

    #: The shared object's paths, as flax's aliasing errors name them (``Facts.paths``).
    paths: ClassVar[tuple[tuple[str, ...], ...]] = (("stored_path",),)

    transform: str
    function: str
    form: str
    parameter: str
    position: int
    returned: str | None
    kind: str
    has_aux: bool
    evidence: str
    confidence: str
    part: str = ABSENT
    view: str | None = ABSENT
    class_name: str
    stored_path: str
    pin: list


class TransformBuildsFromInput(ReturnRule):
    """A transform builds a Module that stores the transform's own input (`nnx.jit(Model)(rngs)`).

    What it does:
        Flags `nnx.jit(Model)(rngs)`, `nnx.eval_shape(Model, rngs)`,
        `nnx.eval_shape(lambda r: Model(r), rngs)` and transformed factory functions
        returning `Model(rngs)`, where `Model` (a project class, replayed as in NNX101)
        keeps that argument as it is (`self.rngs = rngs`, or passes it to a child that
        does). Creating the `Rngs` inside the transformed function
        (`nnx.eval_shape(lambda: Model(nnx.Rngs(0)))`) or storing `rngs.fork()` stays
        silent. Respects the transform's opt-in.

    Why is this bad?:
        The output then holds the input's Variables, which Tree Mode transforms reject:
        `ValueError: Duplicate RngCount(...) found at paths: .args[0].default.count,
        .out.rngs.default.count ... does not support Variable aliasing`.

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references) — patterns [A8](../catalogue.md#a8)
        - {spec}
    """

    code = "NNX106"
    facts_type = TransformBuildsFromInputFacts
    fixes = ("pin",)
    symbol = "transform-builds-from-input"
    kind = "raises"
    catalogue = ("A8",)
    message = (
        "`nnx.{transform}` builds `{class_name}`, which keeps its input `{parameter}` at "
        "`.{stored_path}`: Tree Mode raises ValueError"
    )
    help = (
        "The output aliases the input {kind}, which Tree Mode rejects (ValueError: Duplicate ...). "
        "Create the Rngs inside the transformed function, or store `rngs.fork()` in `{class_name}`"
    )
    VALID = [
        Valid(
            "rngs-created-inside-or-forked",
            """
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                    self.rngs = rngs

            class Forked(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                    self.rngs = rngs.fork()

            a = nnx.jit(lambda: Model(nnx.Rngs(0)))()
            b = nnx.eval_shape(lambda: Model(rngs=nnx.Rngs(0)))
            c = nnx.jit(Forked)(nnx.Rngs(0))
            d = nnx.eval_shape(Forked, nnx.Rngs(0))
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "jit-and-eval-shape-r85",
            """
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                    self.rngs = rngs

            a = nnx.jit(Model)(nnx.Rngs(0))  # NNX106
            b = nnx.eval_shape(Model, nnx.Rngs(0))  # NNX106
            c = nnx.eval_shape(lambda r: Model(r), nnx.Rngs(0))  # NNX106

            @nnx.jit
            def create(rngs: nnx.Rngs):
                return Model(rngs)  # NNX106
            """,
            tree_mode=raises("ValueError", "Duplicate RngCount"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """`nnx.jit` / `nnx.eval_shape` applied to the class itself or to a function
        building it, given an argument of the finding's kind at the finding's position,
        which the class stores at `stored_path`. Control: the argument created inside."""
        return _builds_from_input_reproduction(facts)
    finding_code = "NNX106"

    def finding(self, definition, uses, found):
        """An input stored in an object the function builds and returns, or in the object a
        transformed class builds."""
        if isinstance(found, returned_inputs.ReturnedInput) and found.construction is not None:
            return found.construction, input_facts(definition, uses[0], found)
        if not isinstance(found, returned_inputs.StoredInput):
            return None
        return found.use.call, {
            **describe_use(found.use),
            "function": definition.name,
            "class_name": definition.name,
            "parameter": found.parameter,
            "position": found.position,
            "returned": None,
            "stored_path": join_path(found.stored_path),
            "kind": KIND_WORDS.get(found.kind, found.kind),
            "has_aux": False,
            "evidence": "call-site",
            "confidence": "static",
        }


def _builds_from_input_reproduction(facts: Facts) -> Reproduction:
    """NNX106: a transform builds the finding's class from an argument the class stores."""
    class_name = programs.identifier_or(facts.class_name, "Model")
    kind = facts.kind or "Rngs"
    argument = shared_object(kind, [])
    position = facts.position if isinstance(facts.position, int) else 0
    position = programs.bounded_index(position, "the argument position")
    parameters = ["p%d" % i for i in range(position)] + ["arg"]
    stored = facts.stored_path or "rngs"
    tree = tree_of([(stored, "arg")])
    stores = [programs.set_attribute("self", name, emit_tree(child)) for name, child in tree.items()
              if isinstance(name, str)]
    model = programs.filled("class CLASS(nnx.Module):\n    INIT\n", {"CLASS": class_name},
                            statements={"INIT": programs.function("__init__", ["self", *parameters], stores)})
    arguments = ["jnp.ones(2)"] * position + [argument]
    transform = facts.transform if facts.transform in ("jit", "eval_shape") else "jit"
    direct = facts.function == facts.class_name
    function = class_name if direct else programs.lambda_function(parameters, programs.call(class_name, *parameters))
    if transform == "eval_shape":
        call = programs.call("nnx.eval_shape", function, *arguments)
    else:
        call = programs.call(programs.call("nnx.jit", function), *arguments)
    body = dedented(BOX, model, call, "return 'ran'")
    # the rewrite: create the argument inside the transformed function
    inside = programs.lambda_function([], programs.call(class_name, *arguments))
    fixed = (programs.call("nnx.eval_shape", inside) if transform == "eval_shape"
             else programs.call(programs.call("nnx.jit", inside)))
    control = dedented(BOX, model, fixed, "return 'ran'")
    return Reproduction(body, expect_error="aliasing", control=control)
