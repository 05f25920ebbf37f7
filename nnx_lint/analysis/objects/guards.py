"""Questions about one statement that the object-flow model answers from its call graph and its
constants: does any analysed call take the branch the statement sits in, and does an attribute
store change anything (graph-update rules ask both)."""
from __future__ import annotations

from astroid import nodes

from nnx_lint.analysis.objects import abstract as kinds
from nnx_lint.analysis.objects.abstract import is_falsy_constant


def branch_never_taken(model, node: nodes.NodeNG) -> bool:
    """Whether ``node`` sits in the body of ``if flag:`` (``flag`` a parameter of the enclosing
    function) and every analysed call of that function leaves ``flag`` falsy: its default is
    ``False`` / ``None`` and no caller passes a true value. False when no analysed call reaches
    the function (nothing is known about its callers)."""
    current = node
    while current.parent is not None and not isinstance(current, (nodes.FunctionDef, nodes.Lambda)):
        parent = current.parent
        if isinstance(parent, nodes.If) and current in parent.body and isinstance(parent.test, nodes.Name):
            function = parent.scope()
            if isinstance(function, nodes.FunctionDef) and parent.test.name in function.argnames():
                values = model.parameter_values(function, parent.test.name)
                if values and all(is_falsy_constant(v) for v in values):
                    return True
        current = parent
    return False


def restores_constant(model, owner: nodes.NodeNG, attribute: str, value: nodes.NodeNG | None,
                      store: nodes.NodeNG | None = None) -> bool:
    """Whether ``owner.attribute = value`` stores the literal the attribute always holds: every
    store of ``attribute`` on every instance of the owner's classes stores that same literal,
    so the write changes nothing (Tree Mode dropping it is invisible). ``store``: the write itself
    (its target), which does not count as the attribute's earlier value."""
    if not isinstance(value, nodes.Const):
        return False
    classes = {o.definition for o in model.objects(owner) if isinstance(o.definition, nodes.ClassDef)
               and o.kind != kinds.CLASS}
    if not classes:
        return False
    for classdef in classes:
        known, held = model.constant(classdef, attribute, besides=store)
        if not known or type(held) is not type(value.value) or held != value.value:
            return False
    return True
