"""Where a notebook cell's code sits in the ``.ipynb`` file's own text.

Diagnostics in notebooks are reported as (cell, line in cell, column), as Ruff reports
them. A GitHub annotation or a SARIF result, though, is drawn on the file as the pull
request shows it: the JSON text. :class:`IpynbLocator` maps a position in a cell to the
line and column of the ``.ipynb`` text that holds that character — the string element
of the cell's ``"source"`` array, or the one ``"source"`` string when a cell is stored
as a single string (then every code line of the cell is on the same JSON line, and the
column is where the character's escaped spelling starts in it).

The scan is JSON-aware but never evaluates anything: it walks the tokens, skipping
strings with :func:`json.decoder.scanstring`, and records the offsets of the strings
found at ``cells[k].source`` (or ``cells[k].source[i]``). Like :func:`json.loads`, the
last of duplicate keys wins. Nesting is tracked on an explicit stack, so deep JSON
costs no recursion.

>>> text = '{"cells": [{"cell_type": "code",\\n "source": ["import os\\\\n",\\n   "x = 1"]}]}'
>>> IpynbLocator(text).locate(cell_index=0, line=2, column=1)
(3, 5)
"""
from __future__ import annotations

import bisect
import json
import re
from json.decoder import scanstring

# The next token: a structural character, a string's opening quote, or a bare literal.
_TOKEN = re.compile(r'[{}\[\],:"]|[^\s{}\[\],:"]+')


def _source_strings(text: str) -> dict[int, list[int]]:
    """For each cell (0-based index in ``cells``), the offsets of the opening quotes of
    the strings that make up its ``"source"``."""
    found: dict[int, list[int]] = {}
    # A frame per open container: [is_object, key or element index, expecting a key].
    stack: list[list] = []
    position = 0
    while True:
        match = _TOKEN.search(text, position)
        if match is None:
            return found
        token, position = match.group(), match.end()
        top = stack[-1] if stack else None
        if token == '"':
            start = match.start()
            value, position = scanstring(text, position)
            if top is not None and top[0] and top[2]:
                top[1], top[2] = value, False
                if len(stack) == 1 and value == "cells":
                    found = {}  # a later "cells" key replaces an earlier one
                elif _is_cell(stack) and value == "source":
                    found[stack[1][1]] = []  # a later "source" replaces an earlier one
                continue
            if _is_cell(stack) and top[1] == "source":
                found[stack[1][1]] = [start]
            elif len(stack) == 4 and not stack[3][0] and _is_cell(stack[:3]) and stack[2][1] == "source":
                found[stack[1][1]].append(start)
        elif token in "{[":
            stack.append([token == "{", None if token == "{" else 0, token == "{"])
        elif token in "}]":
            if stack:
                stack.pop()
        elif token == ",":
            if top is not None:
                if top[0]:
                    top[2] = True
                else:
                    top[1] += 1


def _is_cell(stack: list[list]) -> bool:
    """The innermost container is ``cells[k]`` of the top-level object."""
    return (
        len(stack) == 3 and stack[0][0] and stack[0][1] == "cells"
        and not stack[1][0] and stack[2][0]
    )


def _raw_offset(text: str, quote: int, decoded_offset: int) -> int:
    """The offset in ``text`` of the character at ``decoded_offset`` of the JSON string
    whose opening quote is at ``quote`` (escapes count as the one character they spell;
    a surrogate pair ``\\ud83d\\ude00`` is one character, as :mod:`json` decodes it)."""
    position = quote + 1
    for _ in range(decoded_offset):
        if text[position] != "\\":
            position += 1
        elif text[position + 1] != "u":
            position += 2
        elif 0xD800 <= int(text[position + 2:position + 6], 16) < 0xDC00 and text[position + 6:position + 8] == "\\u":
            position += 12
        else:
            position += 6
    return position


class IpynbLocator:
    """Maps (cell, line in cell, column) to (line, column) in the notebook's JSON text.

    All numbers are 1-based except ``cell_index``, the 0-based index in ``cells``.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.strings = _source_strings(text)
        document = json.loads(text)
        cells = document.get("cells") if isinstance(document, dict) else None
        # Only a list of cells can be located; anything else maps nothing (and is the
        # notebook reader's problem to report).
        self.sources = [cell.get("source", "") if isinstance(cell, dict) else ""
                        for cell in (cells if isinstance(cells, list) else [])]
        self.line_starts = [0] + [match.end() for match in re.finditer("\n", text)]

    def locate(self, cell_index: int, line: int, column: int) -> tuple[int, int] | None:
        """The JSON line and column holding that character, or ``None`` if unknown."""
        quotes = self.strings.get(cell_index)
        if not quotes or cell_index >= len(self.sources):
            return None
        source = self.sources[cell_index]
        pieces = [source] if isinstance(source, str) else [p if isinstance(p, str) else "" for p in source]
        if len(pieces) != len(quotes):
            return None
        offset = self._cell_offset("".join(pieces), line, column)
        ends, total = [], 0
        for piece in pieces:
            total += len(piece)
            ends.append(total)
        # The piece holding the character (the last piece for a position at the very end).
        piece_index = min(bisect.bisect_right(ends, offset), len(pieces) - 1)
        piece_start = ends[piece_index] - len(pieces[piece_index])
        raw = _raw_offset(self.text, quotes[piece_index], min(offset - piece_start, len(pieces[piece_index])))
        json_line = bisect.bisect_right(self.line_starts, raw)
        return json_line, raw - self.line_starts[json_line - 1] + 1

    @staticmethod
    def _cell_offset(source: str, line: int, column: int) -> int:
        """The offset in the cell's text of (line, column), split into lines as
        :func:`nnx_lint.base.notebooks.notebook_source` splits it."""
        lines = source.splitlines(keepends=True) or [""]
        line = max(1, min(line, len(lines)))
        start = sum(len(text) for text in lines[:line - 1])
        content = lines[line - 1].rstrip("\r\n")
        return start + max(0, min(column - 1, len(content)))
