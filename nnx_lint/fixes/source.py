"""One file's libcst trees, for locating diagnostic spans and turning node changes into edits.

Diagnostic columns count UTF-8 bytes (astroid's ``col_offset``); libcst and edits count
characters. :class:`SourceIndex` converts between them, finds the node a span names, and
turns "replace this node by that one" into the smallest text :class:`Edit`, so the text
outside the edit is untouched byte for byte.

Positions and parents come from libcst's metadata, which visits every node of the tree
it is given: over a whole large module that is about a second, and it dominated JSON and
SARIF runs (65 of 70 seconds on erfanzar/EasyDeL's 68 findings). A fix only ever touches
the statement it is in, so the index parses and resolves that statement alone (a *region*:
its full lines, decorators included), on first use. The region is the innermost statement of
a class or function body holding the line (a test method, not its whole ``TestCase`` class:
most of the ``[*]`` check on flax was libcst resolving whole test classes), with its block's
indentation removed from every line; a statement whose lines do not all carry that
indentation (a string or a bracketed line further left) is read with its enclosing one, up to
the top-level statement. Positions inside a region are shifted by its first line and its
indentation, so they are the file's positions, and a replacement is indented back. A statement
libcst cannot parse gets no fix; the rest of the file still does.
"""
from __future__ import annotations

import ast
import bisect
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from nnx_lint.fixes.line_length import DEFAULT as DEFAULT_LINE_LENGTH
from nnx_lint.fixes.line_length import file_indent
from nnx_lint.fixes.model import Edit, apply_edits, line_offsets, source_lines


@dataclass
class _Parsed:
    """One region's text parsed and resolved, positions relative to its first line: shared by
    every index of the process whose text has a region with this text (the fix passes of one
    file re-index texts that differ only where the previous pass edited)."""

    module: cst.Module
    positions: Mapping = field(default_factory=dict)
    #: Each node's parent, found on first use (:func:`_parents`): only a decorator's pin asks.
    known_parents: Mapping | None = None
    #: Call / Name / Attribute nodes by (start line, column, end line, end column), lines from 1.
    by_span: dict = field(default_factory=dict)

    @property
    def parents(self) -> Mapping:
        if self.known_parents is None:
            self.known_parents = _parents(self.module)
        return self.known_parents


@dataclass
class _Region:
    """Lines ``first..last`` (1-based, inclusive) of the file, parsed as a module of their own
    with ``indent`` taken off the start of each non-empty line."""

    first: int
    last: int
    parsed: _Parsed
    indent: str = ""

    def indented(self, code: str) -> str:
        """``code`` rendered in this region, with the region's indentation put back."""
        if not self.indent:
            return code
        return "".join(self.indent + line if line.strip("\r\n") else line for line in source_lines(code))

    @property
    def module(self) -> cst.Module:
        return self.parsed.module

    @property
    def positions(self) -> Mapping:
        return self.parsed.positions

    @property
    def parents(self) -> Mapping:
        return self.parsed.parents


#: Parsed regions by text, most recently used last (see :class:`_Parsed`); None: libcst cannot parse it.
_PARSED: OrderedDict[str, _Parsed | None] = OrderedDict()
#: Bound on :data:`_PARSED`: the regions of a few passes over a file are what is reused.
_PARSED_KEPT = 256


def _parsed(text: str) -> _Parsed | None:
    """The region ``text`` parsed and resolved (cached by text); None if libcst cannot parse it."""
    if text in _PARSED:
        _PARSED.move_to_end(text)
        return _PARSED[text]
    try:
        found: _Parsed | None = _resolve(text)
    except (cst.ParserSyntaxError, RecursionError):
        found = None  # libcst cannot read this statement: no fix touches it
    _PARSED[text] = found
    if len(_PARSED) > _PARSED_KEPT:
        _PARSED.popitem(last=False)
    return found


def _resolve(text: str) -> _Parsed:
    module = cst.parse_module(text)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    parsed = _Parsed(module, wrapper.resolve(PositionProvider))
    for node, where in parsed.positions.items():
        if isinstance(node, (cst.Call, cst.Name, cst.Attribute)):
            key = (where.start.line, where.start.column, where.end.line, where.end.column)
            parsed.by_span.setdefault(key, node)
    return parsed


