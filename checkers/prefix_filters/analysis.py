"""Analysis helpers shared by several prefix filters rules."""
from __future__ import annotations

from astroid import nodes

from nnx_lint.api import NNXCall


def is_dead_local(construction: nodes.Call) -> bool:
    """``axes = nnx.StateAxes(...)`` in a function, and ``axes`` never used: nothing can break.

    (Constructing a filter does not raise; only passing it to a transform does.)
    """
    assign = construction.parent
    if not (isinstance(assign, nodes.Assign) and len(assign.targets) == 1):
        return False
    target = assign.targets[0]
    scope = assign.scope()
    if not isinstance(target, nodes.AssignName) or isinstance(scope, nodes.Module):
        return False
    return not any(name.name == target.name for name in scope.nodes_of_class(nodes.Name))


def call_form(call: NNXCall) -> str:
    """How a prefix-filter transform is applied: ``partial``, ``decorator`` or ``call``."""
    if call.via_partial:
        return "partial"
    if isinstance(call.node.parent, nodes.Decorators):
        return "decorator"
    return "call"
