"""Small, local value flow: what a name was bound to, and where a binding is used.

Only plain assignments in the same file are followed (``axes = nnx.StateAxes(...)``
then ``in_axes=(axes, None)``); anything else is "unknown", and rules stay silent on
unknowns rather than guess.
"""
from __future__ import annotations

import bisect
import builtins
from collections.abc import Iterator

from astroid import nodes

from nnx_lint.base.file_memo import file_memo

#: Above this many bindings of one name in one scope, :func:`lookup` takes its fast path.
MANY_BINDINGS = 100
#: Statements that bind unconditionally when they are directly in the scope's body.
_UNCONDITIONAL = (
    nodes.Assign, nodes.AnnAssign, nodes.AugAssign, nodes.ClassDef, nodes.FunctionDef,
    nodes.AsyncFunctionDef, nodes.Import, nodes.ImportFrom,
)
#: scope -> name -> (first line of each binding's statement, the bindings), sorted by line.
_INDEX: dict = file_memo()
#: (node, name) -> the answer of :func:`lookup` (rules ask about one name many times).
_LOOKUPS: dict = file_memo()


def lookup(node: nodes.NodeNG, name: str | None = None) -> tuple[nodes.NodeNG | None, list[nodes.NodeNG]]:
    """``node.lookup(name)`` (default: ``node.name``): the scope binding the name as seen
    from ``node``, and the bindings that may be in force there. Never raises.

    astroid filters every binding of the scope on every lookup, so a file rebinding one
    name n times (generated code, long notebooks, an attacker) costs O(n²). Up to
    :data:`MANY_BINDINGS` bindings this is astroid's answer. Above, the bindings are
    bisected by line: the last one before the use (before the end of the scope for a use
    in another frame) is the answer if it is an unconditional statement of the scope's
    body; otherwise the answer is "unknown" (no bindings), on which rules stay silent.
    """
    name = node.name if name is None else name  # type: ignore[attr-defined]
    key = (node, name)
    found = _LOOKUPS.get(key)
    if found is None:
        try:
            from nnx_lint.analysis.names import NameResolver

            scope = NameResolver.defining_scope(name, node)
            if scope is None or len(scope.locals.get(name, ())) <= MANY_BINDINGS:
                found = node.lookup(name)
            else:
                found = scope, _in_force(node, scope, name)
        except Exception:
            return None, []  # not memoised: a RecursionError depends on where it was asked
        found = _LOOKUPS[key] = (found[0], tuple(found[1]))
    return found[0], list(found[1])  # a fresh list: callers may change theirs


def class_definitions(name: nodes.Name) -> list[nodes.ClassDef]:
    """The class definitions among the bindings :func:`lookup` gives for ``name`` (``Model`` in
    ``Model.step``: the class itself, not an instance). Most names read are not classes: when no
    scope in reach binds the name to a class, and no builtin has it, the answer is [] without a
    lookup (astroid's lookup only ever answers with bindings from those scopes)."""
    if not _may_bind_a_class(name, name.name):
        return []
    return [binding for binding in lookup(name)[1] if isinstance(binding, nodes.ClassDef)]


def _may_bind_a_class(node: nodes.NodeNG, name: str) -> bool:
    # Every enclosing scope, class bodies included (a superset of the ones astroid searches).
    try:
        scope = node.scope()
        while scope is not None:
            if any(isinstance(binding, nodes.ClassDef) for binding in scope.locals.get(name, ())):
                return True
            scope = scope.parent.scope() if scope.parent is not None else None
    except Exception:
        return True  # the lookup decides
    return hasattr(builtins, name)  # `str.join`: astroid's builtins module has the real one's names


def _in_force(node: nodes.NodeNG, scope: nodes.NodeNG, name: str) -> list[nodes.NodeNG]:
    lines, bindings = _bindings_by_line(scope, name)
    statement = node.statement()
    frame = node.frame()
    if statement is frame and frame.parent is not None:
        frame = frame.parent.frame()  # a def's defaults and decorators run in the outer frame
    same_frame = frame is scope.frame() and statement.fromlineno is not None
    index = bisect.bisect_right(lines, statement.fromlineno) if same_frame else len(bindings)
    for binding in reversed(bindings[max(0, index - MANY_BINDINGS):index]):
        bound_by = binding.statement()
        if bound_by is statement:
            if isinstance(bound_by, (nodes.Assign, nodes.AnnAssign, nodes.AugAssign)):
                continue  # `x = f(x)`: the use reads the previous binding
            return []
        if bound_by.parent is scope and isinstance(bound_by, _UNCONDITIONAL):
            return [binding]
        return []
    return []


