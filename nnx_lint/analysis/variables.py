"""Which Variable kinds a Module holds.

A service for the ``nnx.grad`` / ``nnx.custom_vjp`` rules (NNX4xx, NNX5xx), built from
the tree alone (never importing flax, never inferring into it):
:class:`VariableModel` — ``holdings(class_ref)``: the Variables a Module class holds
after construction, transitively through its submodules, each classified as a float
``Param``, RNG state (``RngKey``/``RngCount``), an integer/bool leaf, a float non-Param
leaf (``BatchStat``, ``Cache``, a float ``nnx.Variable``, a plain float array) or a
non-Param leaf of unknown dtype. Built-in flax layers come from :data:`FLAX_LAYERS`
(measured against flax 0.12.8: construct the layer, list its leaves). Where an
``nnx.grad`` result flows is :mod:`nnx_lint.analysis.gradient_flow`'s.

What is not understood is "unknown": rules stay silent on it and say so in facts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.flax_table import nnx_api
from nnx_lint.flax_table.names import NNX_DATA, NNX_DICT, NNX_LIST, NNX_PREFIX, NUMPY_MODULES
from nnx_lint.analysis.calls import constant_bool
from nnx_lint.analysis.refs import RNG_TYPES
from nnx_lint.analysis.flow import bound_values
from nnx_lint.analysis.later_stores import LaterStore, stores_onto
from nnx_lint.analysis.names import base_classes
from nnx_lint.analysis.values import value_model
from nnx_lint.flax_table.flax_layers import (  # noqa: F401 - the categories are part of this module's API
    FLAX_LAYERS,
    FLOAT_STATE,
    INTEGER,
    NON_DIFFERENTIABLE,
    NON_PARAM,
    PARAM,
    RNG,
    UNKNOWN_DTYPE,
    LayerSpec,
)

if TYPE_CHECKING:
    from nnx_lint.analysis.class_info import ClassRef
    from nnx_lint.analysis.context import FileContext

# Categories of a held leaf.
_MAX_DEPTH = 8


@dataclass(frozen=True)
class Holding:
    """One leaf (or group of leaves) a class holds after construction."""

    path: str
    variable_type: str
    category: str
    #: The store sits under an ``if``/loop/``try`` or an ``a if c else b``: it may not happen.
    conditional: bool = False
    #: Where the store is written (file line), for facts.
    line: int | None = None
    #: Whether the forward pass reads the stored value (then it gets a non-zero gradient):
    #: True, False, or None when the code does not tell.
    read: bool | None = None

    def as_fact(self) -> dict:
        fact = {"path": self.path, "type": self.variable_type, "category": self.category}
        if self.conditional:
            fact["conditional"] = True
        if self.read is not None:
            fact["read_in_forward"] = self.read
        return fact


@dataclass
class Holdings:
    """What one class (or value) holds: leaves, plus the parts that could not be typed."""

    leaves: list[Holding] = field(default_factory=list)
    #: Paths whose value has an unknown class (an external library, a function result).
    unknown: list[str] = field(default_factory=list)

    def extend(self, other: Holdings, prefix: str, conditional: bool = False) -> None:
        for leaf in other.leaves:
            self.leaves.append(
                Holding(_join(prefix, leaf.path), leaf.variable_type, leaf.category,
                        leaf.conditional or conditional, leaf.line, leaf.read)
            )
        self.unknown.extend(_join(prefix, path) for path in other.unknown)

    def of(self, categories: frozenset[str] | set[str], *, certain: bool = True) -> list[Holding]:
        """The leaves in ``categories`` (only unconditional ones when ``certain``)."""
        return [h for h in self.leaves if h.category in categories and not (certain and h.conditional)]

    def variable_types(self) -> list[str]:
        return sorted({h.variable_type for h in self.leaves})

    @property
    def complete(self) -> bool:
        return not self.unknown


def _join(prefix: str, path: str) -> str:
    if not prefix:
        return path
    if not path:
        return prefix
    return f"{prefix}.{path}"


#: Variable types by qualified name: ``Param`` (and subclasses) vs state whose category
#: depends on the stored value's dtype.
PARAM_TYPES = nnx_api.qualified(nnx_api.variable_types("param"))
#: ``Metric`` is a Pytree of metric Variables, not a Variable; its values count as state too.
STATE_TYPES = nnx_api.qualified(nnx_api.variable_types("state") | {"Metric"})
#: Containers whose contents are their arguments' contents.
_CONTAINERS = frozenset({NNX_LIST, NNX_DICT, NNX_DATA, "builtins.list", "builtins.tuple",
                         "builtins.dict", "list", "tuple", "dict"})

_INT_DTYPES = frozenset({
    "int", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool_",
    "integer", "signedinteger", "unsignedinteger",
})
_FLOAT_DTYPES = frozenset({"float", "float16", "float32", "float64", "bfloat16", "complex64", "complex128", "float_"})
_ARRAY_MODULES = NUMPY_MODULES
_ARRAY_BUILDERS = frozenset({"array", "asarray"})
_FILLED_BUILDERS = frozenset({"zeros", "ones", "empty", "full"})


class VariableModel:
    """Per-file service: what a Module class holds (memoised)."""

    def __init__(self, context: FileContext) -> None:
        self.context = context
        self._memo: dict[int, Holdings] = {}

    # -- classes ------------------------------------------------------------------------
    def holdings_of_ref(self, ref: ClassRef | None, call: nodes.Call | None = None, depth: int = 0) -> Holdings | None:
        """What an instance of ``ref`` holds (``call``: its constructor call, if seen); None if unknown."""
        if ref is None or depth > _MAX_DEPTH:
            return None
        if ref.definition is not None:
            return self.holdings(ref.definition, depth)
        spec = FLAX_LAYERS.get(ref.qualified_name)
        if spec is not None:
            return self._layer_holdings(spec, call, depth)
        if ref.qualified_name in RNG_TYPES:
            return Holdings([Holding("", "RngKey/RngCount", RNG, line=call.lineno if call else None)])
        return None

    def holdings(self, classdef: nodes.ClassDef, depth: int = 0) -> Holdings:
        """What an instance of the project class ``classdef`` holds after ``__init__``."""
        key = id(classdef)
        if key in self._memo:
            return self._memo[key]
        result = Holdings()
        self._memo[key] = result  # cycle guard: a class holding itself adds nothing more
        info = self.context.classes.info(classdef)
        for base in info.bases:
            spec = FLAX_LAYERS.get(base.qualified_name)
            if spec is not None:  # class MyLinear(nnx.Linear): the layer's own leaves
                result.extend(self._layer_holdings(spec, None, depth + 1), "")
        final: dict[str, list] = {}
        for store in info.stores:
            final.setdefault(store.path, []).append(store)
        for path, stores in final.items():
            if any(p != path and path.startswith(p + ".") for p in final):
                continue  # `self.a.b = ...` under a stored `self.a`: counted with `a`
            for store in stores:
                conditional = len(stores) > 1 or _is_conditional(store.target)
                value_holdings = self.holdings_of_value(store.value, depth + 1)
                if value_holdings is None:
                    result.unknown.append(path)
                    continue
                if any(leaf.path == "" and leaf.category in (FLOAT_STATE, UNKNOWN_DTYPE) for leaf in value_holdings.leaves):
                    read = _attribute_read(classdef, path.split(".")[0], info)
                    value_holdings = Holdings(
                        [Holding(leaf.path, leaf.variable_type, leaf.category, leaf.conditional, leaf.line,
                                 read if leaf.path == "" else leaf.read) for leaf in value_holdings.leaves],
                        value_holdings.unknown,
                    )
                result.extend(value_holdings, path, conditional)
        for path, values in _appended_values(classdef).items():
            for value in values:
                found = self.holdings_of_value(value, depth + 1)
                if found is None:
                    result.unknown.append(path)
                else:
                    result.extend(found, path, conditional=False)
        return result

    def holdings_stored_onto(self, expression: nodes.NodeNG) -> tuple[Holdings, list[LaterStore]] | None:
        """What is stored onto the object ``expression`` denotes after its construction
        (:mod:`nnx_lint.analysis.later_stores`), with the stores; None when nothing is."""
        stores = stores_onto(expression, self.context.project)
        if not stores:
            return None
        result = Holdings()
        for store in stores:
            found = self.holdings_of_value(store.value)
            if found is None:
                result.unknown.append(store.attribute)
            else:
                result.extend(found, store.attribute)
        return result, stores

    # -- values -------------------------------------------------------------------------
    def holdings_of_value(self, value: nodes.NodeNG | None, depth: int = 0) -> Holdings | None:
        """What a stored value holds; an empty :class:`Holdings` for static data; None if unknown."""
        if value is None or depth > _MAX_DEPTH:
            return None
        if isinstance(value, nodes.Const):
            return Holdings()  # python scalars/strings/None are static (not pytree children)
        if isinstance(value, (nodes.List, nodes.Tuple, nodes.Set)):
            return self._union([(str(i), e) for i, e in enumerate(value.elts)], depth)
        if isinstance(value, nodes.Dict):
            return self._union([(_key_text(k), v) for k, v in value.items], depth)
        if isinstance(value, (nodes.ListComp, nodes.GeneratorExp)):
            return self._union([("*", value.elt)], depth)
        if isinstance(value, nodes.DictComp):
            return self._union([("*", value.value)], depth)
        if isinstance(value, nodes.IfExp):
            merged = Holdings()
            for branch in (value.body, value.orelse):
                found = self.holdings_of_value(branch, depth + 1)
                if found is None:
                    return None
                merged.extend(found, "", conditional=True)
            return merged
        if isinstance(value, nodes.Name):
            if self._is_rngs(value):
                return Holdings([Holding("", "RngKey/RngCount", RNG, line=value.lineno)])
            bound = bound_values(value)
            if not bound:
                return None
            merged = Holdings()
            for item in bound:
                found = self.holdings_of_value(item, depth + 1)
                if found is None:
                    return None
                merged.extend(found, "", conditional=len(bound) > 1)
            for appended in _name_appends(value):
                found = self.holdings_of_value(appended, depth + 1)
                if found is None:
                    return None
                merged.extend(found, "*")
            return merged
        if isinstance(value, nodes.Attribute):
            return self._attribute_holdings(value, depth)
        if isinstance(value, nodes.Call):
            return self._call_holdings(value, depth)
        return None

    def _union(self, items: list[tuple[str, nodes.NodeNG]], depth: int) -> Holdings:
        """What ``items`` hold together, each under its path; an item of unknown class is an unknown path."""
        merged = Holdings()
        for path, item in items:
            found = self.holdings_of_value(item, depth + 1)
            if found is None:
                merged.unknown.append(path)
            else:
                merged.extend(found, path)
        return merged

    def _attribute_holdings(self, value: nodes.Attribute, depth: int) -> Holdings | None:
        # `rngs.dropout` is an RngStream, `self.rngs` an Rngs; `rngs.fork` is a method (handled at the call).
        if self._is_rngs(value):
            return Holdings([Holding("", "RngKey/RngCount", RNG, line=value.lineno)])
        return None

    def _call_holdings(self, call: nodes.Call, depth: int) -> Holdings | None:
        func = call.func
        # rngs.fork(), rngs.dropout.fork(), rngs['dropout'].fork(): an RngStream/Rngs copy.
        if isinstance(func, nodes.Attribute) and func.attrname in ("fork", "split") and self._is_rngs(func.expr):
            return Holdings([Holding("", "RngKey/RngCount", RNG, line=call.lineno)])
        name = self.context.qualified_name(func)
        if name in PARAM_TYPES:
            return Holdings([Holding("", name.rpartition(".")[2], PARAM, line=call.lineno)])
        if name in STATE_TYPES or (name and name.startswith(NNX_PREFIX) and name.rpartition(".")[2] in ("RngKey", "RngCount")):
            return Holdings([Holding("", name.rpartition(".")[2], self._value_category(call), line=call.lineno)])
        if name in _CONTAINERS:
            parts: list[tuple[str, nodes.NodeNG]] = [("", a) for a in call.args]
            parts += [(k.arg or "", k.value) for k in call.keywords or []]
            return self._union(parts, depth)
        if name and name.startswith(_ARRAY_MODULES):
            category = _array_category(call, name)
            if category is None:
                return None
            return Holdings([Holding("", "array", category, line=call.lineno)])
        # a project class, also one defined inside a function (tests define Variable types there)
        ref = self.context.classes.resolve(name) or self.context.classes.class_of(call)
        if ref is not None and ref.definition is not None:
            info = self.context.classes.info(ref.definition)
            variable_kind = self._user_variable_kind(ref.definition)
            if variable_kind is not None:
                category = PARAM if variable_kind == "param" else self._value_category(call)
                return Holdings([Holding("", ref.short_name, category, line=call.lineno)])
            if info.is_nnx_module:
                return self.holdings(ref.definition, depth + 1)
            return None
        if ref is not None:
            return self.holdings_of_ref(ref, call, depth + 1)
        return None

    def _user_variable_kind(self, classdef: nodes.ClassDef, depth: int = 0) -> str | None:
        """"param" / "state" for project subclasses of nnx Variables, else None."""
        if depth > _MAX_DEPTH:
            return None
        resolver = self.context.classes.resolver_for(classdef)
        for base in base_classes(classdef):
            name = resolver.qualified_name(base)
            if name in PARAM_TYPES:
                return "param"
            if name in STATE_TYPES:
                return "state"
            ref = self.context.classes.resolve(name)
            if ref is not None and ref.definition is not None:
                found = self._user_variable_kind(ref.definition, depth + 1)
                if found:
                    return found
        return None

    def _layer_holdings(self, spec: LayerSpec, call: nodes.Call | None, depth: int) -> Holdings:
        result = Holdings()
        line = call.lineno if call is not None else None
        read = None
        if spec.read_when == "always":
            read = True
        elif spec.read_when == "use_running_average" and call is not None:
            read = constant_bool(_keyword(call, "use_running_average")) is True or None
        for path, variable_type, category in spec.leaves:
            result.leaves.append(Holding(path, variable_type, category, line=line, read=read if category != PARAM else None))
        rng = _rng_state(spec, call)
        if rng is not False and spec.rng_when is not None:
            result.leaves.append(Holding(spec.rng_path, "RngKey/RngCount", RNG, conditional=rng is None, line=line))
        if call is not None:
            children: list[tuple[str, nodes.NodeNG]] = []
            if spec.all_positional:
                children += [(f"layers.{i}", a) for i, a in enumerate(call.args)]
            for child in spec.children:
                if isinstance(child, int) and child < len(call.args):
                    children.append((f"arg{child}", call.args[child]))
                elif isinstance(child, str):
                    for keyword in call.keywords or []:
                        if keyword.arg == child:
                            children.append((child, keyword.value))
            result.extend(self._union(children, depth), "")
        return result

    def _value_category(self, call: nodes.Call) -> str:
        """INTEGER / FLOAT_STATE / UNKNOWN_DTYPE for ``SomeVariable(value, ...)``."""
        value = call.args[0] if call.args else _keyword(call, "value")
        if value is None:
            return UNKNOWN_DTYPE
        category = self._expression_dtype(value)
        return category or UNKNOWN_DTYPE

    def _expression_dtype(self, value: nodes.NodeNG, depth: int = 0) -> str | None:
        if isinstance(value, nodes.Const):
            if isinstance(value.value, (bool, int)):
                return INTEGER
            if isinstance(value.value, (float, complex)):
                return FLOAT_STATE
            return None
        if isinstance(value, nodes.UnaryOp):
            return self._expression_dtype(value.operand, depth)
        if isinstance(value, nodes.Call):
            name = self.context.qualified_name(value.func)
            if name and name.startswith(_ARRAY_MODULES):
                return _array_category(value, name)
            return None
        if isinstance(value, nodes.Name) and depth < 3:
            found = {self._expression_dtype(v, depth + 1) for v in bound_values(value)}
            return found.pop() if len(found) == 1 else None
        return None

    def _is_rngs(self, expression: nodes.NodeNG) -> bool:
        """Whether ``expression`` holds an ``nnx.Rngs`` or a stream of one: the value model's one answer."""
        return value_model(self.context).is_rngs(expression)


