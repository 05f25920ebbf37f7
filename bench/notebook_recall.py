"""Recall of nnx-lint on Jupyter notebooks, measured by running them in graph mode and in Tree Mode.

    python bench/notebook_recall.py NOTEBOOK_OR_DIR ... [--json FILE] [--timeout S] [--keep-runs DIR]
                                    [--reuse-runs DIR]

For each notebook (``.ipynb``; directories are searched recursively) the script:

1. runs its code cells in order, in one fresh Python process per mode (graph mode:
   ``NNX_GRAPH_MODE=true NNX_GRAPH_UPDATES=true``; Tree Mode: both ``false``), with IPython magics and
   shell escapes commented out exactly as nnx-lint reads them (:func:`nnx_lint.base.notebooks.notebook_source`),
   recording for each cell whether it raised (type and first message line) and what it printed;
2. compares the two runs cell by cell. A cell *breaks* when it ran in graph mode and raised in Tree
   Mode; it *changes* when it ran in both modes and printed something different (after replacing memory
   addresses; the same lines in another order, a repr listing attributes in another order, is no change). A cell whose Tree Mode error is a ``NameError`` follows an earlier break (a name the failed
   cell did not define) and is counted as a cascade, not as a break;
3. lints the notebook (in-process, default rules, no cache) and calls a break or change *flagged* when a
   diagnostic lies in that cell, and *flagged earlier* when one lies in an earlier cell of the notebook
   (the cause is often where a class or step function is defined).

This EXECUTES the notebooks' code (as the gate executes tests). It is measurement tooling, not a test.
Cells that need data, downloads or packages that are missing fail in both modes and count as neither.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nnx_lint.base.notebooks import notebook_source  # noqa: E402

MODES = {
    "graph": {"NNX_GRAPH_MODE": "true", "NNX_GRAPH_UPDATES": "true"},
    "tree": {"NNX_GRAPH_MODE": "false", "NNX_GRAPH_UPDATES": "false"},
}

#: The child process: runs the cells given as JSON on stdin, writes one JSON line per cell to
#: the file named in argv[1] (flushed, so a timeout keeps the cells that finished).
RUNNER = r"""
import contextlib, io, json, sys, traceback
import matplotlib
matplotlib.use("Agg")
cells = json.load(sys.stdin)
namespace = {"__name__": "__main__"}
with open(sys.argv[1], "w") as report:
    for cell, code in cells:
        out = io.StringIO()
        record = {"cell": cell}
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                exec(compile(code, f"<cell {cell}>", "exec"), namespace)
            record["status"] = "ok"
        except BaseException as exc:
            record["status"] = "raises"
            record["error"] = type(exc).__name__
            record["message"] = (str(exc).strip().splitlines() or [""])[0][:200]
        record["stdout"] = out.getvalue()[-4000:]
        report.write(json.dumps(record) + "\n")
        report.flush()
"""


@dataclass
class CellRun:
    """One cell's outcome in one mode."""

    cell: int
    status: str
    error: str = ""
    message: str = ""
    stdout: str = ""


def code_cells(path: Path) -> list[tuple[int, str]]:
    """``(cell number, code)`` per code cell, magics commented out as nnx-lint reads them."""
    text, origin = notebook_source(path.read_bytes())
    cells: dict[int, list[str]] = {}
    for line, where in zip(text.splitlines(), origin):
        cells.setdefault(where.cell, []).append(line)
    return [(cell, "\n".join(lines) + "\n") for cell, lines in cells.items()]


