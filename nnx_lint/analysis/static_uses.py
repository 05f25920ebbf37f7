"""Python values and the places that need them concrete: where a traced value would raise.

JAX turns every leaf of a traced function's arguments into a tracer, Python ``int``, ``bool``
and ``float`` leaves included (a tuple of ints is a pytree of int leaves). Most code does not
care, but some needs the value itself: an ``if`` test, ``range(n)``, a shape, a slice bound.
When a transform (or an API that traces, such as Tree Mode's ``nnx.tabulate``) flattens a
Python value that the callee uses that way, the callee raises. This module answers the two
halves, from the syntax alone: is an expression a Python value (:func:`python_value`), and where
does a function need one of its parameters concrete (:func:`static_use`).

Unknown is an answer: an argument of unknown origin is not a Python value, and a parameter
handed to a function this module cannot read has no static use.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from astroid import nodes

from nnx_lint.analysis.flow import bound_values
from nnx_lint.analysis.transformed import body_nodes

Function = nodes.FunctionDef | nodes.AsyncFunctionDef

#: What :func:`python_value` calls the values it recognises.
STRING, BOOL, INT, FLOAT, TUPLE = "str", "bool", "int", "float", "tuple"
_MAX_DEPTH = 3
#: Attributes of an array that are Python values even while the array is traced.
_INT_ATTRIBUTES = frozenset({"ndim", "size"})
#: Calls whose positional arguments (``x.reshape(a, b)``) or ``shape`` need concrete ints:
#: name -> index of the first shape argument (jnp functions; ``x.reshape`` as a method is 0).
_SHAPE_CALLS = {"reshape": 1, "zeros": 0, "ones": 0, "empty": 0, "full": 0, "broadcast_to": 1, "tile": 1,
                "eye": 0, "arange": 0}
_SHAPE_KEYWORDS = frozenset({"shape", "newshape"})
_CONVERSIONS = {
    "range": ("a `range(...)` argument", "TracerIntegerConversionError"),
    "int": ("an `int(...)` argument", "TracerIntegerConversionError"),
    "bool": ("a `bool(...)` argument", "TracerBoolConversionError"),
    "float": ("a `float(...)` argument", "ConcretizationTypeError"),
}
_CONDITION = "TracerBoolConversionError"


@dataclass(frozen=True)
class StaticUse:
    """One place where a function needs a parameter's value concrete."""

    #: The expression that needs it (the ``if`` test, the ``range`` call, the shape argument).
    node: nodes.NodeNG
    #: What needs it, for a message: "an `if` test", "a `range(...)` argument", "a shape".
    use: str
    #: What JAX raises there on a tracer.
    error: str