def _parents(module: cst.Module) -> dict[cst.CSTNode, cst.CSTNode]:
    """Each node's parent, as libcst's ``ParentNodeProvider`` gives it (a node is the parent of its
    ``children``), found by a plain walk: the provider is a batched visitor, whose set-up lists
    every member of the visitor by introspection on each use. That was half of a pin's cost, and
    a class-level pin resolves a region for every use of the class in the file."""
    parents: dict[cst.CSTNode, cst.CSTNode] = {}
    pending: list[cst.CSTNode] = [module]
    while pending:
        node = pending.pop()
        for child in node.children:
            parents[child] = node
            pending.append(child)
    return parents


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
        self._firsts = [first for first, _last in self._ranges]
        #: The statements of class and function bodies, by the range of the class or function.
        self._bodies = _body_ranges(text)
        self._regions: dict[tuple[int, int], _Region | None] = {}  # by lines; None: libcst cannot parse it
        #: The parsed texts of :attr:`_regions`, by identity: a region's check that its nodes are its own
        #: is one lookup, not a scan of every region (a file of N pinned calls has N regions).
        self._parsed_ids: set[int] = set()
        #: The region of each node handed out (:meth:`node_at`, :meth:`parent`), so that a question
        #: about a node finds its region at once instead of scanning every region.
        self._owners: dict[cst.CSTNode, _Region] = {}
        #: Answers computed from this index's nodes, kept with it (pin edits, :func:`nnx_lint.fixes.pin.pin_edit`).
        self.memo: dict = {}

    # -- regions --------------------------------------------------------------------------
    def _region_at(self, line: int) -> _Region | None:
        """The smallest region holding ``line`` that libcst parses (parsed and resolved on first use)."""
        position = bisect.bisect_right(self._firsts, line) - 1
        if position < 0 or not (self._ranges[position][0] <= line <= self._ranges[position][1]):
            return None
        for first, last, indent in reversed(self._enclosing(self._ranges[position], line)):
            region = self._region(first, last, indent)
            if region is not None:
                return region
        return None

    def _enclosing(self, top: tuple[int, int], line: int) -> list[tuple[int, int, str]]:
        """``(first, last, indentation)`` of the statements holding ``line``, outermost first: the
        top-level one, then each body statement of a class or function that holds it and whose
        every non-empty line starts with its indentation (so that it parses on its own without it)."""
        found = [(top[0], top[1], "")]
        current = top
        while current in self._bodies:
            statements = self._bodies[current]
            position = bisect.bisect_right([first for first, _last, _column in statements], line) - 1
            if position < 0 or not statements[position][0] <= line <= statements[position][1]:
                break
            first, last, column = statements[position]
            indent = self.lines[first - 1][:column]
            if not indent or indent.strip(" \t") or not all(
                    text.startswith(indent) or not text.strip("\r\n") for text in self.lines[first - 1:last]):
                break
            found.append((first, last, indent))
            current = (first, last)
        return found

    def _region(self, first: int, last: int, indent: str) -> _Region | None:
        key = (first, last)
        if key not in self._regions:
            cut = len(indent)
            text = "".join(line[cut:] if line.strip("\r\n") else line for line in self.lines[first - 1:last])
            parsed = _parsed(text)
            if parsed is not None and id(parsed) in self._parsed_ids:
                # The same text twice in one file: each region needs nodes of its own, or a node
                # would not say which region (and which lines) it is in.
                try:
                    parsed = _resolve(text)
                except (cst.ParserSyntaxError, RecursionError):
                    parsed = None
            self._regions[key] = None if parsed is None else _Region(first, last, parsed, indent)
            if parsed is not None:
                self._parsed_ids.add(id(parsed))
        return self._regions[key]

    def parses_after(self, edits: list[Edit]) -> bool:
        """Whether the text with ``edits`` applied is still valid Python for CPython, and every
        statement the edits change is still readable by libcst (each fix a pass chooses is checked so).

        CPython's parser reads the whole text (it is fast); libcst's reads only the statements the
        edits change: the innermost class or function body statement holding them, without its
        block's indentation, else the top-level one (see :meth:`_edited_statements`). Such a
        statement starts at its block's indentation after complete lines and ends with complete
        lines, so parsing it on its own reads the tokens it has in the whole text. A statement
        libcst could not read before stays unreadable, and gets no fix (:meth:`_region_at`), but
        does not keep the file's other statements from being fixed."""
        after = apply_edits(self.text, edits)
        if _cpython_ranges(after) is None:
            return False
        statements = self._edited_statements(edits)
        if statements is None:
            return parses(after)
        return all(_libcst_parses(statement) for statement in statements)

    def _edited_statements(self, edits: list[Edit]) -> list[str] | None:
        """The new text of each statement the edits change, its block's indentation removed; None
        when an edit is not inside one top-level statement (between statements, or across two)."""
        by_range: dict[tuple[int, int], list[tuple[int, int, Edit]]] = {}
        for edit in edits:
            start = self.offsets[edit.line - 1] + edit.column - 1
            end = self.offsets[edit.end_line - 1] + edit.end_column - 1
            position = bisect.bisect_right(self._firsts, edit.line) - 1
            if position < 0:
                return None
            first, last = self._ranges[position]
            if not (self.offsets[first - 1] <= start and end <= self.offsets[last] and start < self.offsets[last]):
                return None
            by_range.setdefault((first, last), []).append((start, end, edit))
        return [self._edited_statement(top, changes) for top, changes in by_range.items()]

    def _edited_statement(self, top: tuple[int, int], changes: list[tuple[int, int, Edit]]) -> str:
        """The new text of the innermost statement under ``top`` holding every change, without its
        indentation when every non-empty line of the new text still starts with it."""
        for first, last, indent in reversed(self._enclosing(top, changes[0][2].line)):
            low, high = self.offsets[first - 1], self.offsets[last]
            if not all(low <= start and end <= high and start < high for start, end, _edit in changes):
                continue
            text = self.text[low:high]
            for start, end, edit in sorted(changes, key=lambda change: change[:2], reverse=True):
                text = text[:start - low] + edit.content + text[end - low:]
            lines = source_lines(text)
            if all(line.startswith(indent) or not line.strip("\r\n") for line in lines):
                cut = len(indent)
                return "".join(line[cut:] if line.strip("\r\n") else line for line in lines)
        raise AssertionError("the top-level statement holds every change")  # its indentation is ""

    def _region_of(self, node: cst.CSTNode) -> _Region:
        owner = self._owners.get(node)
        if owner is not None:
            return owner
        for region in self._regions.values():
            if region is not None and node in region.positions:
                self._owners[node] = region
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
        shift, cut = region.first - 1, len(region.indent)
        key = (line - shift, self.char_column(line, column) - cut,
               end_line - shift, self.char_column(end_line, end_column) - cut)
        found = region.parsed.by_span.get(key)
        if found is not None:
            self._owners[found] = region
        return found

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        region = self._region_of(node)
        found = region.parents.get(node)
        if found is not None:
            self._owners[found] = region
        return found

    def start_line(self, node: cst.CSTNode) -> int:
        """The 1-based line on which ``node`` starts."""
        region = self._region_of(node)
        return region.positions[node].start.line + region.first - 1

    def start_offset(self, node: cst.CSTNode) -> int:
        region = self._region_of(node)
        where = region.positions[node].start
        return self.offsets[where.line + region.first - 2] + where.column + len(region.indent)

    def end_offset(self, node: cst.CSTNode) -> int:
        region = self._region_of(node)
        where = region.positions[node].end
        return self.offsets[where.line + region.first - 2] + where.column + len(region.indent)

    def code(self, node: cst.CSTNode) -> str:
        """The source of ``node`` (its lines after the first without the region's indentation)."""
        return self._region_of(node).module.code_for_node(node)

    def line_indent(self, node: cst.CSTNode) -> str:
        """The indentation of the line ``node`` starts on, as a replacement in its region is written
        (the region's own indentation is put back by :meth:`replacement`)."""
        region = self._region_of(node)
        line = self.lines[self.start_line(node) - 1][len(region.indent):]
        return line[: len(line) - len(line.lstrip(" \t"))]

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
        return self.edit(self.offsets[region.first - 1], self.offsets[region.last], region.indented(after.code))

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