def _bindings_by_line(scope: nodes.NodeNG, name: str) -> tuple[list[int], list[nodes.NodeNG]]:
    per_name = _INDEX.setdefault(scope, {})
    if name not in per_name:
        ordered = sorted(scope.locals[name], key=lambda b: b.statement().fromlineno or 0)
        per_name[name] = ([b.statement().fromlineno or 0 for b in ordered], ordered)
    return per_name[name]


def bound_values(name: nodes.Name) -> list[nodes.NodeNG]:
    """The expressions ``name`` may be bound to by plain assignments (``x = expr``, ``x: T = expr``,
    ``(x := expr)``, ``x, y = a, b``): :func:`bound_values_of` of each binding :func:`lookup` gives."""
    _scope, assignments = lookup(name)
    # astroid's lookup lists a walrus target twice (its statement's scope and the frame's)
    unique = {id(assignment): assignment for assignment in assignments if isinstance(assignment, nodes.AssignName)}
    return [value for assignment in unique.values() for value in bound_values_of(assignment)]


def bound_values_of(assignment: nodes.AssignName) -> list[nodes.NodeNG]:
    """The values one ``AssignName`` binds by plain assignment: the one place that reads an
    assignment's value (:func:`bound_values` asks it for each binding of a name)."""
    parent = assignment.parent
    if isinstance(parent, nodes.Assign) and assignment in parent.targets:
        return [parent.value]
    if isinstance(parent, nodes.AnnAssign) and parent.value is not None:
        return [parent.value]
    if isinstance(parent, nodes.NamedExpr):
        return [parent.value]
    if isinstance(parent, nodes.Tuple) and isinstance(parent.parent, nodes.Assign):
        value = parent.parent.value
        if isinstance(value, nodes.Tuple) and len(value.elts) == len(parent.elts):
            return [value.elts[parent.elts.index(assignment)]]
    return []


def assigned_or_unpacked(name: nodes.Name) -> list[tuple[nodes.NodeNG, str]]:
    """What ``name``'s assignments bind it to, unpacked or not: ``(value, "value")`` for
    ``name = value``, ``(call, "split")`` for ``_, name, ... = call`` (a later target of an
    unpacking, as in ``graphdef, state = nnx.split(m)``)."""
    _scope, assignments = lookup(name)
    found = []
    for assignment in assignments:
        if not isinstance(assignment, nodes.AssignName):
            continue
        parent = assignment.parent
        if isinstance(parent, nodes.Assign) and assignment in parent.targets:
            found.append((parent.value, "value"))
        elif isinstance(parent, nodes.Tuple) and isinstance(parent.parent, nodes.Assign):
            if parent.elts.index(assignment) >= 1:
                found.append((parent.parent.value, "split"))
    return found


def unpacked_binding(name: nodes.Name) -> tuple[nodes.NodeNG, int] | None:
    """``(value, position)`` when ``name`` is bound only once, by unpacking: ``a, b = value``
    binds ``b`` at position 1."""
    _scope, assignments = lookup(name)
    if len(assignments) != 1 or not isinstance(assignments[0], nodes.AssignName):
        return None
    target = assignments[0]
    unpacked = target.parent
    if not isinstance(unpacked, (nodes.Tuple, nodes.List)) or not isinstance(unpacked.parent, nodes.Assign):
        return None
    return unpacked.parent.value, unpacked.elts.index(target)


def expressions_within(value: nodes.NodeNG, depth: int = 3) -> Iterator[tuple[nodes.NodeNG, nodes.NodeNG]]:
    """Yield ``(expression, reference)`` pairs for what ``value`` is built from.

    ``reference`` is the node in ``value`` that stands for ``expression``: the same node
    for expressions written inline, the ``Name`` for values reached through a variable.
    Tuples, lists, dict values, starred elements, both branches of ``a if c else b``
    and the operands of ``and``/``or`` are entered; names are followed
    ``depth`` assignments deep.
    """
    stack: list[tuple[nodes.NodeNG, nodes.NodeNG, int]] = [(value, value, depth)]
    seen: set[int] = set()
    while stack:
        node, reference, remaining = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node, reference
        if isinstance(node, (nodes.Tuple, nodes.List, nodes.Set)):
            stack.extend((e, e if reference is node else reference, remaining) for e in node.elts)
        elif isinstance(node, nodes.Dict):
            stack.extend((v, v if reference is node else reference, remaining) for _, v in node.items)
        elif isinstance(node, nodes.Starred):
            stack.append((node.value, reference, remaining))
        elif isinstance(node, nodes.IfExp):  # `DiffState(...) if lora else 0`
            stack.extend((branch, branch if reference is node else reference, remaining)
                         for branch in (node.body, node.orelse))
        elif isinstance(node, nodes.BoolOp):
            stack.extend((v, v if reference is node else reference, remaining) for v in node.values)
        elif isinstance(node, nodes.Name) and remaining > 0:
            stack.extend((v, reference, remaining - 1) for v in bound_values(node))


