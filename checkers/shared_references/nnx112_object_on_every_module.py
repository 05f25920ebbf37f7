"""NNX112 ``object-on-every-module``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from typing import ClassVar

from dataclasses import dataclass

from astroid import nodes

from checkers.shared_references.messages import short_source
from checkers.shared_references.base import FamilyRule
from nnx_lint.api import (
    Facts,
    Invalid,
    Reproduction,
    SHARED_KINDS,
    Valid,
    bound_values,
    fact_index,
    flax_table,
    inside,
    lookup,
    names_rngs,
    programs,
    raises,
    value_model,
)

#: The kinds of :meth:`nnx_lint.analysis.classes.ClassModel.kind_of`, as the facts and messages name them.
_KIND_WORDS = {"rngs": "Rngs", "variable": "Variable", "module": "Module", "state": "State", "ref": "mutable array"}
#: What the reproduction stores, by the finding's kind (a State or a raw ref: an Rngs stands in).
_SHARED_VALUES = {"Rngs": "nnx.Rngs(0)", "Variable": "nnx.Param(jnp.ones(2))",
                  "Module": "nnx.Linear(2, 2, rngs=nnx.Rngs(2))"}


@dataclass(frozen=True, kw_only=True)
class ObjectOnEveryModuleFacts(Facts):
    """What ``NNX112`` reports (the diagnostic's ``facts``, in this order)."""

    #: The shared object's paths, as flax's aliasing errors name them (``Facts.paths``).
    paths: ClassVar[tuple[tuple[str, ...], ...]] = (("attribute",),)

    #: ``set_attributes``, or the walk the store sits in: ``iter_modules`` / ``iter_graph`` /
    #: ``.iter_modules()``.
    api: str
    #: Source text of the model whose Modules receive the object.
    model: str
    #: The attribute every Module receives.
    attribute: str
    #: Source text of the stored value.
    value: str
    #: What the value is: ``Rngs``, ``Variable``, ``Module``, ``State`` or ``mutable array``.
    kind: str
    #: ``static`` (the value's class or construction is known) or ``heuristic`` (a name
    #: like ``rngs`` bound to something the code does not show).
    confidence: str


class ObjectOnEveryModule(FamilyRule):
    """One `nnx.Rngs` (or other stateful object) stored on every Module of a model after it is built.

    What it does:
        Flags `model.set_attributes(name=value)` and a store `module.name = value` (or
        `setattr(module, "name", value)`) in a loop over `model.iter_modules()`,
        `nnx.iter_modules(model)` or `nnx.iter_graph(model)`, when `value` holds Variables: an
        `nnx.Rngs`, a Variable, a Module, a State (known from its construction, its class or
        annotation) or, marked `"confidence": "heuristic"`, a name like `rngs` / `*_rngs`
        bound to something the code does not show. A `set_attributes` receiver whose class
        holds no other Module (`nnx.Linear`) has nothing to share with and stays silent, as
        does one returned by a call given such a Module (`apply_lora_to_model(linear, ...)`:
        wrappers return the model they are given); one of unknown class is reported with
        `"confidence": "heuristic"`. In the loop the value must be the same
        object on every pass (bound before the loop); a value built inside the loop is a new
        object per Module and stays silent, as do `None`, flags and numbers
        (`model.set_attributes(deterministic=True)`). Silent where the scope or the walk
        keeps graph mode. This is google/qwix's `quantize_nnx_model` (`module.qwix_rngs =
        rngs` for every module) and google/tunix's `lora_model.set_attributes(qwix_rngs=nnx.Rngs(0))`.

    Why is this bad?:
        `set_attributes` stores the one object on every Module that has the attribute, and
        the loop on every Module it walks: the Rngs' `RngKey` / `RngCount` (or the Variables)
        become reachable at several paths. Graph mode accepts shared references; Tree Mode
        rejects them: the next NNX transform raises `ValueError: Duplicate RngCount(...) found
        at paths: a/qwix_rngs/default/count, b/qwix_rngs/default/count`, and a Tree Mode walk
        raises while the loop is still storing (its iterator is lazy). Give each Module its
        own object (`rngs.fork()` inside the loop), or keep the Rngs in one place and pass it
        to the call that needs it.

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references) — pattern [A7](../catalogue.md#a7)
        - {spec}
    """

    code = "NNX112"
    facts_type = ObjectOnEveryModuleFacts
    symbol = "object-on-every-module"
    kind = "raises"
    catalogue = ("A7",)
    category = "rngs"
    no_fix_reason = ("the break comes at whatever the model meets next in Tree Mode (any transform or walk), not at "
                     "one call a keyword could pin; giving each Module its own object (`rngs.fork()` per Module) or "
                     "keeping it in one place needs the author's judgement of which Modules use it")
    message = "`{model}.set_attributes({attribute}=...)` shares one {kind} across Modules: Tree Mode raises (Duplicate)"
    #: A store inside a walk of the model (the walk is a related location).
    loop_message = "`{value}` stored on every Module of a walk: one {kind} at many paths; Tree Mode raises (Duplicate)"
    help = (
        "Tree Mode rejects an object reachable at several paths (ValueError: Duplicate RngCount ...), in "
        "every NNX transform and walk. Give each Module its own (`rngs.fork()`), or keep it in one place "
        "and pass it to the call that needs it"
    )
    VALID = [
        Valid(
            "fork-per-module-or-plain-values",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Block(nnx.Module):
                def __init__(self):
                    self.a = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                    self.b = nnx.Linear(2, 2, rngs=nnx.Rngs(1))
                    self.a.noise = self.b.noise = self.noise = None
                    self.a.deterministic = self.b.deterministic = False

            model = Block()
            rngs = nnx.Rngs(0)
            for _, module in nnx.iter_modules(model):
                module.noise = rngs.fork()
            model.set_attributes(deterministic=True)
            model.set_attributes(noise=None)
            y = nnx.jit(lambda m, x: m.b(m.a(x)))(model, jnp.ones((1, 2)))
            """,
        ),
        Valid(
            "graph-mode-kept",
            """
            from flax import nnx

            class Block(nnx.Module):
                def __init__(self):
                    self.a = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                    self.b = nnx.Linear(2, 2, rngs=nnx.Rngs(1))

            model = Block()
            rngs = nnx.Rngs(0)
            for _, module in nnx.iter_modules(model, graph=True):
                module.noise = rngs
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "set-attributes-one-rngs",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Block(nnx.Module):
                def __init__(self):
                    self.a = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                    self.b = nnx.Linear(2, 2, rngs=nnx.Rngs(1))
                    self.a.noise = nnx.data(None)
                    self.b.noise = nnx.data(None)

            model = Block()
            model.set_attributes(noise=nnx.Rngs(0))  # NNX112
            y = nnx.jit(lambda m, x: m.b(m.a(x)))(model, jnp.ones((1, 2)))
            """,
            tree_mode=raises("ValueError", "Duplicate RngCount"),
        ),
        Invalid(
            "one-rngs-stored-in-a-walk",
            """
            from flax import nnx

            class Block(nnx.Module):
                def __init__(self):
                    self.a = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                    self.b = nnx.Linear(2, 2, rngs=nnx.Rngs(1))

            model = Block()
            rngs = nnx.Rngs(0)
            for _, module in model.iter_modules():
                module.noise = rngs  # NNX112
            """,
            tree_mode=raises("ValueError", "Duplicate RngCount"),
        ),
    ]

    def visit_call(self, node: nodes.Call) -> None:
        func = node.func
        if isinstance(func, nodes.Attribute) and func.attrname == "set_attributes" and node.keywords:
            receiver = self.classes.class_of_self(func.expr)
            if receiver is not None and (not value_model(self.context).is_module_class(receiver)
                                         or not value_model(self.context).may_hold_a_module(receiver)):
                return  # another library's set_attributes, or a Module with no other Module to share with
            if receiver is None and self._wraps_a_single_module(func.expr):
                return
            if self.context.mode.scope_keeps_graph_mode(node, transform=False):
                return
            for keyword in node.keywords:
                found = self._stateful(keyword.value) if keyword.arg else None
                if found is not None:
                    # A receiver of unknown class may be a single layer: then nothing is shared.
                    confidence = found[1] if receiver is not None else "heuristic"
                    self._report(node, "set_attributes", func.expr, keyword.arg, keyword.value, found[0], confidence)

    def visit_for(self, node: nodes.For) -> None:
        walk = self._walk(node.iter)
        if walk is None or not isinstance(node.target, nodes.Tuple) or len(node.target.elts) != 2 \
                or not isinstance(node.target.elts[1], nodes.AssignName):
            return
        api, model = walk
        if self.context.mode.scope_keeps_graph_mode(node, transform=False):
            return
        module = node.target.elts[1].name
        for attribute, value, store in _stores_on(fact_index(self.context), node, module):
            found = self._stateful(value, invariant_in=node)
            if found is not None:
                self._report(store, api, model, attribute, value, *found, walk_node=node.iter)

    # -- analysis ---------------------------------------------------------------------------
    def _walk(self, iterable: nodes.NodeNG) -> tuple[str, nodes.NodeNG] | None:
        """``(api, model)`` when ``iterable`` walks every Module of ``model`` (Tree Mode's walk)."""
        if not isinstance(iterable, nodes.Call):
            return None
        call = self.context.nnx_call(iterable)
        if call is not None:
            if call.name in flax_table.MODULE_WALKS and call.args and not self.context.keeps_graph_mode(call) \
                    and call.keywords.get("graph") is None:
                return call.name, call.args[0]
            return None
        func = iterable.func
        if isinstance(func, nodes.Attribute) and func.attrname in flax_table.WALKING_METHODS and not iterable.args:
            return f".{func.attrname}()", func.expr
        return None

    def _wraps_a_single_module(self, receiver: nodes.NodeNG) -> bool:
        """Whether ``receiver`` is bound to a call given a Module with no other Module inside
        (``lora.apply_lora_to_model(linear, ...)`` with ``linear = nnx.Linear(...)``): such
        wrappers return the model they are given, so there is nothing to share with."""
        values = bound_values(receiver) if isinstance(receiver, nodes.Name) else []
        if len(values) != 1 or not isinstance(values[0], nodes.Call) or not values[0].args:
            return False
        wrapped = self.classes.class_of_self(values[0].args[0])
        model = value_model(self.context)
        return model.is_module_class(wrapped) and not model.may_hold_a_module(wrapped)

    def _stateful(self, value: nodes.NodeNG, invariant_in: nodes.NodeNG | None = None) -> tuple[str, str] | None:
        """``(kind, confidence)`` when ``value`` holds Variables (and, with ``invariant_in``,
        is the same object on every pass of that loop)."""
        if invariant_in is not None:
            base = value
            while isinstance(base, nodes.Attribute):
                base = base.expr
            if not isinstance(base, nodes.Name):
                return None  # built per pass (a call in the loop) or unknown
            _scope, bindings = lookup(base)
            if not bindings or any(inside(binding, invariant_in) for binding in bindings):
                return None
        kind = self.classes.kind_of(self.classes.ref_of(value))
        if kind in SHARED_KINDS:
            return _KIND_WORDS[kind], "static"
        if isinstance(value, nodes.Name) and names_rngs(value.name):
            return "Rngs", "heuristic"
        return None

    def _report(self, node: nodes.NodeNG, api: str, model: nodes.NodeNG, attribute: str, value: nodes.NodeNG,
                kind: str, confidence: str, walk_node: nodes.NodeNG | None = None) -> None:
        related = [(walk_node, f"`{short_source(model, 40)}` is walked here")] if walk_node is not None else []
        self.report(
            node,
            message=None if walk_node is None else self.loop_message,
            related=related,
            api=api,
            model=short_source(model, 24),
            attribute=programs.clipped(attribute, 24),
            value=short_source(value, 24),
            kind=kind,
            confidence=confidence,
        )

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """A model of two Linear layers receiving one object of the finding's kind on every
        Module, through the finding's form (``set_attributes`` then ``nnx.jit``, or a store in
        a ``nnx.iter_modules`` walk). Control: each Module gets its own (``.fork()`` of the
        Rngs, or a new object per Module)."""
        attribute = programs.identifier_or(facts.attribute, "shared")
        shared = _SHARED_VALUES.get(facts.kind)
        # An Rngs stands in for a State or a raw ref; nnx.jit for whatever the model meets next.
        stand_ins = () if shared else ("an nnx.Rngs for the %s" % programs.clipped(str(facts.kind), 40),)
        shared = shared or "nnx.Rngs(0)"
        own = "shared.fork()" if shared.startswith("nnx.Rngs") else shared
        model = programs.filled("""
            class Block(nnx.Module):
                def __init__(self):
                    self.a = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                    self.b = nnx.Linear(2, 2, rngs=nnx.Rngs(1))
                    self.ATTR = nnx.data(None)
                    self.a.ATTR = nnx.data(None)
                    self.b.ATTR = nnx.data(None)

            model = Block()
            shared = SHARED
            """, {"ATTR": attribute}, {"SHARED": shared})
        run = "return nnx.jit(lambda m, x: m.b(m.a(x)).shape)(model, jnp.ones((1, 2)))\n"
        if facts.api == "set_attributes":
            def body(value: str) -> str:
                return model + programs.lines(programs.call("model.set_attributes", **{attribute: value})) + run
            # the control gives each Module its own, as set_attributes cannot
            control = model + programs.lines(*[programs.assign(programs.attribute(owner, attribute), own)
                                               for owner in ("model", "model.a", "model.b")]) + run
            return Reproduction(body("shared"), expect_error="aliasing", control=control,
                                stand_ins=stand_ins + ("nnx.jit for the model's next NNX transform",))

        def walked(value: str) -> str:
            return model + programs.filled("for _, module in nnx.iter_modules(model):\n    module.ATTR = VALUE\n",
                                           {"ATTR": attribute}, {"VALUE": value}) + run
        return Reproduction(walked("shared"), expect_error="aliasing", control=walked(own), stand_ins=stand_ins)


def _stores_on(facts, loop: nodes.For, module: str) -> list[tuple[str, nodes.NodeNG, nodes.NodeNG]]:
    """``(attribute, value, store)`` for each ``module.attribute = value`` and ``setattr(module,
    "attribute", value)`` directly in the loop's body (not in nested functions)."""
    found = []
    for statement in facts.own_assignments_and_calls(loop):
        if isinstance(statement, nodes.Assign):
            for target in statement.targets:
                if isinstance(target, nodes.AssignAttr) and isinstance(target.expr, nodes.Name) \
                        and target.expr.name == module:
                    found.append((target.attrname, statement.value, statement))
        elif isinstance(statement.func, nodes.Name) and statement.func.name == "setattr" \
                and len(statement.args) == 3 and isinstance(statement.args[0], nodes.Name) \
                and statement.args[0].name == module and isinstance(statement.args[1], nodes.Const) \
                and isinstance(statement.args[1].value, str):
            found.append((statement.args[1].value, statement.args[2], statement))
    return found
