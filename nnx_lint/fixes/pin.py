"""Pin fixes: keep graph mode at a call, so the finding's code keeps today's meaning.

The call gets ``graph=True, graph_updates=True`` (a transform) or ``graph=True`` (a graph
API); a bare decorator ``@nnx.jit`` becomes ``@nnx.jit(graph=True, graph_updates=True)``.
flax 0.12.8 accepts these keywords on every transform and graph API except the ones in
:data:`nnx_lint.nnx_api.NOT_PINNABLE`. Existing ``graph=`` / ``graph_updates=`` keywords
are kept: only missing flags are added, and a call that already gives a flag another value
(``graph=False``, ``graph=use_graph``) or passes ``**kwargs`` gets no pin, because a pin
spells out today's defaults and must never change the code's own choice.
"""
from __future__ import annotations

import libcst as cst

from nnx_lint.fixes.model import Edit
from nnx_lint.fixes.source import SourceIndex
from nnx_lint.nnx_api import pin_flags


class CannotPin(Exception):
    """No pin is possible at a site (the API rejects graph mode, the code chose its mode, ...)."""


def pin_edit(index: SourceIndex, site: dict) -> Edit | None:
    """The edit that pins graph mode at one ``pin`` site; None if it is pinned already.

    Raises :class:`CannotPin` when no pin can be made there.
    """
    flags = pin_flags(site.get("api", ""))
    if flags is None:
        raise CannotPin(f"`nnx.{site.get('api')}` cannot keep graph mode with graph updates")
    node = index.node_at(site["line"], site["column"], site["end_line"], site["end_column"])
    if isinstance(node, cst.Call):
        pinned = _with_flags(node, flags)
        return index.replacement(node, pinned) if pinned is not node else None
    if isinstance(node, (cst.Name, cst.Attribute)) and _is_decorator(index, node):
        call = cst.Call(func=node, args=[_flag(name) for name in flags])
        return index.replacement(node, call)
    raise CannotPin("the call is not where the diagnostic says (the text changed?)")


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
    """``call`` with the missing flags added as ``True`` (``call`` itself if none is missing).

    Raises :class:`CannotPin` if a flag is already given another value (``graph=False``,
    ``graph=use_graph``): the code chose its mode, and a pin may only spell out today's
    defaults, never change a choice."""
    args = list(call.args)
    given = {arg.keyword.value: arg.value for arg in args if arg.keyword is not None}
    for name in flags:
        value = given.get(name)
        if value is not None and not (isinstance(value, cst.Name) and value.value == "True"):
            raise CannotPin(f"the call chooses `{name}=` itself")
    missing = [name for name in flags if name not in given]
    if not missing:
        return call
    if any(arg.star == "**" for arg in args):
        raise CannotPin("the flags may come in through **kwargs: adding them could repeat a keyword")
    new = [_flag(name) for name in missing]
    if args and isinstance(args[-1].comma, cst.Comma):
        # Keep the call's own trailing comma (and the line break after it) at the end.
        new[-1] = new[-1].with_changes(comma=args[-1].comma)
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return call.with_changes(args=args + new)
