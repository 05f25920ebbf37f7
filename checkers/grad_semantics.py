"""NNX4xx: ``nnx.grad`` / ``nnx.value_and_grad`` semantics — catalogue D1, D2.

Graph mode differentiates only the ``Param``s of the differentiated argument (an integer
``argnums`` means ``DiffState(i, nnx.Param)``) and returns an ``nnx.State``. Tree Mode
differentiates the whole argument and returns the argument's own type. The rules look
at each *application* of a grad-transformed function (``nnx.grad(loss)(model)``,
``grad_fn = nnx.value_and_grad(loss, has_aux=True)`` ... ``grad_fn(model, batch)``, a
function decorated with ``@nnx.grad``), decide what the differentiated argument is (its
class, from constructors and annotations, else the loss function's parameter annotation;
the Variables that class holds come from :mod:`nnx_lint.variables`), and follow the
gradient value to where it is consumed. Calls that keep graph mode (``nnx.compat.grad``,
``graph=True, graph_updates=True``, a graph-mode scope) are silent; ``DiffState``
``argnums`` are NNX202's.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from astroid import nodes

from nnx_lint.fixes.sites import pin_sites_in
from nnx_lint.flow import bound_values, lookup
from nnx_lint.program_text import bounded_index, identifier_or
from nnx_lint.rule import Invalid, Reproduction, Rule, Valid, differs, raises
from nnx_lint.variables import (
    FLOAT_STATE,
    NON_DIFFERENTIABLE,
    TREE_MAPS,
    UNKNOWN_DTYPE,
    GradApplication,
    GradientFlow,
    Holdings,
    unaffected_by_flip,
    variable_model,
)

_SPEC = "https://github.com/google/flax/issues/5310"

#: ``nnx.State`` methods that a Module-typed gradient does not have.
STATE_METHODS = frozenset({
    "items", "keys", "values", "flat_state", "to_pure_dict", "replace_by_pure_dict", "filter",
    "split", "merge", "get", "raw_mapping",
})
#: Functions that need a ``State``/Mapping argument (position of that argument).
STATE_FUNCTIONS = {
    "flax.nnx.to_pure_dict": 0,
    "flax.nnx.to_flat_state": 0,
    "flax.nnx.filter_state": 0,
    "flax.nnx.split_state": 0,
    "flax.nnx.replace_by_pure_dict": 0,
    "flax.nnx.merge_state": None,  # any position
    "flax.nnx.traversals.flatten_mapping": 0,
    "flax.traversals.flatten_mapping": 0,
    "flax.nnx.statelib.to_flat_state": 0,
    "flax.nnx.update": "rest",   # nnx.update(model, grads)
    "flax.nnx.merge": "rest",    # nnx.merge(graphdef, grads)
    "builtins.dict": 0,
    "dict": 0,
}
#: Consumers that reduce over every leaf (name -> position of the tree argument).
WHOLE_TREE_CONSUMERS = {
    **dict.fromkeys((
        "optax.global_norm", "optax.tree_utils.tree_l2_norm", "optax.tree_utils.tree_norm", "optax.tree.norm",
        "jax.tree.leaves", "jax.tree_util.tree_leaves", "jax.tree_leaves", "jax.tree.flatten",
        "jax.tree_util.tree_flatten", "jax.flatten_util.ravel_pytree",
    ), 0),
    "jax.tree.reduce": 1,
    "jax.tree_util.tree_reduce": 1,
}
#: Of those, the ones that only change when a non-Param leaf has a non-zero gradient
#: (the leaf's value is read by the forward pass); the others see the extra leaves anyway.
NORM_CONSUMERS = frozenset({
    "optax.global_norm", "optax.tree_utils.tree_l2_norm", "optax.tree_utils.tree_norm", "optax.tree.norm",
    "jax.tree.reduce", "jax.tree_util.tree_reduce",
})
_STATE_PRODUCERS = frozenset({
    "flax.nnx.state", "flax.nnx.variables", "flax.nnx.State", "flax.nnx.filter_state", "flax.nnx.clone",
    "flax.nnx.to_tree", "flax.nnx.from_flat_state",
})
_SPLITS = frozenset({"flax.nnx.split", "flax.nnx.split_state"})
_STATE_TYPES = frozenset({"flax.nnx.State", "flax.nnx.GraphState"})
#: Module classes of flax whose gradients are indexable or iterable like a State.
_CONTAINER_MODULES = frozenset({"flax.nnx.List", "flax.nnx.Dict", "flax.nnx.Sequential", "flax.nnx.State"})


@dataclass
class Differentiated:
    """What is known about one differentiated argument of an application."""

    position: int
    argument: nodes.NodeNG
    class_name: str | None
    qualified_name: str | None
    holdings: Holdings | None
    #: "class" (constructor/annotation of the argument), "loss-annotation", "called-in-loss"
    evidence: str
    #: attribute names the class defines (methods), to avoid State-method false positives
    class_attributes: frozenset[str]

    def facts(self) -> dict[str, Any]:
        facts: dict[str, Any] = {
            "argument": self.argument.as_string(),
            "position": self.position,
            "class": self.class_name,
            "class_qualified_name": self.qualified_name,
            "class_evidence": self.evidence,
            "confidence": "heuristic" if self.evidence == "called-in-loss" else "static",
        }
        if self.holdings is not None:
            facts["variable_types"] = self.holdings.variable_types()
            if self.holdings.unknown:
                facts["unknown_parts"] = sorted(set(self.holdings.unknown))[:10]
        return facts


class _Analysis:
    """Per-file analysis of grad applications, shared by the NNX4xx rules."""

    def __init__(self, context) -> None:
        self.context = context
        self.variables = variable_model(context)
        self.flow = GradientFlow(context)
        self._memo: dict[int, tuple[GradApplication, list[Differentiated]] | None] = {}

    def application(self, call: nodes.Call) -> tuple[GradApplication, list[Differentiated]] | None:
        key = id(call)
        if key not in self._memo:
            self._memo[key] = self._analyse(call)
        return self._memo[key]

    def differentiated_at(self, call: nodes.Call) -> Iterator[tuple[GradApplication, Differentiated]]:
        """``(application, argument)`` for each differentiated argument if ``call`` applies a grad."""
        analysed = self.application(call)
        if analysed is not None:
            application, arguments = analysed
            for differentiated in arguments:
                yield application, differentiated

    # -- which calls apply a grad-transformed function ------------------------------------
    def _analyse(self, call: nodes.Call) -> tuple[GradApplication, list[Differentiated]] | None:
        application = self._application(call)
        if application is None or application.keeps_graph or application.argnums is None:
            return None
        if any(isinstance(a, nodes.Starred) for a in call.args):
            return None
        found = []
        for position in application.argnums:
            if position < len(call.args):
                differentiated = self._differentiated(application, position, call.args[position])
                if differentiated is not None:
                    found.append(differentiated)
        return application, found

    def _application(self, call: nodes.Call) -> GradApplication | None:
        func = call.func
        if isinstance(func, nodes.Call):
            return self._from_transform_call(call, func)
        if isinstance(func, nodes.Name):
            for value in bound_values(func):
                if isinstance(value, nodes.Call):
                    found = self._from_transform_call(call, value)
                    if found is not None:
                        return found
            try:
                _scope, assignments = lookup(func)
            except Exception:
                return None
            for assignment in assignments:
                if isinstance(assignment, nodes.FunctionDef) and assignment.decorators:
                    found = self._from_decorated(call, assignment)
                    if found is not None:
                        return found
        return None

    def _from_transform_call(self, call: nodes.Call, transform: nodes.Call) -> GradApplication | None:
        nnx_call = self.context.nnx_call(transform)
        if nnx_call is None or nnx_call.name not in ("grad", "value_and_grad") or nnx_call.via_partial:
            return None
        args = nnx_call.args
        loss = args[0] if args else nnx_call.keywords.get("f")
        argnums = nnx_call.keywords.get("argnums", args[1] if len(args) > 1 else None)
        has_aux = nnx_call.keywords.get("has_aux", args[2] if len(args) > 2 else None)
        return self._make(call, nnx_call.name, transform, unaffected_by_flip(self.context, nnx_call),
                          argnums, has_aux, self._function_of(loss))

    def _from_decorated(self, call: nodes.Call, function: nodes.FunctionDef) -> GradApplication | None:
        for decorator in function.decorators.nodes:
            if isinstance(decorator, nodes.Call):
                nnx_call = self.context.nnx_call(decorator)
                if nnx_call is None or nnx_call.name not in ("grad", "value_and_grad"):
                    continue
                return self._make(call, nnx_call.name, decorator, unaffected_by_flip(self.context, nnx_call),
                                  nnx_call.keywords.get("argnums"), nnx_call.keywords.get("has_aux"), function)
            name = self.context.qualified_name(decorator)
            if name in ("flax.nnx.grad", "flax.nnx.value_and_grad", "flax.nnx.compat.grad", "flax.nnx.compat.value_and_grad"):
                keeps = ".compat." in name or unaffected_by_flip(self.context, node=decorator)
                return self._make(call, name.rpartition(".")[2], decorator, keeps, None, None, function)
        return None

    @staticmethod
    def _make(call, transform, node, keeps, argnums_node, has_aux_node, loss) -> GradApplication:
        argnums: tuple[int, ...] | None
        is_tuple = False
        if argnums_node is None:
            argnums = (0,)
        elif _is_int(argnums_node):
            argnums = (argnums_node.value,)
        elif isinstance(argnums_node, (nodes.Tuple, nodes.List)) and all(_is_int(e) for e in argnums_node.elts):
            argnums, is_tuple = tuple(e.value for e in argnums_node.elts), True
        else:
            argnums = None  # DiffState (NNX202) or computed
        if has_aux_node is None:
            has_aux: bool | None = False
        elif isinstance(has_aux_node, nodes.Const) and isinstance(has_aux_node.value, bool):
            has_aux = has_aux_node.value
        else:
            has_aux = None
        return GradApplication(call, transform, node, keeps, argnums, is_tuple, has_aux, loss)

    @staticmethod
    def _function_of(node: nodes.NodeNG | None) -> nodes.NodeNG | None:
        if isinstance(node, nodes.Lambda):
            return node
        if isinstance(node, nodes.Name):
            try:
                _scope, assignments = lookup(node)
            except Exception:
                return None
            functions = [a for a in assignments if isinstance(a, nodes.FunctionDef)]
            if len(functions) == 1:
                return functions[0]
        return None

    # -- what the differentiated argument is -----------------------------------------------
    def _differentiated(self, application: GradApplication, position: int, argument: nodes.NodeNG) -> Differentiated | None:
        if self.is_state_value(argument):
            return None
        classes = self.context.classes
        ref = classes.class_of(argument)
        evidence = "class"
        if ref is None:
            ref = self._loss_annotation(application.loss, position)
            evidence = "loss-annotation"
        if ref is not None:
            if ref.qualified_name in _CONTAINER_MODULES or ref.qualified_name.startswith(("flax.nnx.Rngs", "jax.", "numpy.")):
                return None
            if ref.definition is not None:
                if not classes.info(ref.definition).is_nnx_module:
                    return None
                holdings = self.variables.holdings(ref.definition)
                attributes = frozenset(_class_attributes(ref.definition, classes))
            else:
                holdings = self.variables.holdings_of_ref(ref, argument if isinstance(argument, nodes.Call) else None)
                if holdings is None:
                    return None  # an external class: not known to be a Module
                attributes = frozenset()
            return Differentiated(position, argument, ref.short_name, ref.qualified_name, holdings, evidence, attributes)
        if _is_called_in(application.loss, position):
            return Differentiated(position, argument, None, None, None, "called-in-loss", frozenset())
        return None

    def _loss_annotation(self, loss: nodes.NodeNG | None, position: int):
        if not isinstance(loss, nodes.FunctionDef):
            return None
        arguments = loss.args
        if position >= len(arguments.args) or arguments.annotations[position] is None:
            return None
        annotation = arguments.annotations[position]
        return self.context.classes.resolve(self.context.classes._resolver_for(annotation).qualified_name(annotation))

    # -- State values -----------------------------------------------------------------------
    def is_state_value(self, expression: nodes.NodeNG, depth: int = 0) -> bool:
        """``nnx.state(...)``, ``nnx.split(...)[1]``, a name bound to one, ...: an ``nnx.State``."""
        if depth > 4:
            return False
        if isinstance(expression, nodes.Call):
            name = self.context.qualified_name(expression.func)
            if name == "flax.nnx.clone":
                return bool(expression.args) and self.is_state_value(expression.args[0], depth + 1)
            return name in _STATE_PRODUCERS
        if isinstance(expression, nodes.Subscript):
            if isinstance(expression.value, nodes.Call) and self.context.qualified_name(expression.value.func) in _SPLITS:
                return _is_int(expression.slice) and expression.slice.value >= 1
            return False
        if isinstance(expression, nodes.Attribute):  # self.params, stored as a State
            owner = self.context.classes.class_of_self(expression.expr)
            if owner is None or owner.definition is None:
                return False
            stores = self.context.classes.info(owner.definition).stores_of(expression.attrname)
            return bool(stores) and all(self._stored_state(store, depth) for store in stores)
        if isinstance(expression, nodes.Name):
            annotation = self.context.classes.class_of(expression)
            if annotation is not None and annotation.qualified_name in _STATE_TYPES:
                return True
            try:
                _scope, assignments = lookup(expression)
            except Exception:
                return False
            if not assignments:
                return False
            for assignment in assignments:
                if not self._binds_state(assignment, depth):
                    return False
            return True
        return False

    def _stored_state(self, store, depth: int) -> bool:
        parent = store.target.parent
        if isinstance(parent, nodes.AnnAssign):
            name = self.context.classes._resolver_for(parent).qualified_name(parent.annotation)
            if name in _STATE_TYPES:
                return True
        value = store.value
        if isinstance(value, nodes.Call) and self.context.qualified_name(value.func) == "flax.nnx.data" and value.args:
            value = value.args[0]
        return value is not None and self.is_state_value(value, depth + 1)

    def _binds_state(self, assignment: nodes.NodeNG, depth: int) -> bool:
        if not isinstance(assignment, nodes.AssignName):
            return False
        parent = assignment.parent
        if isinstance(parent, (nodes.Assign, nodes.AnnAssign)) and parent.value is not None:
            return self.is_state_value(parent.value, depth + 1)
        if isinstance(parent, nodes.Tuple) and isinstance(parent.parent, nodes.Assign):
            value = parent.parent.value
            index = parent.elts.index(assignment)
            if isinstance(value, nodes.Call) and self.context.qualified_name(value.func) in _SPLITS:
                return index >= 1 and not any(isinstance(e, nodes.Starred) for e in parent.elts[:index])
            if isinstance(value, nodes.Tuple) and len(value.elts) == len(parent.elts):
                return self.is_state_value(value.elts[index], depth + 1)
        return False

    # -- consumers --------------------------------------------------------------------------
    def state_usage(self, use: nodes.NodeNG, differentiated: Differentiated) -> tuple[str, str, nodes.NodeNG] | None:
        """``(usage, error, node)`` when the gradient ``use`` is used as an ``nnx.State`` here."""
        parent = use.parent
        text = use.name if isinstance(use, nodes.Name) else use.as_string()
        type_name = differentiated.class_name or "Module"
        if isinstance(parent, nodes.Subscript) and parent.value is use:
            return (f"{text}[{parent.slice.as_string()}]", f"TypeError: '{type_name}' object is not subscriptable", parent)
        if isinstance(parent, nodes.Attribute) and parent.expr is use and parent.attrname in STATE_METHODS:
            if parent.attrname in differentiated.class_attributes:
                return None
            if isinstance(parent.parent, nodes.Call) and parent.parent.func is parent:
                return (f"{text}.{parent.attrname}()",
                        f"AttributeError: '{type_name}' object has no attribute '{parent.attrname}'", parent.parent)
            return None
        if isinstance(parent, (nodes.For, nodes.Comprehension)) and parent.iter is use:
            return (f"for ... in {text}", f"TypeError: '{type_name}' object is not iterable", use)
        if isinstance(parent, nodes.Call) and use in parent.args:
            name = self.context.qualified_name(parent.func)
            index = parent.args.index(use)
            where = STATE_FUNCTIONS.get(name or "", False)
            if where is not False and (where is None or where == index or (where == "rest" and index >= 1)):
                short = name.replace("flax.nnx.", "nnx.").replace("builtins.", "")
                return (f"{short}({text})", "raises (needs a State/Mapping)", parent)
            if name in TREE_MAPS or name == "optax.apply_updates":
                trees = parent.args[1:] if name in TREE_MAPS else parent.args
                others = [t for t in trees if t is not use]
                if any(self.is_state_value(other) for other in others):
                    short = "optax.apply_updates" if name == "optax.apply_updates" else "jax.tree.map"
                    return (f"{short}(..., {text})",
                            "ValueError: pytree structure error: different types, against an nnx.State", parent)
        return None

    def whole_tree_usage(self, use: nodes.NodeNG) -> tuple[str, nodes.NodeNG] | None:
        """``(consumer, node)`` when the gradient ``use`` is reduced over all its leaves here."""
        parent = use.parent
        if isinstance(parent, nodes.Call) and use in parent.args:
            name = self.context.qualified_name(parent.func)
            if name in WHOLE_TREE_CONSUMERS and parent.args.index(use) == WHOLE_TREE_CONSUMERS[name]:
                return name, parent
        return None


def _analysis(context) -> _Analysis:
    """The file's grad analysis, shared by the NNX4xx rules (one per FileContext)."""
    return context.service(_Analysis)