def _rng_state(spec: LayerSpec, call: nodes.Call | None) -> bool | None:
    """Whether a layer constructed by ``call`` stores RNG state: True, False, None (unknown)."""
    if spec.rng_when is None:
        return False
    if call is None:  # a subclass: constructor arguments unknown
        return None if spec.rng_when != "unless-rngs-false" else True
    rngs = _keyword(call, "rngs")
    if spec.rng_when == "rngs-given":
        if rngs is None:
            return False
        return not (isinstance(rngs, nodes.Const) and rngs.value is None)
    if spec.rng_when == "dropout-rate":
        if constant_bool(_keyword(call, "keep_rngs")) is False or rngs is None:
            return False
        rate = _keyword(call, "dropout_rate")
        if rate is None:
            return False
        if isinstance(rate, nodes.Const) and isinstance(rate.value, (int, float)):
            return rate.value > 0
        return None
    if spec.rng_when == "keep-rngs":
        keep = constant_bool(_keyword(call, "keep_rngs"))
        return keep if keep is not None else (False if _keyword(call, "keep_rngs") is None else None)
    if spec.rng_when == "unless-rngs-false":  # nnx.RNN: rngs=True (default) or an Rngs
        return constant_bool(rngs) is not False
    return None


def _keyword(call: nodes.Call, name: str) -> nodes.NodeNG | None:
    for keyword in call.keywords or []:
        if keyword.arg == name:
            return keyword.value
    return None


