"""Small, local value flow: what a name was bound to, and where a binding is used.

Only plain assignments in the same file are followed (``axes = nnx.StateAxes(...)``
then ``in_axes=(axes, None)``); anything else is "unknown", and rules stay silent on
unknowns rather than guess.
"""
from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes


def bound_values(name: nodes.Name) -> list[nodes.NodeNG]:
    """The expressions ``name`` may be bound to by plain assignments (``x = expr``)."""
    try:
        _scope, assignments = name.lookup(name.name)
    except Exception:
        return []
    values = []
    for assignment in assignments:
        if not isinstance(assignment, nodes.AssignName):
            continue
        parent = assignment.parent
        if isinstance(parent, nodes.Assign) and assignment in parent.targets:
            values.append(parent.value)
        elif isinstance(parent, nodes.AnnAssign) and parent.value is not None:
            values.append(parent.value)
        elif isinstance(parent, nodes.Tuple) and isinstance(parent.parent, nodes.Assign):
            value = parent.parent.value
            if isinstance(value, nodes.Tuple) and len(value.elts) == len(parent.elts):
                values.append(value.elts[parent.elts.index(assignment)])
    return values


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


def position_in(container: nodes.NodeNG, reference: nodes.NodeNG) -> int | None:
    """Index of ``reference`` among the elements of a tuple/list ``container``, else None."""
    if isinstance(container, (nodes.Tuple, nodes.List)):
        for index, element in enumerate(container.elts):
            if element is reference:
                return index
    return None