def _is_int(node: nodes.NodeNG | None) -> bool:
    return isinstance(node, nodes.Const) and isinstance(node.value, int) and not isinstance(node.value, bool)


def _is_called_in(loss: nodes.NodeNG | None, position: int) -> bool:
    """Whether the loss function calls its parameter ``position`` (``m(x)``): a Module, not a State."""
    if not isinstance(loss, (nodes.FunctionDef, nodes.Lambda)):
        return False
    arguments = loss.args.args or []
    if position >= len(arguments):
        return False
    parameter = arguments[position]
    for call in loss.nodes_of_class(nodes.Call):
        if isinstance(call.func, nodes.Name) and call.func.name == parameter.name:
            try:
                _scope, assignments = lookup(call.func)
            except Exception:
                continue
            if parameter in assignments:
                return True
    return False


def _class_attributes(classdef: nodes.ClassDef, classes, depth: int = 0) -> set[str]:
    names = set(classdef.locals)
    if depth < 6:
        for base in classes.info(classdef).bases:
            if base.definition is not None:
                names |= _class_attributes(base.definition, classes, depth + 1)
    return names


def _holding_facts(holdings: Holdings, categories) -> list[dict]:
    return [h.as_fact() for h in holdings.of(categories)][:12]


def _describe(holdings: Holdings, categories) -> str:
    parts = []
    for holding in holdings.of(categories)[:4]:
        dtype = {"integer": " (int)", "float": " (float)", "unknown-dtype": " (dtype unknown)"}.get(holding.category, "")
        parts.append(f"{holding.path or '<self>'}: {holding.variable_type}{dtype}")
    more = len(holdings.of(categories)) - 4
    return ", ".join(parts) + (f", +{more} more" if more > 0 else "")