def _dtype_name(node: nodes.NodeNG | None) -> str | None:
    if node is None:
        return None
    if isinstance(node, nodes.Const) and isinstance(node.value, str):
        return node.value
    if isinstance(node, nodes.Name):
        return node.name
    if isinstance(node, nodes.Attribute):
        return node.attrname
    return None


def _dtype_category(dtype: str | None) -> str | None:
    if dtype in _INT_DTYPES:
        return INTEGER
    if dtype in _FLOAT_DTYPES:
        return FLOAT_STATE
    return None


def _array_category(call: nodes.Call, name: str) -> str | None:
    """INTEGER / FLOAT_STATE for ``jnp.array(0)``, ``jnp.zeros(s, jnp.int32)``, ``jnp.int32(0)``, ..."""
    function = name.rpartition(".")[2]
    if function in _INT_DTYPES or function in _FLOAT_DTYPES:  # jnp.int32(0), jnp.float32(1)
        return _dtype_category(function)
    dtype = _keyword(call, "dtype")
    if function in _ARRAY_BUILDERS:
        if dtype is None and len(call.args) > 1:
            dtype = call.args[1]
        if dtype is not None:
            return _dtype_category(_dtype_name(dtype))
        if call.args:
            return _literal_category(call.args[0])
        return None
    if function in _FILLED_BUILDERS:
        position = 2 if function == "full" else 1
        if dtype is None and len(call.args) > position:
            dtype = call.args[position]
        if dtype is not None:
            return _dtype_category(_dtype_name(dtype))
        if function == "full" and len(call.args) > 1:
            return _literal_category(call.args[1])
        return FLOAT_STATE  # jnp.zeros/ones/empty default to float
    return None