#: Whether texts parse (:func:`parses`), by text, most recently used last.
_PARSES: OrderedDict[str, bool] = OrderedDict()
_PARSES_KEPT = 64


def python_parses(text: str) -> bool:
    """Whether CPython's parser accepts ``text`` (what a fix pass needs of the text it starts from:
    a statement libcst cannot read gets no fix, and the others still do)."""
    return _cpython_ranges(text) is not None


def parses(text: str) -> bool:
    """Whether ``text`` is valid Python for both libcst and CPython's own parser (remembered
    for the last texts asked: each fix pass asks about the text the previous one made)."""
    found = _PARSES.get(text)
    if found is None:
        found = _cpython_ranges(text) is not None and _libcst_parses(text, remember=False)
    _remember_parses(text, found)
    return found


def _remember_parses(text: str, parses: bool) -> None:
    _PARSES[text] = parses
    _PARSES.move_to_end(text)
    if len(_PARSES) > _PARSES_KEPT:
        _PARSES.popitem(last=False)


#: libcst's answer for the statements of edited texts (:meth:`SourceIndex.parses_after`).
_LIBCST: OrderedDict[str, bool] = OrderedDict()


def _libcst_parses(text: str, remember: bool = True) -> bool:
    found = _LIBCST.get(text)
    if found is None:
        try:
            cst.parse_module(text)
            found = True
        except (cst.ParserSyntaxError, ValueError, RecursionError):
            found = False
        if remember:
            _LIBCST[text] = found
            if len(_LIBCST) > _PARSES_KEPT:
                _LIBCST.popitem(last=False)
    return found