def _pin(context, application: GradApplication) -> list[dict[str, Any]]:
    """Where a pin fix keeps graph mode: the grad transform applied here."""
    return pin_sites_in(context, (application.transform_node, application.transform))


class GradOverNonFloatState(Rule):
    """`nnx.grad` over a Module that holds RNG state or integer Variables.

    What it does:
        Flags an application of `nnx.grad` / `nnx.value_and_grad` (default or integer
        `argnums`) whose differentiated argument is a Module known to hold RNG state
        (`nnx.Dropout(..., rngs=rngs)`, a stored `nnx.Rngs` / `RngStream`, `nnx.RNN`,
        `nnx.MultiHeadAttention(dropout_rate>0, rngs=...)`) or integer/bool leaves
        (`nnx.Variable(jnp.array(0))`, a plain int array attribute). What the class holds is
        followed through its submodules, project classes in other files, and containers.

    Why is this bad?:
        Graph mode differentiated only the `Param`s of the argument. Tree Mode differentiates
        the whole argument, and `jax.grad` raises `TypeError: grad requires real- or
        complex-valued inputs ... but got uint32` (`int32`) on the RNG counter / integer
        leaves. Split the model by `nnx.Param` and differentiate only the params: `graphdef,
        params, rest = nnx.split(model, nnx.Param, ...)`, `nnx.grad(loss)(params, rest)`
        with `nnx.merge(graphdef, params, rest)` inside the loss (updates of `rest`, such as
        RNG counters, still propagate). Keep graph mode with `nnx.compat.grad` instead.

    References:
        - [Catalogue row D2](../tree-mode.md#grad) — `repros/r31_grad_nonfloat_variables.py`
        - [FLIP 5310, "nnx.grad"](https://github.com/google/flax/issues/5310)
    """

    code = "NNX401"
    fixes = ("pin",)
    symbol = "grad-over-non-float-state"
    kind = "raises"
    catalogue = ("D2",)
    message = (
        "`nnx.{transform}` differentiates all of `{argument}`, and `{class}` holds non-float state: "
        "Tree Mode raises TypeError"
    )
    help = (
        "In Tree Mode jax.grad sees every leaf of `{argument}`, including its integer/key state "
        "({holding}). Split by `nnx.Param` (`graphdef, params, rest = nnx.split(model, nnx.Param, "
        "...)`) and pass `(params, rest)` with `nnx.merge` inside the loss, or keep graph mode with "
        "`nnx.compat.{transform}`"
    )

    def visit_call(self, node: nodes.Call) -> None:
        for application, differentiated in _analysis(self.context).differentiated_at(node):
            holdings = differentiated.holdings
            if holdings is None or not holdings.of(NON_DIFFERENTIABLE):
                continue
            self.report(
                node,
                transform=application.transform,
                argnums=list(application.argnums or ()),
                has_aux=application.has_aux,
                holding=_describe(holdings, NON_DIFFERENTIABLE),
                non_float=_holding_facts(holdings, NON_DIFFERENTIABLE),
                transform_line=application.transform_node.lineno,
                **differentiated.facts(),
                pin=_pin(self.context, application),
            )

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """The flagged application on a Linear plus the non-float state the facts name.

        Variants by facts: the holding's category (``rng``: a ``Dropout`` with stored
        ``rngs``, i.e. ``RngKey``/``RngCount``; ``integer``: an int32 Variable of the
        flagged Variable type), ``transform`` (``grad`` / ``value_and_grad``), ``has_aux``,
        and the differentiated argument's ``position`` among the ``argnums`` (the other
        differentiated positions get float arrays). Control: the FLIP recipe, split by
        ``nnx.Param`` and differentiate ``(params, rest)``.
        """
        transform = facts.get("transform") if facts.get("transform") in ("grad", "value_and_grad") else "grad"
        categories = {h.get("category") for h in facts.get("non_float") or []}
        types = [h.get("type") for h in facts.get("non_float") or [] if h.get("category") == "integer"]
        if "rng" in categories or not types:
            holding, call = "self.drop = nnx.Dropout(0.5, rngs=rngs)", "self.drop(self.lin(x))"
        else:
            variable = types[0] if types[0] in _SHARED_VARIABLE_TYPES else "Variable"
            holding, call = f"self.steps = nnx.{variable}(jnp.array(0))", "self.lin(x)"
        position = bounded_index(facts.get("position") if isinstance(facts.get("position"), int) else 0, "the position")
        argnums = [bounded_index(a, "argnums") for a in facts.get("argnums") or [position]
                   if isinstance(a, int)] or [position]
        count = max(argnums + [position]) + 1
        arguments = ", ".join("model" if i == position else "x" for i in range(count))
        parameters = ", ".join(f"a{i}" for i in range(count))
        argnums_text = repr(argnums[0]) if len(argnums) == 1 else repr(tuple(argnums))
        value = f"jnp.sum(a{position}(x))" + "".join(f" + jnp.sum(a{i})" for i in range(count) if i != position)
        if facts.get("has_aux"):
            value, aux = f"({value}, 0.0)", ", has_aux=True"
        else:
            aux = ""
        model = f"""
            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                    {holding}
                def __call__(self, x):
                    return {call}

            model, x = Model(nnx.Rngs(0)), jnp.ones((1, 2))
        """
        use = f"""
            def loss({parameters}):
                return {value}

            out = nnx.{transform}(loss, argnums={argnums_text}{aux})({arguments})
            return type(out).__name__
        """
        fixed_value = value.replace(f"jnp.sum(a{position}(x))", f"jnp.sum(nnx.merge(graphdef, a{position}, rest)(x))")
        control = f"""
            graphdef, params, rest = nnx.split(model, nnx.Param, ...)

            def loss({parameters}, rest):  # rest (RNG counters, ...) passed, not differentiated
                return {fixed_value}

            out = nnx.{transform}(loss, argnums={argnums_text}{aux})({arguments.replace("model", "params")}, rest)
            return type(out).__name__
        """
        return Reproduction(_dedent(model) + _dedent(use), expect_error="grad-non-float",
                            control=_dedent(model) + _dedent(control))

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
        - [Catalogue row D1](../tree-mode.md#grad) — `repros/r30_grad_default_argnums_type.py`
        - [FLIP 5310, "nnx.grad"](https://github.com/google/flax/issues/5310)
    """

    code = "NNX402"
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
        analysis = _analysis(self.context)
        for application, differentiated in analysis.differentiated_at(node):
            holdings = differentiated.holdings
            if holdings is None or holdings.of(NON_DIFFERENTIABLE):
                continue  # unknown contents, or NNX401's (raises first)
            non_param = {FLOAT_STATE, UNKNOWN_DTYPE}
            if not holdings.of(non_param):
                continue
            read = [h for h in holdings.of(non_param) if h.read]
            for use in analysis.flow.uses(application, differentiated.position):
                found = analysis.whole_tree_usage(use.name)
                if found is None or (found[1].lineno in self._reported):
                    continue
                if found[0] in NORM_CONSUMERS and not read:
                    continue  # unread non-Param leaves get zero gradients: a norm does not change
                self._reported.add(found[1].lineno)
                consumer, where = found
                self.report(
                    where,
                    consumer=consumer,
                    transform=application.transform,
                    argnums=list(application.argnums or ()),
                    holding=_describe(holdings, non_param),
                    non_param=_holding_facts(holdings, non_param),
                    gradient_via=use.via,
                    application_line=node.lineno,
                    **differentiated.facts(),
                    pin=_pin(self.context, application),
                )

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
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
        holdings = facts.get("non_param") or [{}]
        read = [h for h in holdings if h.get("read_in_forward")]
        holding = (read or holdings)[0]
        variable_type = holding.get("type")
        if variable_type == "array":
            stat = "nnx.data(jnp.zeros((2,)))"
        else:
            stat = f"nnx.{variable_type if variable_type in _SHARED_VARIABLE_TYPES - {'Param'} else 'Variable'}(jnp.zeros((2,)))"
        forward = "(x - self.stat[...]) * self.w[...]" if read else "x * self.w[...]"
        consumer = facts.get("consumer") or "optax.global_norm"
        if consumer in ("jax.tree.reduce", "jax.tree_util.tree_reduce"):
            observe = "round(float(jnp.sqrt(jax.tree.reduce(lambda a, g: a + jnp.sum(g ** 2), G, 0.0))), 3)"
            tree, graph = (16.0, 11.314) if read else (11.314, 11.314)
        elif consumer in NORM_CONSUMERS:
            observe = "round(float(jnp.sqrt(sum(jnp.sum(g ** 2) for g in jax.tree.leaves(G)))), 3)"
            tree, graph = (16.0, 11.314) if read else (11.314, 11.314)
        elif consumer == "jax.flatten_util.ravel_pytree":
            observe = "ravel_pytree(G)[0].size"
            tree, graph = 4, 2
        elif consumer in ("jax.tree.flatten", "jax.tree_util.tree_flatten"):
            observe = "len(jax.tree.flatten(G)[0])"
            tree, graph = 2, 1
        else:
            observe = "len(jax.tree.leaves(G))"
            tree, graph = 2, 1
        model = f"""
            class Model(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.ones((2,)))
                    self.stat = {stat}
                def __call__(self, x):
                    return {forward}

            model, x = Model(), jnp.ones((4, 2))
        """
        if consumer == "jax.flatten_util.ravel_pytree":
            model = "from jax.flatten_util import ravel_pytree\n" + _dedent(model)
        program = _dedent(model) + "\n" + _application(facts, "jnp.sum({m}(x) ** 2)")
        body = _concrete(program + "return " + observe.replace("G", "grads") + "\n")
        control = _concrete(program + "return " + observe.replace("G", "nnx.state(grads, nnx.Param)") + "\n")
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


class GradsUsedAsState(Rule):
    """The gradient of a Module is used as an `nnx.State` (indexing, `.items()`, `to_pure_dict`, ...).

    What it does:
        Follows the result of `nnx.grad` / `nnx.value_and_grad` (default or integer
        `argnums`) over a Module argument through assignments, `value_and_grad` / `has_aux`
        unpacking and `jax.tree.map(f, grads)`, and flags uses that need an `nnx.State`:
        `grads['linear']['kernel']`, `grads.items()` / `.keys()` / `.values()` /
        `.flat_state()`, iteration, `nnx.to_pure_dict(grads)`, `nnx.to_flat_state`,
        `traversals.flatten_mapping(grads)`, `nnx.update(model, grads)`,
        `jax.tree.map(f, <State>, grads)` and `optax.apply_updates(<State>, grads)`. The
        argument is a Module when its class is known (constructor, annotation, the loss
        function's parameter annotation) or, as a heuristic, when the loss function calls it.

    Why is this bad?:
        Graph mode returned an `nnx.State`; Tree Mode returns the argument's own type. The
        uses above raise: `TypeError: 'Net' object is not subscriptable`, `AttributeError:
        'Net' object has no attribute 'items'` / `'_mapping'`, `ValueError: pytree structure
        error: different types`. Accept the Module-typed gradient (`grads.linear.kernel`,
        `optimizer.update(model, grads)`), convert it with `nnx.state(grads, nnx.Param)`, or
        split by `nnx.Param` and differentiate `(params, rest)` to get a `State` again.

    References:
        - [Catalogue row D1](../tree-mode.md#grad) — `repros/r30_grad_default_argnums_type.py`
        - [FLIP 5310, "nnx.grad"](https://github.com/google/flax/issues/5310)
    """

    code = "NNX403"
    fixes = ("pin",)
    symbol = "grads-used-as-state"
    kind = "raises"
    catalogue = ("D1",)
    message = "`{usage}` uses the `nnx.{transform}` result as an `nnx.State`: Tree Mode raises (it is a `{type_name}`)"
    help = (
        "In Tree Mode the gradient is a `{type_name}` object ({error}). Use attribute access / "
        "`optimizer.update(model, grads)`, convert with `nnx.state(grads, nnx.Param)`, or split by "
        "`nnx.Param` and differentiate `(params, rest)`"
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._reported: set[int] = set()

    def visit_call(self, node: nodes.Call) -> None:
        analysis = _analysis(self.context)
        for application, differentiated in analysis.differentiated_at(node):
            for use in analysis.flow.uses(application, differentiated.position):
                found = analysis.state_usage(use.name, differentiated)
                if found is None:
                    continue
                usage, error, where = found
                if where.lineno in self._reported:
                    continue  # one per line, also when several applications reach it
                self._reported.add(where.lineno)
                self.report(
                    where,
                    usage=usage,
                    error=error,
                    type_name=differentiated.class_name or "Module",
                    transform=application.transform,
                    argnums=list(application.argnums or ()),
                    has_aux=application.has_aux,
                    argnums_is_tuple=application.argnums_is_tuple,
                    gradient_via=use.via,
                    application_line=node.lineno,
                    **_usage_facts(self.context, where),
                    **differentiated.facts(),
                    pin=_pin(self.context, application),
                )

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction | str:
        """A Module gradient used as a State in the flagged way (the graph-mode habit).

        Variants by facts: ``usage_kind`` (``subscript`` with the flagged string key as the
        submodule's name, ``method`` with the flagged State method, ``iteration``,
        ``function`` with the flagged function, ``tree-map`` against an ``nnx.State`` of the
        Params — what ``optax.apply_updates`` does too), ``transform``, ``has_aux``, the
        differentiated ``position`` and ``argnums`` (tuple or int). The expected error
        category follows the usage (``not-subscriptable``, ``tree-structure``,
        ``other:AttributeError`` for a missing State method, ``other:TypeError`` for
        iteration). Control: the same use of ``nnx.state(grads, nnx.Param)``. Uses on which
        the two Tree Mode implementations raise different errors (``nnx.update``,
        ``nnx.to_flat_state``, ``nnx.merge``, ...) have no shared reproduction: the builder
        returns the reason instead.
        """
        kind = facts.get("usage_kind")
        key = identifier_or(facts.get("key"), "linear")
        if kind == "subscript":
            use, expected = f"G[{key!r}]", "not-subscriptable"
        elif kind == "method":
            method = facts.get("method")
            if method not in _METHOD_CALLS:
                return (f"`State.{method}()` is not a method both Tree Mode implementations' States provide "
                        "(tree_runtime's State lacks it), so the rewrite cannot be run under both oracles")
            use, expected = _METHOD_CALLS[method], "other:AttributeError"
        elif kind == "iteration":
            use, expected = "[path for path in G]", "other:TypeError"
        elif kind == "function" and facts.get("function") in _FUNCTION_CALLS:
            use, expected = _FUNCTION_CALLS[facts["function"]]
        elif kind == "tree-map":
            use, expected = "jax.tree.map(lambda p, g: p - 0.1 * g, nnx.state(model, nnx.Param), G)", "tree-structure"
        elif facts.get("function") in _RUNTIME_LACKS:
            return (f"`{facts.get('usage')}`: tree_runtime has no `{facts.get('function')}`, so no program "
                    "can run under both Tree Mode implementations")
        else:
            return (f"`{facts.get('usage')}` raises in both Tree Mode implementations, but with different "
                    "exception types (no shared error category), so no reproduction can be confirmed by both")
        program = f"""
            class Net(nnx.Module):
                def __init__(self, rngs):
                    self.{key} = nnx.Linear(2, 2, rngs=rngs)
                def __call__(self, x):
                    return self.{key}(x)

            model, x = Net(nnx.Rngs(0)), jnp.ones((1, 2))
        """
        program = _dedent(program) + "\n" + _application(facts, "jnp.sum({m}(x))")
        body = _dedent(program) + f"return type({use.replace('G', 'grads')}).__name__\n"
        control = _dedent(program) + f"return type({use.replace('G', 'nnx.state(grads, nnx.Param)')}).__name__\n"
        return Reproduction(body, expect_error=expected, control=control)

    VALID = [
        Valid(
            "r30-fix",
            """
            import jax, jax.numpy as jnp, optax
            from flax import nnx

            class Net(nnx.Module):
                def __init__(self, rngs):
                    self.linear = nnx.Linear(2, 2, rngs=rngs)
                    self.bn = nnx.BatchNorm(2, use_running_average=True, rngs=rngs)
                def __call__(self, x):
                    return self.bn(self.linear(x))

            def run():
                model, x = Net(nnx.Rngs(0)), jnp.ones((4, 2))
                graphdef, params, rest = nnx.split(model, nnx.Param, ...)
                grads = nnx.grad(lambda p, r: jnp.sum(nnx.merge(graphdef, p, r)(x) ** 2))(params, rest)
                k1 = grads['linear']['kernel'].shape
                g_model = nnx.grad(lambda m: jnp.sum(m(x) ** 2))(model)
                k2 = nnx.state(g_model, nnx.Param)['linear']['kernel'].shape
                nnx.update(model, jax.tree.map(lambda p, g: p - 0.1 * g, params, grads))
                nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param).update(model, grads)
                return type(grads).__name__, k1, k2
            """,
        ),
        Valid(
            "module-typed-gradient",
            """
            import jax, jax.numpy as jnp
            from flax import nnx

            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            grads = nnx.grad(lambda m: jnp.sum(m(jnp.ones((1, 2)))))(model)
            kernel_grad = grads.kernel[...]
            scaled = jax.tree.map(lambda g: 0.1 * g, grads)
            new_model = jax.tree.map(lambda p, g: p - g, model, scaled)
            """,
        ),
        Valid(
            "compat-grad-keeps-state",
            """
            import jax.numpy as jnp
            from flax import nnx

            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            grads = nnx.compat.grad(lambda m: jnp.sum(m(jnp.ones((1, 2)))))(model)
            kernel_grad = grads['kernel']
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "subscript-items-pure-dict",
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
            kernel = grads['linear']['kernel']  # NNX403
            names = [path for path, _ in grads.items()]  # NNX403
            plain = nnx.to_pure_dict(grads)  # NNX403
            """,
            tree_mode=raises("TypeError", "object is not subscriptable"),
        ),
        Invalid(
            "manual-sgd-against-param-state",
            """
            import jax
            from flax import nnx

            def train_step(model, x, y):
                def loss_fn(model):
                    return ((model(x) - y) ** 2).mean()
                loss, grads = nnx.value_and_grad(loss_fn)(model)
                params = nnx.state(model, nnx.Param)
                nnx.update(model, jax.tree.map(lambda p, g: p - 0.1 * g, params, grads))  # NNX403
                return loss
            """,
            tree_mode=raises("ValueError", "pytree structure error"),
        ),
    ]


def _concrete(code: str) -> str:
    """``code`` run under ``jax.ensure_compile_time_eval()``: concrete values inside the trace."""
    import textwrap

    return "with jax.ensure_compile_time_eval():  # concrete numbers inside the trace\n" + textwrap.indent(code, "    ")


def _application(facts: dict, forward: str) -> str:
    """Reproduction code that applies the flagged transform and binds ``grads``.

    Uses the facts' ``transform``, ``has_aux``, ``argnums`` (int or tuple) and the
    differentiated ``position``; ``model`` and ``x`` must exist, the other differentiated
    positions get ``x``. ``forward`` is the loss over the model, with ``{m}`` for it.
    """
    transform = facts.get("transform") if facts.get("transform") in ("grad", "value_and_grad") else "grad"
    position = bounded_index(facts.get("position") if isinstance(facts.get("position"), int) else 0, "the position")
    argnums = [bounded_index(a, "argnums") for a in facts.get("argnums") or [position]
               if isinstance(a, int)] or [position]
    if position not in argnums:
        argnums = [position]
    count = max(argnums) + 1
    arguments = ", ".join("model" if i == position else "x" for i in range(count))
    parameters = ", ".join(f"a{i}" for i in range(count))
    value = forward.format(m=f"a{position}") + "".join(f" + jnp.sum(a{i})" for i in range(count) if i != position)
    tuple_argnums = bool(facts.get("argnums_is_tuple")) or len(argnums) > 1
    argnums_text = repr(tuple(argnums)) if tuple_argnums else repr(argnums[0])
    has_aux = bool(facts.get("has_aux"))
    if has_aux:
        value = f"({value}, 0.0)"
    result = "grads"
    if transform == "value_and_grad":
        result = "(_, aux), grads" if has_aux else "_, grads"
    elif has_aux:
        result = "grads, aux"
    pick = f"[{argnums.index(position)}]" if tuple_argnums else ""
    return _dedent(f"""
        def loss({parameters}):
            return {value}

        {result} = nnx.{transform}(loss, argnums={argnums_text}{", has_aux=True" if has_aux else ""})({arguments})
        grads = grads{pick}
    """)


#: NNX403 reproductions: State methods (called on ``G``) that both implementations' States have.
_METHOD_CALLS = {
    "items": "G.items()", "keys": "G.keys()", "values": "G.values()", "flat_state": "G.flat_state()",
    "get": "G.get('linear')", "filter": "G.filter(nnx.Param)",
}
#: NNX403: State functions that tree_runtime does not provide.
_RUNTIME_LACKS = frozenset({
    "flax.nnx.filter_state", "flax.nnx.replace_by_pure_dict", "flax.nnx.traversals.flatten_mapping",
    "flax.traversals.flatten_mapping", "flax.nnx.statelib.to_flat_state",
})
#: NNX403 reproductions: functions on which both implementations raise the same category.
_FUNCTION_CALLS = {
    "flax.nnx.to_pure_dict": ("nnx.to_pure_dict(G)", "other:AttributeError"),
    "builtins.dict": ("dict(G)", "other:TypeError"),
    "dict": ("dict(G)", "other:TypeError"),
}


def _usage_facts(context, where: nodes.NodeNG) -> dict[str, Any]:
    """What kind of State use ``where`` is (for the reproduction)."""
    if isinstance(where, nodes.Subscript):
        key = where.slice.value if isinstance(where.slice, nodes.Const) else None
        return {"usage_kind": "subscript", "key": key if isinstance(key, (str, int)) else None}
    if isinstance(where, nodes.Call):
        if isinstance(where.func, nodes.Attribute) and where.func.attrname in STATE_METHODS and not context.qualified_name(where.func):
            return {"usage_kind": "method", "method": where.func.attrname}
        name = context.qualified_name(where.func) or ""
        if name in TREE_MAPS or name == "optax.apply_updates":
            return {"usage_kind": "tree-map", "function": name}
        if isinstance(where.func, nodes.Attribute) and where.func.attrname in STATE_METHODS and name not in STATE_FUNCTIONS:
            return {"usage_kind": "method", "method": where.func.attrname}
        return {"usage_kind": "function", "function": name}
    return {"usage_kind": "iteration"}


#: Variable types that both ``flax.nnx`` and ``tree_runtime`` provide.
_SHARED_VARIABLE_TYPES = frozenset({"Variable", "BatchStat", "Cache", "Intermediate", "Param", "Perturbation"})


def _dedent(code: str) -> str:
    import textwrap

    return textwrap.dedent(code).strip("\n") + "\n"