def _literal_category(node: nodes.NodeNG) -> str | None:
    if isinstance(node, nodes.Const):
        if isinstance(node.value, (bool, int)):
            return INTEGER
        if isinstance(node.value, float):
            return FLOAT_STATE
        return None
    if isinstance(node, nodes.UnaryOp):
        return _literal_category(node.operand)
    if isinstance(node, (nodes.List, nodes.Tuple)) and node.elts:
        found = {_literal_category(e) for e in node.elts}
        if FLOAT_STATE in found:
            return FLOAT_STATE if None not in found else None
        return found.pop() if len(found) == 1 else None
    return None


def _key_text(key: nodes.NodeNG | None) -> str:
    if isinstance(key, nodes.Const):
        return str(key.value)
    return "*"


def _attribute_read(classdef: nodes.ClassDef, attribute: str, info) -> bool:
    """Whether a method other than ``__init__`` reads ``self.<attribute>`` outside its own update."""
    owners = [classdef] + [base.definition for base in info.bases if base.definition is not None]
    for owner in owners:
        for method in owner.mymethods():
            if method.name == "__init__" or not method.args.args:
                continue
            self_name = method.args.args[0].name
            for node in method.nodes_of_class(nodes.Attribute):
                if node.attrname != attribute or not (isinstance(node.expr, nodes.Name) and node.expr.name == self_name):
                    continue
                statement = node.statement()
                if isinstance(statement, (nodes.Assign, nodes.AugAssign)) and _targets_attribute(statement, attribute, self_name):
                    continue  # `self.v[...] = f(self.v[...])`: an update, not a use by the output
                return True
    return False