#: Indexes by (text, line length, indent width), most recently used last: the ``[*]`` check computes a file's
#: fixes and then fixes the same text, as ``--fix`` does, which asks for the same fixes again.
_INDEXES: OrderedDict[tuple[str, int, int | None], SourceIndex] = OrderedDict()
_INDEXES_KEPT = 4


def index_for(text: str, line_length: int = DEFAULT_LINE_LENGTH, indent_width: int | None = None) -> SourceIndex:
    """The :class:`SourceIndex` of ``text`` (one per text, line length and indent width among
    the last few asked)."""
    key = (text, line_length, indent_width)
    found = _INDEXES.get(key)
    if found is None:
        found = _INDEXES[key] = SourceIndex(text, line_length, indent_width)
        if len(_INDEXES) > _INDEXES_KEPT:
            _INDEXES.popitem(last=False)
    else:
        _INDEXES.move_to_end(key)
    return found


def _statement_ranges(text: str, line_count: int) -> list[tuple[int, int]]:
    """``(first, last)`` lines of each top-level statement (decorators included), statements
    sharing a line merged. A text CPython cannot parse is one region: the whole file."""
    ranges = _cpython_ranges(text)
    return [(1, max(line_count, 1))] if ranges is None else ranges


#: :func:`_cpython_ranges` by text, most recently used last.
_RANGES: OrderedDict[str, list[tuple[int, int]] | None] = OrderedDict()
_RANGES_KEPT = 16
#: :func:`_body_ranges` by text, filled by the same parse as :data:`_RANGES`.
_BODIES: OrderedDict[str, dict] = OrderedDict()


def _body_ranges(text: str) -> dict[tuple[int, int], list[tuple[int, int, int]]]:
    """For each class and function (by its lines, decorators included): ``(first, last, column)``
    of each statement of its body, statements sharing a line merged (empty if CPython rejects ``text``)."""
    if text not in _BODIES:
        _cpython_ranges(text, force=True)
    return _BODIES.get(text) or {}


def _statement_lines(statement: ast.stmt) -> tuple[int, int, int]:
    """``(first, last, column)`` of a statement, decorators included (column: where its first line's code starts)."""
    decorators = getattr(statement, "decorator_list", [])
    if decorators:
        first = min(decorator.lineno for decorator in decorators)
        # The `@` is the first thing on the first decorator's line.
        column = min(decorator.col_offset for decorator in decorators if decorator.lineno == first) - 1
    else:
        first, column = statement.lineno, statement.col_offset
    return min(first, statement.lineno), statement.end_lineno or statement.lineno, column


def _merged(statements: list[ast.stmt]) -> list[tuple[int, int, int]]:
    found: list[tuple[int, int, int]] = []
    for statement in statements:
        first, last, column = _statement_lines(statement)
        if found and first <= found[-1][1]:
            found[-1] = (found[-1][0], max(found[-1][1], last), found[-1][2])
        else:
            found.append((first, last, column))
    return found


def _bodies_of(tree: ast.Module) -> dict[tuple[int, int], list[tuple[int, int, int]]]:
    bodies: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    pending = [statement for statement in tree.body]
    while pending:
        statement = pending.pop()
        if isinstance(statement, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first, last, _column = _statement_lines(statement)
            bodies[(first, last)] = _merged(statement.body)
            pending.extend(statement.body)
    return bodies


def _cpython_ranges(text: str, force: bool = False) -> list[tuple[int, int]] | None:
    """The top-level statements' line ranges by CPython's parser, or None if it rejects ``text``.

    Remembered for the last texts: a fix pass asks CPython whether each candidate text parses
    and then indexes the text it chose, which the parse has already read (each was a whole
    parse of the file: a third of the ``[*]`` check on flax)."""
    if text in _RANGES and not (force and text not in _BODIES):
        _RANGES.move_to_end(text)
        return _RANGES[text]
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        found, bodies = None, {}
    else:
        found = [(first, last) for first, last, _column in _merged(tree.body)]
        bodies = _bodies_of(tree)
        del tree  # only the ranges are kept
    _RANGES[text] = found
    _BODIES[text] = bodies
    for kept in (_RANGES, _BODIES):
        kept.move_to_end(text)
        if len(kept) > _RANGES_KEPT:
            kept.popitem(last=False)
    return found
