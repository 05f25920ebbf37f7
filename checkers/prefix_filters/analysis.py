"""Analysis helpers shared by several prefix filters rules."""
from __future__ import annotations

from astroid import nodes

from nnx_lint.api import NNXCall


def call_form(call: NNXCall) -> str:
    """How a prefix-filter transform is applied: ``partial``, ``decorator`` or ``call``."""
    if call.via_partial:
        return "partial"
    if isinstance(call.node.parent, nodes.Decorators):
        return "decorator"
    return "call"