def python_value(expression: nodes.NodeNG | None, depth: int = 0) -> str | None:
    """The kind of Python value ``expression`` evaluates to when the code shows it, else None.

    Literals (``3``, ``True``, ``"relu"``, ``(4, 10)``), an array's ``.shape`` / ``.ndim``
    (Python values even on a tracer), ``len(...)``, arithmetic and comparisons of these, and a
    local name bound only to such. ``None`` and empty tuples have no leaves: None.

    >>> import astroid
    >>> [python_value(astroid.extract_node(code)) for code in ("(x.shape[0], 10)", "x + 1", "len(xs)")]
    ['tuple', None, 'int']
    """
    if expression is None or depth > _MAX_DEPTH:
        return None
    if isinstance(expression, nodes.Const):
        value = expression.value
        for kind, type_ in ((BOOL, bool), (INT, int), (FLOAT, float), (STRING, str)):
            if isinstance(value, type_):
                return kind
        return None
    if isinstance(expression, (nodes.Tuple, nodes.List)):
        kinds = [python_value(element, depth + 1) for element in expression.elts]
        return TUPLE if kinds and all(kind in (INT, BOOL, FLOAT, TUPLE) for kind in kinds) else None
    if isinstance(expression, nodes.Attribute):
        if expression.attrname == "shape":
            return TUPLE
        return INT if expression.attrname in _INT_ATTRIBUTES else None
    if isinstance(expression, nodes.Subscript) and isinstance(expression.value, nodes.Attribute):
        if expression.value.attrname == "shape":
            return TUPLE if isinstance(expression.slice, nodes.Slice) else INT
        return None
    if isinstance(expression, nodes.Call) and isinstance(expression.func, nodes.Name):
        return INT if expression.func.name == "len" and expression.args else None
    if isinstance(expression, nodes.UnaryOp):
        kind = python_value(expression.operand, depth + 1)
        return (BOOL if expression.op == "not" else kind) if kind in (INT, BOOL, FLOAT) else None
    if isinstance(expression, nodes.BinOp):
        kinds = {python_value(expression.left, depth + 1), python_value(expression.right, depth + 1)}
        if kinds <= {INT, BOOL}:
            return INT
        return FLOAT if kinds <= {INT, BOOL, FLOAT} else None
    if isinstance(expression, nodes.Compare):
        operands = [expression.left, *(operand for _op, operand in expression.ops)]
        return BOOL if all(python_value(operand, depth + 1) in (INT, BOOL, FLOAT, STRING) for operand in operands) \
            else None
    if isinstance(expression, nodes.Name):
        kinds = {python_value(value, depth + 1) for value in bound_values(expression)}
        return kinds.pop() if len(kinds) == 1 else None
    return None


def bound_arguments(function: Function, args: list[nodes.NodeNG], keywords: list[nodes.Keyword],
                    bound: bool = True) -> Iterator[tuple[str, nodes.NodeNG]]:
    """``(parameter, argument)`` for each of a call's positional ``args`` and ``keywords`` that
    can be placed among ``function``'s parameters; ``bound``: the call is through an instance,
    so the first parameter is ``self``. Arguments after a ``*xs`` and ``**kwargs`` spreads are
    not placed."""
    arguments = function.args
    positional = [*(arguments.posonlyargs or []), *(arguments.args or [])][1 if bound else 0:]
    for index, argument in enumerate(args):
        if isinstance(argument, nodes.Starred) or index >= len(positional):
            break
        yield positional[index].name, argument
    names = {parameter.name for parameter in [*positional, *(arguments.kwonlyargs or [])]}
    for keyword in keywords:
        if keyword.arg in names:
            yield keyword.arg, keyword.value


def static_use(function: Function, parameter: str, depth: int = 0,
               binding: nodes.AssignName | None = None) -> StaticUse | None:
    """The first place in ``function``'s body that needs ``parameter``'s value concrete, or None.

    Followed: conditions (``if``/``while``/``assert`` tests, ``not``, ``and``/``or`` operands
    that are not last), ``range``/``int``/``bool``/``float``, shapes (``jnp.zeros(shape)``,
    ``x.reshape(n, -1)``, ``shape=``), slice bounds; through arithmetic, comparisons other than
    ``is``, tuples, local assignments (``m = n * 2``) and calls of this class's methods on
    ``self``. A parameter rebound in the body is not followed (``binding``: the one
    assignment of a local name followed from an assignment of the parameter).

    >>> import astroid
    >>> function = astroid.extract_node("def f(x, n):\\n    for _ in range(n):\\n        x = x + 1\\n    return x")
    >>> static_use(function, "n").use
    'a `range(...)` argument'
    """
    if depth > _MAX_DEPTH:
        return None
    uses = [node for node in body_nodes(function) if isinstance(node, nodes.Name) and node.name == parameter]
    rebound = [node for node in body_nodes(function)
               if isinstance(node, nodes.AssignName) and node.name == parameter and node is not binding]
    if rebound:
        return None
    found = [use for name in uses if (use := _use_of(function, name, depth)) is not None]
    return min(found, key=lambda use: (use.node.lineno or 0, use.node.col_offset or 0)) if found else None


