"""One file's libcst trees, for locating diagnostic spans and turning node changes into edits.

Diagnostic columns count UTF-8 bytes (astroid's ``col_offset``); libcst and edits count
characters. :class:`SourceIndex` converts between them, finds the node a span names, and
turns "replace this node by that one" into the smallest text :class:`Edit`, so the text
outside the edit is untouched byte for byte.

Positions and parents come from libcst's metadata, which visits every node of the tree
it is given: over a whole large module that is about a second, and it dominated JSON and
SARIF runs (65 of 70 seconds on erfanzar/EasyDeL's 68 findings). A fix only ever touches
the top-level statement it is in, so the index parses and resolves that statement alone
(a *region*: its full lines, decorators included), on first use. Positions inside a region
are shifted by its first line, so they are the file's positions. A statement libcst cannot
parse gets no fix; the rest of the file still does.
"""
from __future__ import annotations

import ast
import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from nnx_lint.fixes.line_length import DEFAULT as DEFAULT_LINE_LENGTH
from nnx_lint.fixes.line_length import file_indent
from nnx_lint.fixes.model import Edit, line_offsets, source_lines


@dataclass
class _Region:
    """Lines ``first..last`` (1-based, inclusive) of the file, parsed as a module of their own."""

    first: int
    last: int
    module: cst.Module
    positions: Mapping = field(default_factory=dict)
    parents: Mapping = field(default_factory=dict)
    by_span: dict = field(default_factory=dict)


class SourceIndex:
    """A parsed file: nodes by span, parents, and edits from node replacements."""

    def __init__(self, text: str, line_length: int = DEFAULT_LINE_LENGTH, indent_width: int | None = None) -> None:
        self.text = text
        #: The project's line length, which the lines a fix writes should fit (:mod:`nnx_lint.fixes.pin`).
        self.line_length = line_length
        #: One level of indentation for the lines a fix adds: the project's ``indent-width``, else
        #: the file's own (:func:`nnx_lint.fixes.line_length.file_indent`).
        self.indent = " " * indent_width if indent_width else file_indent(text)
        self.lines = source_lines(text)
        self.offsets = line_offsets(text)
        self._ranges = _statement_ranges(text, len(self.lines))
        self._regions: dict[int, _Region | None] = {}  # by first line; None: libcst cannot parse it

    # -- regions --------------------------------------------------------------------------
    def _region_at(self, line: int) -> _Region | None:
        """The region holding ``line`` (parsed and resolved on first use)."""
        position = bisect.bisect_right([first for first, _last in self._ranges], line) - 1
        if position < 0 or not (self._ranges[position][0] <= line <= self._ranges[position][1]):
            return None
        first, last = self._ranges[position]
        if first not in self._regions:
            try:
                self._regions[first] = self._resolve(first, last)
            except (cst.ParserSyntaxError, RecursionError):
                self._regions[first] = None  # libcst cannot read this statement: no fix touches it
        return self._regions[first]

    def _resolve(self, first: int, last: int) -> _Region:
        module = cst.parse_module("".join(self.lines[first - 1:last]))
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        resolved = wrapper.resolve_many([PositionProvider, ParentNodeProvider])
        region = _Region(first, last, module, resolved[PositionProvider], resolved[ParentNodeProvider])
        shift = first - 1
        for node, where in region.positions.items():
            if isinstance(node, (cst.Call, cst.Name, cst.Attribute)):
                key = (where.start.line + shift, where.start.column, where.end.line + shift, where.end.column)
                region.by_span.setdefault(key, node)
        return region

    def _region_of(self, node: cst.CSTNode) -> _Region:
        for region in self._regions.values():
            if region is not None and node in region.positions:
                return region
        raise KeyError("the node is not from this index")

    # -- questions ------------------------------------------------------------------------
    def char_column(self, line: int, byte_column: int) -> int:
        """The 0-based character column of a 1-based UTF-8 byte column on ``line``."""
        if line < 1 or line > len(self.lines):
            return byte_column - 1
        encoded = self.lines[line - 1].encode("utf-8")
        return len(encoded[: byte_column - 1].decode("utf-8", errors="ignore"))

    def node_at(self, line: int, column: int, end_line: int, end_column: int) -> cst.CSTNode | None:
        """The Call / Name / Attribute whose span is exactly the given (1-based, byte) span."""
        region = self._region_at(line)
        if region is None:
            return None
        key = (line, self.char_column(line, column), end_line, self.char_column(end_line, end_column))
        return region.by_span.get(key)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._region_of(node).parents.get(node)

    def start_line(self, node: cst.CSTNode) -> int:
        """The 1-based line on which ``node`` starts."""
        region = self._region_of(node)
        return region.positions[node].start.line + region.first - 1

    def start_offset(self, node: cst.CSTNode) -> int:
        region = self._region_of(node)
        where = region.positions[node].start
        return self.offsets[where.line + region.first - 2] + where.column

    def end_offset(self, node: cst.CSTNode) -> int:
        region = self._region_of(node)
        where = region.positions[node].end
        return self.offsets[where.line + region.first - 2] + where.column

    def code(self, node: cst.CSTNode) -> str:
        return self._region_of(node).module.code_for_node(node)

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (row, character column) of a character offset."""
        line = bisect.bisect_right(self.offsets, offset) - 1
        return line + 1, offset - self.offsets[line] + 1

    def replacement(self, old: cst.CSTNode, new: cst.CSTNode) -> Edit | None:
        """The smallest edit replacing ``old`` by ``new`` (None if nothing changes).

        The node's whole region is regenerated with the node replaced, so libcst renders
        ``new`` with the indentation of its block, and the edit is the one differing stretch.
        """
        region = self._region_of(old)
        after = region.module.deep_replace(old, new)
        assert isinstance(after, cst.Module)
        return self.edit(self.offsets[region.first - 1], self.offsets[region.last], after.code)

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


def _statement_ranges(text: str, line_count: int) -> list[tuple[int, int]]:
    """``(first, last)`` lines of each top-level statement (decorators included), statements
    sharing a line merged. A text CPython cannot parse is one region: the whole file."""
    whole = [(1, max(line_count, 1))]
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return whole
    ranges: list[tuple[int, int]] = []
    for statement in tree.body:
        first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", [])])
        last = statement.end_lineno or statement.lineno
        if ranges and first <= ranges[-1][1]:
            ranges[-1] = (ranges[-1][0], max(ranges[-1][1], last))
        else:
            ranges.append((first, last))
    return ranges
