"""Where a function is called in its own module, and which argument each parameter gets.

Real code rarely annotates ``def train(model, x)``; the class of ``model`` is what the
callers pass (``train(Policy(rngs), x)``). The first question about a module indexes,
once, every call in it whose callee is a plain name bound to a function defined there,
so the value model can learn a parameter's class from its call sites.

Calls through attributes (``obj.method(...)``), through other files, or with ``*args`` /
``**kwargs`` at the parameter's position are not followed: a parameter reached that way
stays unknown, and rules stay silent on unknowns.
"""
from __future__ import annotations

from astroid import nodes

from nnx_lint.file_memo import file_memo
from nnx_lint.flow import lookup

Function = nodes.FunctionDef


def calls_of(function: Function) -> list[nodes.Call]:
    """The calls in ``function``'s own module that call it by its name."""
    module = function.root()
    index = _INDEXES.get(module)
    if index is None:
        index = _INDEXES[module] = _index(module)
    return index.get(id(function), [])


#: One index per module, built on first use and dropped after the analysed file.
_INDEXES: dict = file_memo()


def _index(module: nodes.Module) -> dict[int, list[nodes.Call]]:
    defined = {function.name for function in module.nodes_of_class(nodes.FunctionDef)}
    found: dict[int, list[nodes.Call]] = {}
    for call in module.nodes_of_class(nodes.Call):
        if not isinstance(call.func, nodes.Name) or call.func.name not in defined:
            continue  # the cheap pre-filter: only names some def in this module binds
        _scope, assignments = lookup(call.func)
        targets = [a for a in assignments if isinstance(a, nodes.FunctionDef)]
        if len(targets) == 1 and len(assignments) == 1:
            found.setdefault(id(targets[0]), []).append(call)
    return found


def parameter_of(name: nodes.Name) -> tuple[Function, str] | None:
    """``(function, parameter)`` when ``name`` reads a parameter of a plain function.

    Methods are left out: their callers reach them through attributes.
    """
    _scope, assignments = lookup(name)
    if len(assignments) != 1:
        return None
    assignment = assignments[0]
    if not isinstance(assignment, nodes.AssignName) or not isinstance(assignment.parent, nodes.Arguments):
        return None
    function = assignment.parent.parent
    if not isinstance(function, nodes.FunctionDef) or isinstance(function.parent, nodes.ClassDef):
        return None
    return function, name.name


def argument_for(function: Function, call: nodes.Call, parameter: str) -> nodes.NodeNG | None:
    """The argument expression ``call`` passes for ``parameter``, or None when it can't be told."""
    arguments = function.args
    positional = [*(arguments.posonlyargs or []), *(arguments.args or [])]
    for index, candidate in enumerate(positional):
        if candidate.name != parameter:
            continue
        for argument in call.args[:index + 1]:
            if isinstance(argument, nodes.Starred):
                return None  # f(*xs): the position is not known
        if index < len(call.args):
            return call.args[index]
        break
    for keyword in call.keywords or []:
        if keyword.arg == parameter:
            return keyword.value
    return None
