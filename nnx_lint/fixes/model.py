"""The fix record: Ruff's model (applicability, message, text edits), no libcst needed.

An :class:`Edit` replaces the text between two positions (1-based rows and columns, as
the diagnostics use) with ``content``: an insertion when both positions are equal. A
:class:`Fix` is applied as a whole (all its edits or none).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# The applicability levels and the pin kind are what a rule declares (nnx_lint.base.applicability):
# defined there, below the rules' surface, and re-exported for the fixes machinery.
from nnx_lint.base.applicability import APPLICABILITIES, DISPLAY_ONLY, PIN, SAFE, UNSAFE

# Type checkers take TYPE_CHECKING as true; a run never imports typing for annotations (start-up).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["APPLICABILITIES", "DISPLAY_ONLY", "PIN", "SAFE", "UNSAFE", "Edit", "Fix", "apply_edits", "line_offsets",
           "overlaps", "source_lines"]


@dataclass(frozen=True, order=True)
class Edit:
    """Replace ``[line:column, end_line:end_column)`` with ``content``."""

    line: int
    column: int
    end_line: int
    end_column: int
    content: str

    @property
    def start(self) -> tuple[int, int]:
        return (self.line, self.column)

    @property
    def end(self) -> tuple[int, int]:
        return (self.end_line, self.end_column)

    def to_json(self) -> dict[str, Any]:
        """Ruff's JSON edit: ``content``, ``location`` and ``end_location`` (row, column)."""
        return {
            "content": self.content,
            "location": {"row": self.line, "column": self.column},
            "end_location": {"row": self.end_line, "column": self.end_column},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Edit:
        """The edit :meth:`to_json` describes (from the fix worker)."""
        return cls(data["location"]["row"], data["location"]["column"], data["end_location"]["row"],
                   data["end_location"]["column"], data["content"])


@dataclass(frozen=True)
class Fix:
    """One diagnostic's fix: how safe it is, what it does, and its edits."""

    applicability: str
    message: str
    edits: tuple[Edit, ...] = ()
    #: Whether the finding is gone once ``--fix`` has run (:mod:`nnx_lint.fixes.tracking`): a
    #: class-level pin, say, may apply and leave the finding, which then gets no ``[*]``.
    resolves: bool = True

    def applies(self, unsafe: bool) -> bool:
        """Whether ``--fix`` (and ``--unsafe-fixes`` when ``unsafe``) applies this fix."""
        if not self.edits:
            return False
        return self.applicability == SAFE or (unsafe and self.applicability == UNSAFE)

    def fixes_finding(self, unsafe: bool) -> bool:
        """Whether ``--fix`` (with ``--unsafe-fixes`` when ``unsafe``) makes the finding go:
        what the ``[*]`` marker and the fixable hint count, as ``Fixed N`` does."""
        return self.resolves and self.applies(unsafe)

    def to_json(self) -> dict[str, Any]:
        """Ruff's JSON ``fix`` object."""
        return {
            "applicability": self.applicability,
            "message": self.message,
            "edits": [edit.to_json() for edit in sorted(self.edits)],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fix:
        """The fix :meth:`to_json` describes (from the fix worker; the edits come sorted, and
        the worker adds ``resolves``, which Ruff's object does not have)."""
        return cls(data["applicability"], data["message"], tuple(Edit.from_json(edit) for edit in data["edits"]),
                   bool(data.get("resolves", True)))


def apply_edits(text: str, edits: list[Edit]) -> str:
    """``text`` with non-overlapping ``edits`` applied (positions refer to ``text``).

    >>> apply_edits("f(x)\\n", [Edit(1, 4, 1, 4, ", graph=True")])
    'f(x, graph=True)\\n'
    """
    offsets = line_offsets(text)
    spans = sorted((offsets[edit.line - 1] + edit.column - 1, offsets[edit.end_line - 1] + edit.end_column - 1,
                    edit) for edit in edits)
    if all(end <= following for (_start, end, _edit), (following, _end, _next) in zip(spans, spans[1:])):
        # Apart (the usual case): the text is assembled once, not copied whole for every edit.
        pieces, done = [], 0
        for start, end, edit in spans:
            pieces += [text[done:start], edit.content]
            done = end
        return "".join(pieces) + text[done:]
    result = text
    for edit in sorted(edits, reverse=True):
        start = offsets[edit.line - 1] + edit.column - 1
        end = offsets[edit.end_line - 1] + edit.end_column - 1
        result = result[:start] + edit.content + result[end:]
    return result


def source_lines(text: str) -> list[str]:
    """``text``'s lines as Python counts them (ends kept): only ``\n``, ``\r\n`` and ``\r``
    end a line. ``str.splitlines`` also splits at a form feed or ``\u2028``, which would put
    every later line out of step with the diagnostics' (astroid's and libcst's) line numbers."""
    return re.findall(_LINE, text)


_LINE = r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$"


def line_offsets(text: str) -> list[int]:
    """The character offset at which each line of ``text`` starts (one extra for the end)."""
    offsets = [0]
    for line in source_lines(text):
        offsets.append(offsets[-1] + len(line))
    return offsets


def overlaps(a: Fix, b: Fix) -> bool:
    """Whether two fixes edit overlapping (or touching) ranges: they then go in separate passes."""
    return any(x.start <= y.end and y.start <= x.end for x in a.edits for y in b.edits)
