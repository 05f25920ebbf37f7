"""nnx-lint's findings and edits as LSP values: positions, diagnostics, related locations.

Diagnostic columns count UTF-8 bytes from 1 (astroid's ``col_offset`` + 1); fix edits
count characters from 1 (:mod:`nnx_lint.fixes.model`); LSP positions count from 0 in the
encoding the client and server agreed on (UTF-16 unless the client offers another). Lines
are split where Python splits them (``\\n``, ``\\r\\n``, ``\\r``), which is also LSP's rule.
"""
from __future__ import annotations

from collections.abc import Callable

from lsprotocol import types

from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.fixes.model import Edit, source_lines

#: The ``source`` of every diagnostic the server publishes.
SOURCE = "nnx-lint"

#: Severity follows what Tree Mode does: a raise is an error, a silent change of meaning a
#: warning (as in the GitHub annotations); a file that could not be analysed is an error
#: (its findings are missing), an advisory is information.
SEVERITY = {
    "raises": types.DiagnosticSeverity.Error,
    "silent": types.DiagnosticSeverity.Warning,
    "linter": types.DiagnosticSeverity.Error,
    "advisory": types.DiagnosticSeverity.Information,
}


class Positions:
    """Converts one text's nnx-lint positions to LSP positions in the negotiated encoding."""

    def __init__(self, text: str, encoding: str = types.PositionEncodingKind.Utf16) -> None:
        self.lines = [line.rstrip("\r\n") for line in source_lines(text)]
        self.encoding = encoding
        self._ends_with_break = text.endswith(("\n", "\r"))

    def _units(self, chars: str) -> int:
        if self.encoding == types.PositionEncodingKind.Utf8:
            return len(chars.encode("utf-8", "surrogatepass"))
        if self.encoding == types.PositionEncodingKind.Utf32:
            return len(chars)
        return len(chars.encode("utf-16-le", "surrogatepass")) // 2

    def _line(self, line: int) -> tuple[int, str]:
        index = min(max(line - 1, 0), len(self.lines))  # a position past the end is the end
        return index, self.lines[index] if index < len(self.lines) else ""

    def from_chars(self, line: int, column: int) -> types.Position:
        """The position of 1-based ``line`` and 1-based character ``column``."""
        index, text = self._line(line)
        return types.Position(index, self._units(text[: max(column - 1, 0)]))

    def from_bytes(self, line: int, column: int) -> types.Position:
        """The position of 1-based ``line`` and 1-based UTF-8 byte ``column``."""
        index, text = self._line(line)
        prefix = text.encode("utf-8", "surrogatepass")[: max(column - 1, 0)]
        return types.Position(index, self._units(prefix.decode("utf-8", "ignore")))

    def to_chars(self, position: types.Position) -> tuple[int, int]:
        """``(line, character column)``, both 1-based, of an LSP position."""
        index, text = self._line(position.line + 1)
        units = 0
        for offset, char in enumerate(text):
            if units >= position.character:
                return index + 1, offset + 1
            units += self._units(char)
        return index + 1, len(text) + 1

    def end(self) -> types.Position:
        """The position just past the last character of the text."""
        if not self.lines or self._ends_with_break:
            return types.Position(len(self.lines), 0)
        return types.Position(len(self.lines) - 1, self._units(self.lines[-1]))


def diagnostic_range(diagnostic: Diagnostic, positions: Positions) -> types.Range:
    """The diagnostic's span (an empty span is widened to one character, so editors show it)."""
    start = positions.from_bytes(diagnostic.line, diagnostic.column)
    end = positions.from_bytes(diagnostic.end_line, diagnostic.end_column)
    if (end.line, end.character) <= (start.line, start.character):
        end = types.Position(start.line, start.character + 1)
    return types.Range(start, end)


def diagnostic_key(diagnostic: Diagnostic) -> str:
    """What identifies a published finding in later requests (its ``data``)."""
    return f"{diagnostic.code}:{diagnostic.line}:{diagnostic.column}:{diagnostic.end_line}:{diagnostic.end_column}"


def to_lsp(
    diagnostic: Diagnostic,
    positions: Positions,
    uri_of: Callable[[str], str],
    positions_of: Callable[[str], Positions | None],
) -> types.Diagnostic:
    """One finding as an LSP diagnostic: the "also at" lines are its related information,
    the rule page its code description."""
    related = []
    for location in diagnostic.related:
        where = positions if location.path == diagnostic.path else positions_of(location.path)
        if where is None:  # another file that cannot be read: its byte columns stand as they are
            start = types.Position(max(location.line - 1, 0), max(location.column - 1, 0))
            end = types.Position(max(location.end_line - 1, 0), max(location.end_column - 1, 0))
        else:
            start = where.from_bytes(location.line, location.column)
            end = where.from_bytes(location.end_line, location.end_column)
        related.append(types.DiagnosticRelatedInformation(
            types.Location(uri_of(location.path), types.Range(start, end)), location.message))
    return types.Diagnostic(
        range=diagnostic_range(diagnostic, positions),
        message=diagnostic.message,
        severity=SEVERITY.get(diagnostic.kind, types.DiagnosticSeverity.Warning),
        code=diagnostic.code,
        code_description=types.CodeDescription(href=diagnostic.url),
        source=SOURCE,
        related_information=related or None,
        data={"key": diagnostic_key(diagnostic)},
    )


def config_diagnostic(message: str) -> types.Diagnostic:
    """The one diagnostic of a file whose ``pyproject.toml`` is invalid (the CLI exits 2)."""
    return types.Diagnostic(
        range=types.Range(types.Position(0, 0), types.Position(0, 1)),
        message=f"nnx-lint did not analyse this file: {message}",
        severity=types.DiagnosticSeverity.Error,
        source=SOURCE,
    )


def text_edit(edit: Edit, positions: Positions) -> types.TextEdit:
    """A fix's edit (character columns) as an LSP text edit."""
    return types.TextEdit(
        types.Range(positions.from_chars(edit.line, edit.column), positions.from_chars(edit.end_line, edit.end_column)),
        edit.content,
    )
