"""What a fix worker's request carries about the project (its flax, line length and indent width),
read back from JSON: one reader for the CLI's fix requests (:mod:`nnx_lint.fixes.isolated`) and the
language server's code actions (:mod:`nnx_lint.fixes.editor`)."""
from __future__ import annotations

from typing import Any


def flax_of(request: dict[str, Any]):
    """The project's flax the request carries (:class:`~nnx_lint.fixes.flax_target.ProjectFlax`
    as a dict: it crosses the process boundary as JSON); unknown when it carries none."""
    from nnx_lint.fixes.flax_target import UNKNOWN, ProjectFlax

    carried = request.get("flax")
    if not isinstance(carried, dict):
        return UNKNOWN
    return ProjectFlax(carried.get("version"), carried.get("source", "unknown"))


def line_length_of(request: dict[str, Any]) -> int:
    """The project's line length the request carries (the default when it carries none)."""
    from nnx_lint.fixes.line_length import DEFAULT, valid

    return valid(request.get("line_length")) or DEFAULT


def indent_width_of(request: dict[str, Any]) -> int | None:
    """The project's indent width the request carries (None: each file's own indentation)."""
    from nnx_lint.fixes.line_length import valid_indent_width

    return valid_indent_width(request.get("indent_width"))