def inside(node: nodes.NodeNG | None, ancestor: nodes.NodeNG) -> bool:
    """Whether ``node`` is ``ancestor`` or below it."""
    while node is not None:
        if node is ancestor:
            return True
        node = node.parent
    return False


def position_in(container: nodes.NodeNG, reference: nodes.NodeNG) -> int | None:
    """Index of ``reference`` among the elements of a tuple/list ``container``, else None."""
    if isinstance(container, (nodes.Tuple, nodes.List)):
        for index, element in enumerate(container.elts):
            if element is reference:
                return index
    return None


def default_fallback(expression: nodes.NodeNG) -> nodes.NodeNG | None:
    """What a parameter's default resolves to on the default path, or None.

    ``a if a is not None else b``, ``b if a is None else a`` and ``a or b``, with ``a`` a
    parameter whose default is ``None``: when the caller leaves ``a`` out (the path the
    default exists for), the value is ``b`` (``rngs = rngs if rngs is not None else
    self.rngs``). Any other conditional is not a fallback and stays unknown.
    """
    if isinstance(expression, nodes.IfExp):
        tested = _none_test(expression.test)
        if tested is None:
            return None
        name, is_none = tested
        kept, fallback = (expression.orelse, expression.body) if is_none else (expression.body, expression.orelse)
        if isinstance(kept, nodes.Name) and kept.name == name.name and defaults_to_none(name):
            return fallback
        return None
    if isinstance(expression, nodes.BoolOp) and expression.op == "or" and len(expression.values) == 2:
        first, fallback = expression.values
        if isinstance(first, nodes.Name) and defaults_to_none(first):
            return fallback
    return None


def resolved_default(bindings: list[nodes.NodeNG]) -> nodes.NodeNG | None:
    """The one binding that replaces a ``None`` default in the body, when ``bindings`` (what
    :func:`lookup` finds in force) are the parameter and assignments under ``if a is None:``
    (``if rngs is None: rngs = self.rngs``): on the default path the name holds that value."""
    parameters = [b for b in bindings if isinstance(b, nodes.AssignName) and isinstance(b.parent, nodes.Arguments)]
    others = [b for b in bindings if b not in parameters]
    if len(parameters) != 1 or len(others) != 1 or not _has_none_default(parameters[0]):
        return None
    other = others[0]
    statement = other.statement()
    branch = statement.parent
    if not isinstance(other, nodes.AssignName) or not isinstance(statement, nodes.Assign) \
            or not isinstance(branch, nodes.If) or statement not in branch.body:
        return None
    tested = _none_test(branch.test)
    if tested is None or not tested[1] or tested[0].name != parameters[0].name:
        return None
    return other


def defaults_to_none(name: nodes.Name) -> bool:
    """Whether ``name`` reads (only) a parameter whose default is ``None``."""
    _scope, bindings = lookup(name)
    return len(bindings) == 1 and _has_none_default(bindings[0])


def _has_none_default(binding: nodes.NodeNG) -> bool:
    if not isinstance(binding, nodes.AssignName) or not isinstance(binding.parent, nodes.Arguments):
        return False
    try:
        default = binding.parent.default_value(binding.name)
    except Exception:  # astroid's NoDefault: a parameter without a default
        return False
    return isinstance(default, nodes.Const) and default.value is None


def _none_test(test: nodes.NodeNG) -> tuple[nodes.Name, bool] | None:
    """``a is None`` -> (a, True), ``a is not None`` -> (a, False), else None."""
    if not isinstance(test, nodes.Compare) or len(test.ops) != 1 or not isinstance(test.left, nodes.Name):
        return None
    operator, right = test.ops[0]
    if not (isinstance(right, nodes.Const) and right.value is None) or operator not in ("is", "is not"):
        return None
    return test.left, operator == "is"