def _use_of(function: Function, name: nodes.NodeNG, depth: int) -> StaticUse | None:
    child, parent = name, name.parent
    while parent is not None:
        if isinstance(parent, (nodes.If, nodes.While, nodes.IfExp, nodes.Assert)) and child is parent.test:
            return StaticUse(child, "an `if` test" if not isinstance(parent, nodes.While) else "a `while` test",
                             _CONDITION)
        if isinstance(parent, nodes.BoolOp):
            if child is not parent.values[-1]:
                return StaticUse(child, f"an `{parent.op}` operand", _CONDITION)
        elif isinstance(parent, nodes.UnaryOp) and parent.op == "not":
            return StaticUse(parent, "a `not` operand", _CONDITION)
        elif isinstance(parent, nodes.Compare):
            if any(op in ("is", "is not") for op, _operand in parent.ops):
                return None
        elif isinstance(parent, nodes.Slice):
            return StaticUse(parent, "a slice bound", "IndexError")
        elif isinstance(parent, nodes.Subscript):
            if child is not parent.value:
                return None  # an integer index may be traced
        elif isinstance(parent, nodes.Keyword):
            if parent.arg in _SHAPE_KEYWORDS:
                return StaticUse(parent.value, "a shape", "TypeError")
            return _passed(function, parent.parent, parent.arg, None, depth)
        elif isinstance(parent, nodes.Call):
            if child is parent.func:
                return None
            return _passed(function, parent, None, parent.args.index(child) if child in parent.args else None, depth)
        elif isinstance(parent, nodes.Assign):
            targets = parent.targets
            if child is parent.value and len(targets) == 1 and isinstance(targets[0], nodes.AssignName):
                return static_use(function, targets[0].name, depth + 1, binding=targets[0])
            return None
        elif not isinstance(parent, (nodes.BinOp, nodes.UnaryOp, nodes.Tuple, nodes.List)):
            return None
        child, parent = parent, parent.parent
    return None


def _passed(function: Function, call: nodes.NodeNG, keyword: str | None, index: int | None,
            depth: int) -> StaticUse | None:
    """A value passed to ``call``: a conversion, a shape, or a parameter of a method of ``self``."""
    if not isinstance(call, nodes.Call):
        return None
    callee = call.func
    name = callee.name if isinstance(callee, nodes.Name) else callee.attrname if isinstance(callee, nodes.Attribute) \
        else None
    if name in _CONVERSIONS and isinstance(callee, nodes.Name) and index is not None:
        use, error = _CONVERSIONS[name]
        return StaticUse(call, use, error)
    if name in _SHAPE_CALLS and index is not None:
        method = isinstance(callee, nodes.Attribute) and name == "reshape" and not _is_module_name(callee.expr)
        if index >= (0 if method else _SHAPE_CALLS[name]):
            return StaticUse(call.args[index], "a shape", "TypeError")
        return None
    if isinstance(callee, nodes.Attribute) and isinstance(callee.expr, nodes.Name) and callee.expr.name == "self":
        method = _own_method(function, callee.attrname)
        if method is None:
            return None
        for parameter, argument in bound_arguments(method, call.args, call.keywords or []):
            if (index is not None and argument is call.args[index]) or \
                    (keyword is not None and parameter == keyword):
                return static_use(method, parameter, depth + 1)
    return None


def _is_module_name(expression: nodes.NodeNG) -> bool:
    """``jnp.reshape`` / ``np.reshape`` (a module function, shape second), not ``x.reshape``."""
    return isinstance(expression, nodes.Name) and expression.name in ("jnp", "np", "numpy", "jax")


def _own_method(function: Function, name: str) -> Function | None:
    """A method ``self.<name>`` of the class that defines ``function`` (its own body only)."""
    classdef = function.parent if isinstance(function.parent, nodes.ClassDef) else None
    found = classdef.locals.get(name) if classdef is not None else None
    return found[-1] if found and isinstance(found[-1], (nodes.FunctionDef, nodes.AsyncFunctionDef)) else None
