"""Pin fixes: keep graph mode at a call, so the finding's code keeps today's meaning.

The call gets ``graph=True, graph_updates=True`` (a transform) or ``graph=True`` (a graph
API); a bare decorator ``@nnx.jit`` becomes ``@nnx.jit(graph=True, graph_updates=True)``.
flax 0.12.8 accepts these keywords on every transform and graph API except the ones in
:data:`nnx_lint.flax_table.nnx_api.NOT_PINNABLE`. Existing ``graph=`` / ``graph_updates=`` keywords
are kept: only missing flags are added, and a call that already gives a flag another value
(``graph=False``, ``graph=use_graph``) or passes ``**kwargs`` gets no pin, because a pin
spells out today's defaults and must never change the code's own choice.

A pinned call that no longer fits the project's line length (``SourceIndex.line_length``,
see :mod:`nnx_lint.fixes.line_length`) is wrapped as black wraps a call that does not fit:
one argument per line, indented one level (``SourceIndex.indent``: the project's
``indent-width``, else the file's own indentation) past the line the call starts on, with a
trailing comma and the closing parenthesis back at that line's indentation. Comments after
an argument's comma stay where they were.
"""
from __future__ import annotations

import libcst as cst

from nnx_lint.fixes.model import Edit, source_lines
from nnx_lint.fixes.source import SourceIndex
from nnx_lint.flax_table.nnx_api import pin_flags


class CannotPin(Exception):
    """No pin is possible at a site (the API rejects graph mode, the code chose its mode, ...)."""


def pin_edit(index: SourceIndex, site: dict, wrap: bool = True) -> Edit | None:
    """The edit that pins graph mode at one ``pin`` site; None if it is pinned already.
    With ``wrap``, a call that no longer fits the line length is wrapped.

    Raises :class:`CannotPin` when no pin can be made there.
    """
    # Asked again for the same text by each finding pinning this site and by the fix passes
    # (the ``[*]`` check fixes the text it has just computed the fixes of): kept on the index.
    key = ("pin", site.get("api", ""), site["line"], site["column"], site["end_line"], site["end_column"], wrap)
    found = index.memo.get(key)
    if found is None:
        try:
            found = index.memo[key] = (_pin_edit(index, site, wrap), None)
        except CannotPin as refused:
            found = index.memo[key] = (None, refused)
    if found[1] is not None:
        raise CannotPin(*found[1].args)
    return found[0]


def _pin_edit(index: SourceIndex, site: dict, wrap: bool) -> Edit | None:
    flags = pin_flags(site.get("api", ""))
    if flags is None:
        raise CannotPin(f"`nnx.{site.get('api')}` cannot keep graph mode with graph updates")
    node = index.node_at(site["line"], site["column"], site["end_line"], site["end_column"])
    if isinstance(node, cst.Call):
        pinned = _with_flags(node, flags)
        return _fitting(index, node, pinned, wrap) if pinned is not node else None
    if isinstance(node, (cst.Name, cst.Attribute)) and _is_decorator(index, node):
        call = cst.Call(func=node, args=[_flag(name) for name in flags])
        return _fitting(index, node, call, wrap)
    raise CannotPin("the call is not where the diagnostic says (the text changed?)")


def _fitting(index: SourceIndex, old: cst.CSTNode, call: cst.Call, wrap: bool) -> Edit | None:
    """The edit putting ``call`` in place of ``old``, wrapped (with ``wrap``) when a line it
    writes would exceed the project's line length."""
    edit = index.replacement(old, call)
    if edit is None or not wrap or fits(index, edit):
        return edit
    return index.replacement(old, wrapped(call, index.line_indent(old), index.indent)) or edit


def fits(index: SourceIndex, edit: Edit) -> bool:
    """Whether every line ``edit`` writes is within ``index.line_length`` characters."""
    first, last = index.lines[edit.line - 1], index.lines[edit.end_line - 1] if edit.end_line <= len(index.lines) else ""
    written = first[: edit.column - 1] + edit.content + last[edit.end_column - 1:]
    return all(len(line.rstrip("\r\n")) <= index.line_length for line in source_lines(written))


def wrapped(call: cst.Call, indent: str, level: str = "    ") -> cst.Call:
    """``call`` with one argument per line (black's style for a call that does not fit), each
    argument ``level`` deeper than ``indent``."""
    inner = indent + level
    args = []
    for position, arg in enumerate(call.args):
        comma = arg.comma if isinstance(arg.comma, cst.Comma) else None
        after = indent if position == len(call.args) - 1 else inner
        args.append(arg.with_changes(
            comma=cst.Comma(whitespace_before=cst.SimpleWhitespace(""),
                            whitespace_after=_new_line(after, comma.whitespace_after if comma else None)),
            whitespace_after_arg=cst.SimpleWhitespace("")))
    return call.with_changes(whitespace_before_args=_new_line(inner, call.whitespace_before_args), args=args)


def _new_line(indent: str, kept: cst.BaseParenthesizableWhitespace | None) -> cst.ParenthesizedWhitespace:
    """A line break followed by ``indent``, keeping the comment and blank lines ``kept`` had."""
    if isinstance(kept, cst.ParenthesizedWhitespace):
        return kept.with_changes(indent=False, last_line=cst.SimpleWhitespace(indent))
    return cst.ParenthesizedWhitespace(first_line=cst.TrailingWhitespace(), empty_lines=[], indent=False,
                                       last_line=cst.SimpleWhitespace(indent))


def _is_decorator(index: SourceIndex, node: cst.CSTNode) -> bool:
    parent = index.parent(node)
    return isinstance(parent, cst.Decorator) and parent.decorator is node


def _flag(name: str) -> cst.Arg:
    return cst.Arg(
        keyword=cst.Name(name),
        value=cst.Name("True"),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )


def _one_per_line(call: cst.Call) -> tuple[cst.ParenthesizedWhitespace, cst.ParenthesizedWhitespace] | None:
    """For a call written one argument per line with a trailing comma: the line break before an
    argument and the one before the closing parenthesis (both without comments); else None."""
    args = call.args
    if not args or not isinstance(args[-1].comma, cst.Comma):
        return None
    close = args[-1].comma.whitespace_after
    before = call.whitespace_before_args if len(args) == 1 else args[-2].comma.whitespace_after \
        if isinstance(args[-2].comma, cst.Comma) else None
    if not isinstance(close, cst.ParenthesizedWhitespace) or not isinstance(before, cst.ParenthesizedWhitespace):
        return None
    plain = {"first_line": cst.TrailingWhitespace(), "empty_lines": []}
    return before.with_changes(**plain), close.with_changes(**plain)


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
    exploded = _one_per_line(call)
    if exploded is not None:
        # Black's magic trailing comma: the call has one argument per line, so do the flags; the
        # last argument keeps its comma and the comment after it.
        arg_line, close = exploded
        new = [flag.with_changes(comma=cst.Comma(whitespace_after=arg_line)) for flag in new]
        new[-1] = new[-1].with_changes(comma=cst.Comma(whitespace_after=close))
        last_comma = args[-1].comma
        args[-1] = args[-1].with_changes(comma=last_comma.with_changes(
            whitespace_after=last_comma.whitespace_after.with_changes(last_line=arg_line.last_line,
                                                                      indent=arg_line.indent)))
    elif args and isinstance(args[-1].comma, cst.Comma):
        # Keep the call's own trailing comma (and the line break after it) at the end.
        new[-1] = new[-1].with_changes(comma=args[-1].comma)
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return call.with_changes(args=args + new)