def _targets_attribute(statement: nodes.NodeNG, attribute: str, self_name: str) -> bool:
    targets = statement.targets if isinstance(statement, nodes.Assign) else [statement.target]
    for target in targets:
        for node in target.nodes_of_class((nodes.Attribute, nodes.AssignAttr)):
            if node.attrname == attribute and isinstance(node.expr, nodes.Name) and node.expr.name == self_name:
                return True
    return False


def _is_conditional(target: nodes.NodeNG) -> bool:
    """Whether a store runs only on some paths of its method (if/loop/try/with-less)."""
    current = target.parent
    while current is not None and not isinstance(current, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
        if isinstance(current, (nodes.If, nodes.For, nodes.While, nodes.Try, nodes.IfExp)):
            return True
        current = current.parent
    return False


def _appended_values(classdef: nodes.ClassDef) -> dict[str, list[nodes.NodeNG]]:
    """``self.layers.append(X)`` in ``__init__``: X is held under ``layers``."""
    found: dict[str, list[nodes.NodeNG]] = {}
    init = classdef.locals.get("__init__")
    if not init or not isinstance(init[-1], nodes.FunctionDef) or not init[-1].args.args:
        return found
    self_name = init[-1].args.args[0].name
    for call in init[-1].nodes_of_class(nodes.Call):
        func = call.func
        if (
            isinstance(func, nodes.Attribute)
            and func.attrname == "append"
            and isinstance(func.expr, nodes.Attribute)
            and isinstance(func.expr.expr, nodes.Name)
            and func.expr.expr.name == self_name
            and call.args
        ):
            found.setdefault(f"{func.expr.attrname}.*", []).append(call.args[0])
    return found


def _name_appends(name: nodes.Name) -> list[nodes.NodeNG]:
    """``layers.append(X)`` in the scope of a list bound to ``name``: the X values."""
    scope = name.scope()
    values = []
    for call in scope.nodes_of_class(nodes.Call):
        func = call.func
        if (
            isinstance(func, nodes.Attribute)
            and func.attrname == "append"
            and isinstance(func.expr, nodes.Name)
            and func.expr.name == name.name
            and call.args
        ):
            values.append(call.args[0])
    return values


def variable_model(context: FileContext) -> VariableModel:
    """The file's :class:`VariableModel` (one per :class:`FileContext`, shared by rules)."""
    return context.service(VariableModel)
