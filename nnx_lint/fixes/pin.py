"""Pin fixes: keep graph mode at a call, so the finding's code keeps today's meaning.

The call gets ``graph=True, graph_updates=True`` (a transform) or ``graph=True`` (a graph
API); a bare decorator ``@nnx.jit`` becomes ``@nnx.jit(graph=True, graph_updates=True)``.
flax 0.12.8 accepts these keywords on every transform and graph API except the ones in
:data:`nnx_lint.nnx_api.NOT_PINNABLE`. Existing ``graph=`` / ``graph_updates=`` keywords
are set to ``True`` rather than repeated.
"""
from __future__ import annotations

import libcst as cst

from nnx_lint.fixes.model import Edit
from nnx_lint.fixes.source import SourceIndex
from nnx_lint.nnx_api import pin_flags


def pin_edit(index: SourceIndex, site: dict) -> Edit | None:
    """The edit that pins graph mode at one ``pin`` site, or None if it cannot be made there."""
    flags = pin_flags(site.get("api", ""))
    if flags is None:
        return None
    node = index.node_at(site["line"], site["column"], site["end_line"], site["end_column"])
    if isinstance(node, cst.Call):
        return index.replacement(node, _with_flags(node, flags))
    if isinstance(node, (cst.Name, cst.Attribute)) and _is_decorator(index, node):
        call = cst.Call(func=node, args=[_flag(name) for name in flags])
        return index.replacement(node, call)
    return None


def _is_decorator(index: SourceIndex, node: cst.CSTNode) -> bool:
    parent = index.parent(node)
    return isinstance(parent, cst.Decorator) and parent.decorator is node


def _flag(name: str) -> cst.Arg:
    return cst.Arg(
        keyword=cst.Name(name),
        value=cst.Name("True"),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )


def _with_flags(call: cst.Call, flags: tuple[str, ...]) -> cst.Call:
    args = list(call.args)
    missing = list(flags)
    for position, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value in missing:
            missing.remove(arg.keyword.value)
            if not (isinstance(arg.value, cst.Name) and arg.value.value == "True"):
                args[position] = arg.with_changes(value=cst.Name("True"))
    if not missing:
        return call.with_changes(args=args)
    new = [_flag(name) for name in missing]
    if args and isinstance(args[-1].comma, cst.Comma):
        # Keep the call's own trailing comma (and the line break after it) at the end.
        new[-1] = new[-1].with_changes(comma=args[-1].comma)
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return call.with_changes(args=args + new)
