"""Where a parameter's class came from, as related locations: the calls that pass it.

``def twice(m): nnx.jit(f)(m, m)`` is only a finding because ``main.py`` calls
``twice(Model(...))``. A rule that reports on such a parameter names that call next to the
finding (``(call, "`Model` is passed here")``), in this file or another, so the reader sees
why nnx-lint believes ``m`` is a ``Model``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.analysis.values import value_model

if TYPE_CHECKING:
    from nnx_lint.analysis.context import FileContext


def passed_here(context: FileContext, *expressions: nodes.NodeNG) -> list[tuple[nodes.Call, str]]:
    """For each expression that is an unannotated parameter whose class its callers give,
    the first call passing each class (empty for anything else)."""
    found: list[tuple[nodes.Call, str]] = []
    for expression in expressions:
        if not isinstance(expression, nodes.Name):
            continue
        for candidate in value_model(context).candidates(expression):
            if candidate.evidence == "call site" and candidate.call is not None:
                found.append(passed_at(candidate.call, candidate.ref.short_name))
    return found


def passed_to(context: FileContext, function: nodes.FunctionDef, class_name: str) -> list[tuple[nodes.Call, str]]:
    """The calls of ``function`` (in this file or another) that pass an instance of the class
    named ``class_name`` to one of its parameters, first call per parameter."""
    return [passed_at(call, class_name)
            for argument in function.args.args or []
            for ref, call in context.classes.call_site_classes(function, argument.name)
            if ref.short_name == class_name]


def passed_at(call: nodes.Call, class_name: str) -> tuple[nodes.Call, str]:
    """The related location of one call that passes an instance of ``class_name``."""
    return call, f"`{class_name}` is passed here"
