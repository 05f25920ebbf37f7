"""One file's libcst tree, for locating diagnostic spans and turning node changes into edits.

Diagnostic columns count UTF-8 bytes (astroid's ``col_offset``); libcst and edits count
characters. :class:`SourceIndex` converts between them, finds the node a span names, and
turns "replace this node by that one" into the smallest text :class:`Edit`, so the text
outside the edit is untouched byte for byte.
"""
from __future__ import annotations

import bisect

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from nnx_lint.fixes.model import Edit, line_offsets


class SourceIndex:
    """A parsed file: nodes by span, parents, and edits from node replacements."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.offsets = line_offsets(text)
        self.module = cst.parse_module(text)
        wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
        self._positions = wrapper.resolve(PositionProvider)
        self._parents = wrapper.resolve(ParentNodeProvider)
        self._by_span: dict[tuple[int, int, int, int], cst.CSTNode] = {}
        for node, where in self._positions.items():
            if isinstance(node, (cst.Call, cst.Name, cst.Attribute)):
                key = (where.start.line, where.start.column, where.end.line, where.end.column)
                self._by_span.setdefault(key, node)

    def char_column(self, line: int, byte_column: int) -> int:
        """The 0-based character column of a 1-based UTF-8 byte column on ``line``."""
        if line < 1 or line > len(self.lines):
            return byte_column - 1
        encoded = self.lines[line - 1].encode("utf-8")
        return len(encoded[: byte_column - 1].decode("utf-8", errors="ignore"))

    def node_at(self, line: int, column: int, end_line: int, end_column: int) -> cst.CSTNode | None:
        """The Call / Name / Attribute whose span is exactly the given (1-based, byte) span."""
        key = (line, self.char_column(line, column), end_line, self.char_column(end_line, end_column))
        return self._by_span.get(key)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._parents.get(node)

    def start_line(self, node: cst.CSTNode) -> int:
        """The 1-based line on which ``node`` starts."""
        return self._positions[node].start.line

    def start_offset(self, node: cst.CSTNode) -> int:
        where = self._positions[node].start
        return self.offsets[where.line - 1] + where.column

    def end_offset(self, node: cst.CSTNode) -> int:
        where = self._positions[node].end
        return self.offsets[where.line - 1] + where.column

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (row, character column) of a character offset."""
        line = bisect.bisect_right(self.offsets, offset) - 1
        return line + 1, offset - self.offsets[line] + 1

    def replacement(self, old: cst.CSTNode, new: cst.CSTNode) -> Edit | None:
        """The smallest edit replacing ``old`` by ``new`` (None if nothing changes).

        The whole module is regenerated with the node replaced, so libcst renders ``new``
        with the indentation of its block, and the edit is the one differing stretch.
        """
        after = self.module.deep_replace(old, new)
        assert isinstance(after, cst.Module)
        return self.edit(0, len(self.text), after.code)

    def edit(self, start: int, end: int, content: str) -> Edit | None:
        """The smallest edit turning ``text[start:end]`` into ``content``."""
        before = self.text[start:end]
        if before == content:
            return None
        prefix = 0
        while prefix < min(len(before), len(content)) and before[prefix] == content[prefix]:
            prefix += 1
        suffix = 0
        while (suffix < min(len(before), len(content)) - prefix
               and before[len(before) - 1 - suffix] == content[len(content) - 1 - suffix]):
            suffix += 1
        line, column = self.position(start + prefix)
        end_line, end_column = self.position(end - suffix)
        return Edit(line, column, end_line, end_column, content[prefix:len(content) - suffix])
