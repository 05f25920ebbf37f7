"""Jupyter notebooks: lint the code cells of ``.ipynb`` files as one module.

Code cells are joined in order (they run in order), IPython magics and shell escapes are
blanked to comments so that line numbers stay true, and each diagnostic is mapped back to
its cell: ``facts["cell"]`` is the 1-based index among the notebook's code cells and
``line`` is the line inside that cell (as Ruff reports notebooks).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace

from nnx_lint.diagnostic import Diagnostic
from nnx_lint.lines import physical_lines


class NotebookError(ValueError):
    """The file is not a readable notebook."""


@dataclass(frozen=True)
class CellLine:
    cell: int
    line: int


def _is_magic(line: str) -> bool:
    stripped = line.lstrip()
    return stripped.startswith(("%", "!")) or (stripped.endswith("?") and not stripped.startswith("#"))


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
    code_cells = 0
    for index, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        code_cells += 1
        cell_lines = physical_lines(_cell_text(cell, index)) or [""]
        cell_magic = cell_lines[0].lstrip().startswith("%%")
        for number, line in enumerate(cell_lines, start=1):
            lines.append("# " + line if cell_magic or _is_magic(line) else line)
            origin.append(CellLine(code_cells, number))
    return "\n".join(lines) + "\n", origin


def map_to_cells(diagnostics: list[Diagnostic], origin: list[CellLine]) -> list[Diagnostic]:
    """Rewrite module line numbers into (cell, line in cell)."""
    mapped = []
    for diagnostic in diagnostics:
        start = origin[min(diagnostic.line, len(origin)) - 1] if origin else CellLine(1, diagnostic.line)
        end = origin[min(diagnostic.end_line, len(origin)) - 1] if origin else start
        end_line = end.line if end.cell == start.cell else start.line
        mapped.append(
            replace(diagnostic, line=start.line, end_line=end_line, facts={**diagnostic.facts, "cell": start.cell})
        )
    return mapped
