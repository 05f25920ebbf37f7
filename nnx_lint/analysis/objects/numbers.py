"""The numbers an argument expression can hold in one call-site context, where the object-flow
model's constants do not reach: a guard's parameter passed a computed value
(``drop_path=float(dpr[i])`` with ``dpr = np.linspace(0, drop_path_rate, depth)``, and
``drop_path_rate`` left at its default of 0.0, makes every element 0.0).

A small, closed evaluator: literals, the function's parameters (through the solve's constants in
the context), names bound once in the function, ``float`` / ``int``, subscripts and
``numpy.linspace`` / ``jax.numpy.linspace`` between equal ends. An array stands for the set of
its element values. Anything else is unknown (None), so a guard stays undecided."""
from __future__ import annotations

from astroid import nodes
from astroid.exceptions import NoDefault

import nnx_lint.analysis.objects.abstract as kinds
from nnx_lint.analysis.call_sites import calls_in_other_files
from nnx_lint.analysis.objects.contexts import is_rooted
from nnx_lint.analysis.objects.field_reads import receiver_of
from nnx_lint.base.node_index import nodes_of_class
from nnx_lint.flax_table.names import LINSPACES

#: Calls whose result is the number they are given (elementwise for an array of one value).
_CONVERSIONS = frozenset({"builtins.float", "builtins.int"})
_MAX_DEPTH = 8


def argument_numbers(model, call: nodes.Call, function: nodes.FunctionDef, parameter: str,
                     context) -> frozenset | None:
    """The numbers ``call`` (a call of ``function``, as a constructor or plain call) passes for
    ``parameter``, evaluated in ``context`` (the context of the function holding ``call``); None
    when the argument is absent (the solve's default answers that) or not evaluable."""
    argument = _argument(call, function, parameter)
    if argument is None:
        return None
    return _numbers(model, argument, argument.scope(), context, 0)


def _argument(call: nodes.Call, function: nodes.FunctionDef, parameter: str) -> nodes.NodeNG | None:
    """The expression ``call`` passes for ``parameter``: by keyword, or by position when no
    starred argument comes first (``self`` of a method is not passed)."""
    for keyword in call.keywords or ():
        if keyword.arg == parameter:
            return keyword.value
    positional = [a.name for a in [*(function.args.posonlyargs or ()), *function.args.args]]
    if receiver_of(function) is not None and positional:  # an instance method: `self` is not passed
        positional = positional[1:]
    if parameter not in positional:
        return None
    index = positional.index(parameter)
    arguments = call.args or []
    if any(isinstance(a, nodes.Starred) for a in arguments[:index + 1]) or index >= len(arguments):
        return None
    return arguments[index]


def _numbers(model, node: nodes.NodeNG, scope: nodes.NodeNG, context, depth: int) -> frozenset | None:
    if depth > _MAX_DEPTH:
        return None
    if isinstance(node, nodes.Const):
        value = node.value
        return frozenset({value}) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if isinstance(node, nodes.Name):
        return _name_numbers(model, node, scope, context, depth)
    if isinstance(node, nodes.Subscript):
        return _numbers(model, node.value, scope, context, depth + 1)
    if isinstance(node, nodes.Call) and not node.keywords:
        name = _builtin(node.func) or model.world.classes.resolver_for(scope).qualified_name(node.func)
        if name in _CONVERSIONS and len(node.args) == 1:
            found = _numbers(model, node.args[0], scope, context, depth + 1)
            convert = int if name.endswith("int") else float
            try:
                return None if found is None else frozenset(convert(v) for v in found)
            except (OverflowError, ValueError):  # int(1e999), int(nan): the program itself would raise
                return None
        if name in LINSPACES and len(node.args) == 3:
            start = _numbers(model, node.args[0], scope, context, depth + 1)
            stop = _numbers(model, node.args[1], scope, context, depth + 1)
            if start is not None and len(start) == 1 and start == stop:
                return frozenset(float(v) for v in start)
    return None


def _callers_numbers(model, function: nodes.FunctionDef, parameter: str) -> frozenset | None:
    """For an entry no analysed call reaches (a class of the linted file built only in other
    files): the literal numbers its calls in the other project files pass for ``parameter``, its
    default where a call leaves it out. None when there is no such call, or one passes anything
    else (a computed value, ``*args`` / ``**kwargs``)."""
    project = getattr(model.world.context, "project", None)
    target = function.parent if function.name == "__init__" and isinstance(function.parent, nodes.ClassDef) else function
    if project is None or target.parent is not target.root():
        return None
    calls = calls_in_other_files(target, project)
    if not calls:
        return None
    found = set()
    for call in calls:
        if any(isinstance(a, nodes.Starred) for a in call.args) or any(k.arg is None for k in call.keywords or ()):
            return None
        argument = _argument(call, function, parameter)
        if argument is None:
            try:
                argument = function.args.default_value(parameter)
            except NoDefault:  # a required parameter the call leaves out
                return None
        if not isinstance(argument, nodes.Const) or not isinstance(argument.value, (int, float)) \
                or isinstance(argument.value, bool):
            return None
        found.add(argument.value)
    return frozenset(found)


def _builtin(func: nodes.NodeNG) -> str | None:
    """``builtins.float`` for a plain ``float`` that no binding of the file shadows."""
    if isinstance(func, nodes.Name):
        scope, _bindings = func.lookup(func.name)
        if isinstance(scope, nodes.Module) and scope.name == "builtins":
            return f"builtins.{func.name}"
    return None


def _name_numbers(model, node: nodes.Name, scope: nodes.NodeNG, context, depth: int) -> frozenset | None:
    """A parameter's constants in ``context``, or the value of a name bound once in ``scope``."""
    if not isinstance(scope, nodes.FunctionDef):
        return None
    bindings = [b for b in nodes_of_class(scope, nodes.AssignName) if b.name == node.name and b.scope() is scope]
    if len(bindings) != 1:
        return None
    binding = bindings[0]
    if isinstance(binding.parent, nodes.Arguments):
        values = model.solver.points.get(model.solver.var(("b", binding), scope, context), set())
        if is_rooted(context) and any(v.kind == kinds.OUTSIDE for v in values):  # the default, or a caller's value
            return _callers_numbers(model, scope, node.name)
        numbers = [v.definition for v in values if v.kind == kinds.CONSTANT]
        if not values or len(numbers) != len(values) \
                or any(not isinstance(n, (int, float)) or isinstance(n, bool) for n in numbers):
            return None
        return frozenset(numbers)
    statement = binding.parent
    if isinstance(statement, nodes.Assign) and statement.targets == [binding]:
        return _numbers(model, statement.value, scope, context, depth + 1)
    return None
