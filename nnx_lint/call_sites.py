"""Where a function of the linted file is called, and which argument each parameter gets.

Real code rarely annotates ``def train(model, x)``; the class of ``model`` is what the
callers pass (``train(Policy(rngs), x)``). This per-file service indexes, once, every
call in the file whose callee is a plain name bound to a function defined in the file,
so the value model can learn a parameter's class from its call sites.

Calls through attributes (``obj.method(...)``), through other files, or with ``*args`` /
``**kwargs`` at the parameter's position are not followed: a parameter reached that way
stays unknown, and rules stay silent on unknowns.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.flow import lookup

if TYPE_CHECKING:
    from nnx_lint.engine import FileContext

Function = nodes.FunctionDef


class CallSites:
    """Calls of the file's own functions, by the function called (a per-file service)."""

    def __init__(self, context: FileContext) -> None:
        self._module = context.module
        self._calls: dict[int, list[nodes.Call]] | None = None

    def calls_of(self, function: Function) -> list[nodes.Call]:
        """The calls in this file that call ``function`` by its name."""
        if self._calls is None:
            self._calls = self._index()
        return self._calls.get(id(function), [])

    def _index(self) -> dict[int, list[nodes.Call]]:
        defined = {function.name for function in self._module.nodes_of_class(nodes.FunctionDef)}
        found: dict[int, list[nodes.Call]] = {}
        for call in self._module.nodes_of_class(nodes.Call):
            if not isinstance(call.func, nodes.Name) or call.func.name not in defined:
                continue  # the cheap pre-filter: only names some def in this file binds
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
