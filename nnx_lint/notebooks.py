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


class NotebookError(ValueError):
    """The file is not a readable notebook."""


@dataclass(frozen=True)
class CellLine:
    cell: int
    line: int


def _is_magic(line: str) -> bool:
    stripped = line.lstrip()
    return stripped.startswith(("%", "!")) or (stripped.endswith("?") and not stripped.startswith("#"))


def notebook_source(data: bytes) -> tuple[str, list[CellLine]]:
    """The notebook's code as one module, and for each of its lines where it came from."""
    try:
        document = json.loads(data.decode("utf-8"))
        cells = document["cells"]
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise NotebookError(f"cannot read notebook: {exc}") from None
    lines: list[str] = []
    origin: list[CellLine] = []
    code_cells = 0
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        code_cells += 1
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        cell_lines = text.splitlines() or [""]
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
