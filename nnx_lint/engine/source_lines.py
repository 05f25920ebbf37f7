"""The source line a diagnostic points at, read the way the engine read the file.

The baseline fingerprints a finding by its line's code without comments: it needs the
text behind ``(path, line)`` — for a notebook, the line of the cell (:attr:`~nnx_lint.base.diagnostic.Diagnostic.cell`) —
and where that line's comment starts.
"""
from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable

from nnx_lint.base.diagnostic import Diagnostic

#: Reads a file's bytes by its reported path; None when it cannot be read.
Reader = Callable[[str], "bytes | None"]


def read_from_disk(path: str) -> bytes | None:
    """The default :data:`Reader`: bounded like every read of an analysed file."""
    from nnx_lint.base import bounds

    try:
        return bounds.read_bounded(path)
    except bounds.ParseFailure:
        return None


class SourceLines:
    """The lines of one file (a notebook's code cells joined, as the engine lints them)."""

    def __init__(self, path: str, data: bytes | None) -> None:
        self.lines: list[str] = []
        self._cell_lines: dict[tuple[int, int], int] = {}
        if data is None:
            return
        from nnx_lint.analysis import parsing

        try:
            if path.endswith(".ipynb"):
                from nnx_lint.base.notebooks import notebook_source

                text, origin = notebook_source(data)
                self._cell_lines = {(o.cell, o.line): index for index, o in enumerate(origin, start=1)}
            else:
                text = parsing.decode(data)
        except (ValueError, parsing.ParseFailure):
            return
        self.lines = text.splitlines()

    def number_of(self, diagnostic: Diagnostic) -> int:
        """The 1-based line in :attr:`lines` the diagnostic starts on (0 if unknown)."""
        if diagnostic.cell is not None and self._cell_lines:
            return self._cell_lines.get((diagnostic.cell, diagnostic.line), 0)
        return diagnostic.line if 0 < diagnostic.line <= len(self.lines) else 0

    def span_of(self, diagnostic: Diagnostic) -> tuple[int, int]:
        """The 1-based first and last line in :attr:`lines` of the flagged code ((0, 0) if unknown)."""
        first = self.number_of(diagnostic)
        if not first:
            return 0, 0
        return first, max(first, min(first + diagnostic.end_line - diagnostic.line, len(self.lines)))

    def flagged_code(self, diagnostic: Diagnostic) -> str:
        """The lines of the flagged code without comments, whitespace collapsed (``""`` if
        unknown): what a baseline fingerprint names. Comments are cut by
        :func:`cut_comment`, which reads the text alone, so the answer is the same on every
        Python version."""
        first, last = self.span_of(diagnostic)
        if not first:
            return ""
        return " ".join(" ".join(cut_comment(line).split()) for line in self.lines[first - 1:last]).strip()

    def code_of(self, number: int) -> str:
        """Line ``number`` without its comment, whitespace collapsed (``""`` if unknown)."""
        if not 0 < number <= len(self.lines):
            return ""
        return " ".join(without_comment(self.lines[number - 1]).split())


def without_comment(line: str) -> str:
    """``line`` without its trailing comment.

    The line is tokenized on its own, so the answer depends on its text only (a
    fingerprint must not change because of the lines around it), and a ``#`` inside a
    string on the line is not a comment. A line that does not tokenize alone (it ends
    inside a string) loses an obvious ``# noqa ...`` at least.
    """
    if "#" not in line:
        return line
    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            if token.type == tokenize.COMMENT:
                return line[: token.start[1]]
    except (tokenize.TokenError, SyntaxError):
        pass
    return re.sub(r"#\s*noqa\b.*$", "", line, flags=re.IGNORECASE)


def cut_comment(line: str) -> str:
    r"""``line`` up to its comment, read as text: a ``#`` outside a quoted string starts the
    comment.

    Unlike Python's tokenizer, whose handling of f-strings changed in 3.12, this reads
    the same on every interpreter (a baseline written on one is checked on another). It
    takes each line alone, so a line inside a multi-line string may lose a ``#`` and what
    follows: the same on every run, which is all a fingerprint needs.

    >>> cut_comment("x = f('#', y)  # noqa: NNX201")
    "x = f('#', y)  "
    >>> cut_comment('s = "a \\" # b"  # c')
    's = "a \\" # b"  '
    """
    quote = ""
    index = 0
    while index < len(line):
        char = line[index]
        if quote:
            if char == "\\":
                index += 2
                continue
            if line.startswith(quote, index):
                index += len(quote)
                quote = ""
                continue
        elif char == "#":
            return line[:index]
        elif char in "\"'":
            quote = char * 3 if line.startswith(char * 3, index) else char
            index += len(quote)
            continue
        index += 1
    return line