def run_notebook(path: Path, mode: str, timeout: float) -> tuple[list[CellRun], bool]:
    """Run ``path``'s code cells in one process; ``(runs, timed out)``."""
    with tempfile.TemporaryDirectory() as work:
        report = Path(work) / "cells.jsonl"
        env = {**os.environ, **MODES[mode], "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0"}
        timed_out = False
        try:
            subprocess.run([sys.executable, "-c", RUNNER, str(report)], input=json.dumps(code_cells(path)),
                           text=True, env=env, cwd=path.parent, timeout=timeout,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            timed_out = True
        runs = [CellRun(**json.loads(line)) for line in report.read_text().splitlines()] if report.exists() else []
    return runs, timed_out


_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


def _normalised(stdout: str) -> str:
    return _ADDRESS.sub("0x…", stdout)


def _line_multiset(stdout: str) -> list[str]:
    """The printed lines in sorted order, trailing commas dropped: a repr that lists the same
    attributes in another order (Tree Mode rebuilds some objects attribute by attribute) prints
    the same multiset of lines, only with the comma on another last line."""
    return sorted(line.rstrip().rstrip(",") for line in _normalised(stdout).splitlines())


def compare(graph: list[CellRun], tree: list[CellRun]) -> list[dict[str, Any]]:
    """Cells that break or change in Tree Mode (cascades kept, marked)."""
    tree_by_cell = {run.cell: run for run in tree}
    found = []
    broken_before = False
    for before in graph:
        after = tree_by_cell.get(before.cell)
        if after is None or before.status != "ok":
            continue
        if after.status == "raises":
            kind = "cascade" if broken_before and after.error in ("NameError",) else "break"
            found.append({"cell": before.cell, "kind": kind, "error": after.error, "message": after.message})
            broken_before = True
        elif _normalised(before.stdout) != _normalised(after.stdout) and \
                _line_multiset(before.stdout) != _line_multiset(after.stdout):
            found.append({"cell": before.cell, "kind": "change", "graph_stdout": before.stdout[-300:],
                          "tree_stdout": after.stdout[-300:]})
    return found


def lint_cells(path: Path) -> dict[int, list[str]]:
    """``cell -> [codes]`` of nnx-lint's diagnostics in the notebook (default rules, no cache)."""
    result = subprocess.run([sys.executable, "-m", "nnx_lint.cli", "check", str(path), "--no-cache",
                             "--output-format", "json"], capture_output=True, text=True, cwd=REPO)
    by_cell: dict[int, list[str]] = {}
    for diagnostic in json.loads(result.stdout or "[]"):
        cell = diagnostic.get("cell")
        if cell is not None and not diagnostic["code"].startswith("NNX0"):
            by_cell.setdefault(int(cell), []).append(diagnostic["code"])
    return by_cell


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--json", type=Path, help="write the per-notebook results here")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per notebook and mode")
    parser.add_argument("--keep-runs", type=Path, help="save the raw cell runs here (read back by --reuse-runs)")
    parser.add_argument("--reuse-runs", type=Path, help="use the cell runs saved by --keep-runs")
    options = parser.parse_args(argv)
    notebooks = sorted({p for path in options.paths
                        for p in ([path] if path.is_file() else path.rglob("*.ipynb"))
                        if "/." not in str(p) and ".ipynb_checkpoints" not in p.parts})
    results = []
    totals = {"break": 0, "change": 0, "cascade": 0}
    flagged = {"break": [0, 0], "change": [0, 0]}  # [in the cell, in the cell or earlier]
    started = time.monotonic()
    for path in notebooks:
        key = re.sub(r"[^\w.-]", "_", str(path))
        saved = options.reuse_runs / f"{key}.json" if options.reuse_runs else None
        if saved is not None and saved.exists():
            runs = json.loads(saved.read_text())
        else:
            runs = {}
            for mode in MODES:
                cells, timed_out = run_notebook(path, mode, options.timeout)
                runs[mode] = {"cells": [vars(c) for c in cells], "timed_out": timed_out}
            if options.keep_runs:
                options.keep_runs.mkdir(parents=True, exist_ok=True)
                (options.keep_runs / f"{key}.json").write_text(json.dumps(runs))
        graph = [CellRun(**c) for c in runs["graph"]["cells"]]
        tree = [CellRun(**c) for c in runs["tree"]["cells"]]
        differences = compare(graph, tree)
        diagnostics = lint_cells(path)
        for difference in differences:
            cell = difference["cell"]
            difference["flagged"] = diagnostics.get(cell, [])
            difference["flagged_earlier"] = sorted({code for c, codes in diagnostics.items() if c < cell
                                                    for code in codes})
            totals[difference["kind"]] += 1
            if difference["kind"] in flagged:
                flagged[difference["kind"]][0] += bool(difference["flagged"])
                flagged[difference["kind"]][1] += bool(difference["flagged"] or difference["flagged_earlier"])
        graph_ok = sum(c.status == "ok" for c in graph)
        results.append({"notebook": str(path), "cells_run": len(graph), "graph_ok": graph_ok,
                        "timed_out": {m: runs[m]["timed_out"] for m in MODES},
                        "differences": differences, "diagnostic_cells": diagnostics})
        marks = ", ".join(f"cell {d['cell']} {d['kind']}{' [' + ' '.join(d['flagged']) + ']' if d['flagged'] else ''}"
                          for d in differences) or "no difference"
        print(f"{path}: {graph_ok}/{len(graph)} cells ran in graph mode; {marks}", flush=True)
    print()
    for kind in ("break", "change"):
        n, (same, earlier) = totals[kind], flagged[kind]
        print(f"{kind:7s} cells: {n:3d}   flagged in the cell: {same:3d}   in the cell or earlier: {earlier:3d}")
    print(f"cascade cells (NameError after a break): {totals['cascade']}")
    print(f"time: {time.monotonic() - started:.0f} s for {len(notebooks)} notebooks")
    if options.json:
        options.json.write_text(json.dumps({"notebooks": results, "totals": totals, "flagged": flagged}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
