"""Where a parameter's class came from, as related locations: the calls that pass it.

``def twice(m): nnx.jit(f)(m, m)`` is only a finding because ``main.py`` calls
``twice(Model(...))``. A rule that reports on such a parameter names that call next to the
finding (``(call, "`Model` is passed here")``), in this file or another, so the reader sees
why nnx-lint believes ``m`` is a ``Model``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.values import value_model

if TYPE_CHECKING:
    from nnx_lint.engine import FileContext


def passed_here(context: FileContext, *expressions: nodes.NodeNG) -> list[tuple[nodes.Call, str]]:
    """For each expression that is an unannotated parameter whose class its callers give,
    the first call passing each class (empty for anything else)."""
    found: list[tuple[nodes.Call, str]] = []
    for expression in expressions:
        if not isinstance(expression, nodes.Name):
            continue
        for candidate in value_model(context).candidates(expression):
            if candidate.evidence == "call site" and candidate.call is not None:
                found.append((candidate.call, f"`{candidate.ref.short_name}` is passed here"))
    return found
