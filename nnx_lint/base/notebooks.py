"""Jupyter notebooks: lint the code cells of ``.ipynb`` files as one module.

Code cells are joined in order (they run in order), IPython magics and shell escapes are
blanked to comments so that line numbers stay true, and each diagnostic is mapped back to
its cell: ``facts["cell"]`` is the 1-based index of the cell among *all* the notebook's
cells, Markdown and raw cells included (the cell number editors show, and Ruff's
convention), and ``line`` is the line inside that cell. ``facts["ipynb"]`` holds the same
span in the ``.ipynb`` file's own JSON text (see :mod:`nnx_lint.base.notebook_lines`), where
GitHub annotations and SARIF results must point. ``docs/notebooks.md`` tells users.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

from nnx_lint.base.diagnostic import NOTEBOOK_CELL, NOTEBOOK_SPAN, Diagnostic, Related
from nnx_lint.base.lines import physical_lines


class NotebookError(ValueError):
    """The file is not a readable notebook."""


@dataclass(frozen=True)
class CellLine:
    cell: int
    line: int


def _is_magic(line: str) -> bool:
    stripped = line.lstrip()
    return stripped.startswith(("%", "!")) or (stripped.endswith("?") and not stripped.startswith("#"))


#: ``name = %magic`` / ``a, b = !cmd``: IPython assigns the magic's result.
_ASSIGNED_MAGIC = re.compile(r"^(\s*[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*,?\s*=\s*)([%!].*)$")


def _without_magic(line: str) -> str:
    """A magic line as Python: a comment, or ``pass`` with the magic as its comment when it
    is indented (``if IN_COLAB:`` then ``  !pip install ...``), so that the block it is the
    only statement of stays a block; Ruff reads such a line as a statement too."""
    indent = line[: len(line) - len(line.lstrip())]
    return f"{indent}pass  # {line.lstrip()}" if indent else "# " + line


def _document(data: bytes) -> dict:
    try:
        # utf-8-sig: a BOM is tolerated, as Jupyter does.
        document = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise NotebookError(f"cannot read notebook: not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise NotebookError(f"cannot read notebook: invalid JSON ({exc})") from None
    except RecursionError:
        raise NotebookError("cannot read notebook: its JSON is nested too deeply") from None
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise NotebookError("cannot read notebook: no `cells` list (not a Jupyter notebook in nbformat 4)")
    return document


def _cell_text(cell: dict, index: int) -> str:
    source = cell.get("source", "")
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        return "".join(source)
    raise NotebookError(f"cannot read notebook: cell {index} has a `source` that is neither text nor a list of lines")


def notebook_source(data: bytes) -> tuple[str, list[CellLine]]:
    """The notebook's code as one module, and for each of its lines where it came from.

    Raises :class:`NotebookError` for anything that is not a well-formed notebook.
    """
    cells = _document(data)["cells"]
    lines: list[str] = []
    origin: list[CellLine] = []
    for cell_number, cell in enumerate(cells, start=1):  # every cell counts, as in Ruff
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        cell_lines = physical_lines(_cell_text(cell, cell_number)) or [""]
        cell_magic = cell_lines[0].lstrip().startswith("%%")
        for number, line in enumerate(cell_lines, start=1):
            if cell_magic:
                lines.append("# " + line)  # a %%cell magic's body is not Python
            else:
                assigned = _ASSIGNED_MAGIC.match(line)
                if assigned:  # `files = !ls`: the value is the shell's, unknown here
                    lines.append(f"{assigned.group(1)}None  # {assigned.group(2)}")
                else:
                    lines.append(_without_magic(line) if _is_magic(line) else line)
            origin.append(CellLine(cell_number, number))
    return "\n".join(lines) + "\n", origin


#: The fact that holds a notebook diagnostic's span in the ``.ipynb`` JSON text.
IPYNB_SPAN = NOTEBOOK_SPAN


def map_to_cells(
    diagnostics: list[Diagnostic], origin: list[CellLine], notebook_text: str | None = None
) -> list[Diagnostic]:
    """Rewrite module line numbers into (cell, line in cell); with the notebook's JSON
    text, also record where the span lies in that text (``facts["ipynb"]``)."""
    from nnx_lint.base.notebook_lines import IpynbLocator

    locator = IpynbLocator(notebook_text) if notebook_text is not None and diagnostics else None
    mapped = []
    for diagnostic in diagnostics:
        cell, line, end_line, end_column, span = _to_cell(
            origin, locator, diagnostic.line, diagnostic.column, diagnostic.end_line, diagnostic.end_column)
        facts = {**diagnostic.facts, NOTEBOOK_CELL: cell}
        if span is not None:
            facts[IPYNB_SPAN] = span
        # Related locations in the notebook itself are mapped alike (those in other files stay).
        related = tuple(_related_to_cell(r, origin, locator) if r.path == diagnostic.path else r
                        for r in diagnostic.related)
        mapped.append(replace(diagnostic, line=line, end_line=end_line, end_column=end_column, facts=facts,
                              related=related))
    return mapped


def _to_cell(origin: list[CellLine], locator, line: int, column: int, end_line: int, end_column: int):
    """A module span as ``(cell, line, end line, end column, ipynb span or None)``; a span
    that runs into a later cell is cut to its first line."""
    start = origin[min(line, len(origin)) - 1] if origin else CellLine(1, line)
    end = origin[min(end_line, len(origin)) - 1] if origin else start
    same_cell = end.cell == start.cell
    end_line, end_column = (end.line, end_column) if same_cell else (start.line, column)
    span = None
    if locator is not None:
        span = _ipynb_span(locator, start, column, CellLine(start.cell, end_line), end_column)
    return start.cell, start.line, end_line, end_column, span


def _related_to_cell(related: Related, origin: list[CellLine], locator) -> Related:
    cell, line, end_line, end_column, span = _to_cell(
        origin, locator, related.line, related.column, related.end_line, related.end_column)
    ipynb = (span["line"], span["column"], span["end_line"], span["end_column"]) if span is not None else None
    return replace(related, cell=cell, line=line, end_line=end_line, end_column=end_column, ipynb=ipynb)


def _ipynb_span(locator, start: CellLine, column: int, end: CellLine, end_column: int) -> dict[str, int] | None:
    first = locator.locate(start.cell - 1, start.line, column)
    last = locator.locate(end.cell - 1, end.line, end_column)
    if first is None or last is None:
        return None
    return {"line": first[0], "column": first[1], "end_line": last[0], "end_column": last[1]}


def file_span(diagnostic: Diagnostic) -> tuple[int, int, int, int]:
    """(line, column, end line, end column) in the file as stored: for a notebook, in its
    JSON text when known; for a Python file, the diagnostic's own span."""
    span = diagnostic.ipynb_span
    if span is not None:
        return span["line"], span["column"], span["end_line"], span["end_column"]
    return diagnostic.line, diagnostic.column, diagnostic.end_line, diagnostic.end_column
