"""Where a function is called in its own module, and which argument each parameter gets.

Real code rarely annotates ``def train(model, x)``; the class of ``model`` is what the
callers pass (``train(Policy(rngs), x)``). The first question about a module indexes,
once, every call in it whose callee is a plain name bound to a function defined there,
so the value model can learn a parameter's class from its call sites.

Calls in other project files are found through the project's reverse index
(:func:`calls_in_other_files`, :mod:`nnx_lint.analysis.callers`); the candidate calls of a
method there by :func:`method_calls_in_other_files` (the class model keeps those on its class,
:mod:`nnx_lint.analysis.factories`). Calls with ``*args`` / ``**kwargs`` at the parameter's
position are not followed: a parameter reached that way stays unknown, and rules stay silent
on unknowns.
"""
from __future__ import annotations

from collections.abc import Iterable

import os
from pathlib import Path
from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.base.file_memo import file_memo
from nnx_lint.analysis.flow import lookup
from nnx_lint.analysis.calls import PARTIALS
from nnx_lint.flax_table.nnx_api import BINDING_APIS, short_name
from nnx_lint.base.node_index import nodes_of_class

if TYPE_CHECKING:
    from nnx_lint.analysis.project import Project

Function = nodes.FunctionDef


def calls_of(function: Function, project: Project | None = None) -> list[nodes.Call]:
    """The calls in ``function``'s own module that call it by its name; with ``project``,
    also the calls in other project files of a module-level function of the linted file
    (:func:`calls_in_other_files`)."""
    module = function.root()
    index = _INDEXES.get(module)
    if index is None:
        index = _INDEXES[module] = _index(module)
    own = index.get(id(function), [])
    return own + calls_in_other_files(function, project) if project is not None else own


#: One index per module, built on first use and dropped after the analysed file (a weak
#: key would never go: the index points back into the module's tree).
_INDEXES: dict = file_memo()
#: Per function node: the other files' calls by its name (each query is asked once per analysis).
_OTHER_FILES: dict = file_memo()


def calls_in_other_files(function: Function, project: Project) -> list[nodes.Call]:
    """The calls of the linted file's module-level ``function`` in other project files.

    Candidate files come from the project's reverse index (:mod:`nnx_lint.analysis.callers`); a
    call counts when its callee resolves to ``<this module>.<function>`` in the caller's
    module and the caller's import of this module finds this very file (two example
    folders that both have a ``train.py`` never mix). The question is recorded as a
    dependency of the analysis, so that the result cache notices new and changed callers.
    """
    from nnx_lint.analysis.names import NameResolver

    module = function.root()
    if function.parent is not module:
        return []
    target = f"{module.name}.{function.name}"
    found = []
    for caller, calls in _named_calls_in_other_files(function, project):
        resolver = NameResolver(caller, project)
        found.extend(call for call in calls if resolver.qualified_name(call.func) == target)
    return found


def method_calls_in_other_files(method: Function, project: Project) -> list[nodes.Call]:
    """The calls ``x.<method name>(...)`` in the other project files that import the linted
    file's module (``trainer._train_step(...)`` in a test): candidates only, by name; the
    class model keeps those whose receiver is of the method's class
    (:meth:`nnx_lint.analysis.factories.FactoryReturns.method_arguments`). Same reverse index,
    limits and cache dependency as :func:`calls_in_other_files`."""
    if not isinstance(method.parent, nodes.ClassDef) or method.parent.parent is not method.root():
        return []
    return [call for _caller, calls in _named_calls_in_other_files(method, project) for call in calls
            if isinstance(call.func, nodes.Attribute)]


def _named_calls_in_other_files(function: Function, project: Project) -> list[tuple[nodes.Module, list[nodes.Call]]]:
    """Per other project file that may call ``function`` (a def of the linted file): its calls
    whose callee's last name is the function's (or an alias an import gives it)."""
    module = function.root()
    current = project.current_file
    if current is None or not module.file:
        return []
    found = _OTHER_FILES.get(function)
    if found is not None:
        return found
    found = _OTHER_FILES[function] = []
    if str(Path(module.file).resolve()) != current:
        return found  # a function of another module: its callers are that module's question
    from nnx_lint.analysis.callers import MAX_CALLER_FILES, dependency_key, digest
    from nnx_lint.analysis.project import module_name_for

    index = project.caller_index()
    candidates = index.candidates(module.name, function.name)
    project.dependencies[dependency_key(index.directories, module.name, function.name)] = digest(candidates)
    if len(candidates) > MAX_CALLER_FILES:
        return found  # a library helper: see nnx_lint.analysis.callers.MAX_CALLER_FILES
    for path_text, _content in candidates:
        path = Path(path_text).resolve()
        if str(path) == current:
            continue
        caller_name, caller_root = module_name_for(path)
        if project.find_file_from(module.name, caller_root) != Path(current):
            continue  # its import of this module's name finds another file
        caller = project.load_file(path, caller_name)
        if caller is None:
            continue
        calls_by_name, aliases = _calls_by_name(caller)
        calls = [call for name in {function.name, *aliases.get(function.name, ())}
                 for call in calls_by_name.get(name, [])]
        if calls:
            found.append((caller, calls))
    return found


#: Per caller module: its calls by the callee's last name, and the aliases of imported names
#: (dropped after the analysed file, like the other indexes that point into trees).
_CALLS_BY_NAME: dict = file_memo()


def _calls_by_name(module: nodes.Module) -> tuple[dict[str, list[nodes.Call]], dict[str, set[str]]]:
    """Built once per module: a caller file is asked about each function of the files it imports."""
    found = _CALLS_BY_NAME.get(module)
    if found is None:
        calls: dict[str, list[nodes.Call]] = {}
        for call in nodes_of_class(module, nodes.Call):
            terminal = _terminal(call.func)
            if terminal:
                calls.setdefault(terminal, []).append(call)
        aliases: dict[str, set[str]] = {}
        for imported in nodes_of_class(module, nodes.ImportFrom):
            for name, alias in imported.names:
                if alias:
                    aliases.setdefault(name, set()).add(alias)
        found = _CALLS_BY_NAME[module] = (calls, aliases)
    return found


def where(call: nodes.Call, module: nodes.Module, path: str = "", roots: Iterable[Path] = ()) -> str:
    """Where a call site is, for a message: ``line 40`` in ``module``, else ``tests/main.py:40``:
    the caller's path relative to the project, the outermost of ``roots`` (the project's roots)
    that holds it, so a reader finds it from the top of the project whichever file is flagged; with
    no such root, relative to the directory of ``module``'s file. In a notebook (``path`` ends in
    ``.ipynb``) a line of the joined cells means nothing to the reader: ``in this notebook`` (the
    related location names the cell)."""
    root = call.root()
    if root is module or not getattr(root, "file", None):
        return "in this notebook" if path.endswith(".ipynb") else f"line {call.lineno}"
    caller = Path(root.file).resolve()
    holding = sorted((r for r in roots if caller.is_relative_to(r)), key=lambda r: len(r.parts))
    try:
        if holding:
            shown = os.path.relpath(caller, holding[0])
        else:
            shown = os.path.relpath(caller, Path(module.file).resolve().parent) if module.file else caller.name
    except ValueError:
        shown = str(caller)
    return f"{Path(shown).as_posix()}:{call.lineno}"


def _index(module: nodes.Module) -> dict[int, list[nodes.Call]]:
    defined = {function.name for function in nodes_of_class(module, nodes.FunctionDef)}
    found: dict[int, list[nodes.Call]] = {}
    resolver = None
    for call in nodes_of_class(module, nodes.Call):
        callee = call.func
        if not (isinstance(callee, nodes.Name) and callee.name in defined):
            # `partial(train_step, model)`, `nnx.jit_partial(train_step, model)`: a call of it too.
            bound = call.args[0] if call.args else None
            if not (isinstance(bound, nodes.Name) and bound.name in defined and _terminal(callee) in _BINDING_NAMES):
                continue  # the cheap pre-filter: only names some def in this module binds
            if resolver is None:
                from nnx_lint.analysis.names import NameResolver

                resolver = NameResolver(module)
            if not _binds(resolver.qualified_name(callee)):
                continue
            callee = bound
        _scope, assignments = lookup(callee)
        targets = [a for a in assignments if isinstance(a, nodes.FunctionDef)]
        if len(targets) == 1 and len(assignments) == 1:
            found.setdefault(id(targets[0]), []).append(call)
    return found


#: The last name of the functions that bind a function's first arguments (a cheap pre-filter;
#: :func:`_binds` decides on the qualified name).
_BINDING_NAMES = frozenset({"partial", *BINDING_APIS})


def _terminal(callee: nodes.NodeNG) -> str | None:
    """The last name of a callee: ``update`` for ``update`` and for ``train.update``."""
    return callee.name if isinstance(callee, nodes.Name) else getattr(callee, "attrname", None)


def _binds(qualified_name: str | None) -> bool:
    """Whether the callee is ``functools.partial`` or an NNX function that binds as it does."""
    return qualified_name in PARTIALS or short_name(qualified_name) in BINDING_APIS


def is_binding_call(function: Function, call: nodes.Call) -> bool:
    """Whether ``call`` binds ``function``'s first arguments (``partial(function, a)``) rather than
    calling it: its arguments after the first are the ones ``function`` gets."""
    callee, first = call.func, call.args[0] if call.args else None
    return not (isinstance(callee, nodes.Name) and callee.name == function.name) \
        and isinstance(first, nodes.Name) and first.name == function.name


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


def is_parameter(expression: nodes.NodeNG) -> bool:
    """Whether ``expression`` is a bare name bound as a parameter of the function it is in, methods
    included (a transform passed in, a test's ``jit_fn``: a pin at its call would hold for one
    caller's or one case's value only)."""
    if not isinstance(expression, nodes.Name):
        return False
    _scope, assignments = lookup(expression)
    return any(isinstance(a, nodes.AssignName) and isinstance(a.parent, nodes.Arguments) for a in assignments)


def argument_for(function: Function, call: nodes.Call, parameter: str) -> nodes.NodeNG | None:
    """The argument expression ``call`` passes for ``parameter``, or None when it can't be told."""
    arguments = function.args
    positional = [*(arguments.posonlyargs or []), *(arguments.args or [])]
    # `partial(function, a, b)` passes `a` and `b` as the first arguments; the rest come later, unknown.
    given = call.args[1:] if is_binding_call(function, call) else call.args
    for index, candidate in enumerate(positional):
        if candidate.name != parameter:
            continue
        for argument in given[:index + 1]:
            if isinstance(argument, nodes.Starred):
                return None  # f(*xs): the position is not known
        if index < len(given):
            return given[index]
        break
    for keyword in call.keywords or []:
        if keyword.arg == parameter:
            return keyword.value
    return None
