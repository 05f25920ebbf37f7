"""``--output-format html`` and ``--history``: what ``nnx-lint check`` hands the HTML report.

The front-end joins the layers the report draws on: the JSON output's objects
(:func:`~nnx_lint.reporting.reporters.json_objects`, so the pages count what ``--output-format
json`` prints), the fixes' diffs (:mod:`nnx_lint.fixes`), the history file and the gate's report.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nnx_lint.engine.runner import RunResult


class ReportError(Exception):
    """A usage error of the report's options; says why."""


def fix_diffs(findings: list[dict], fixes: dict) -> dict[int, str]:
    """The unified diff of each finding's fix (by position), as ``--diff`` prints one fix alone."""
    from nnx_lint.base import bounds
    from nnx_lint.fixes.model import apply_edits
    from nnx_lint.fixes.tracking import unified_diff

    diffs: dict[int, str] = {}
    texts: dict[str, str | None] = {}
    for index, fix in sorted(fixes.items()):
        path = findings[index]["filename"]
        if not fix.edits or path.endswith(".ipynb"):
            continue  # a notebook's edits are positions in its cells' code, not in the file
        if path not in texts:
            try:
                texts[path] = bounds.read_bounded(Path(path)).decode("utf-8")
            except (bounds.ParseFailure, OSError, UnicodeDecodeError):
                texts[path] = None
        before = texts[path]
        if before is None:
            continue
        try:
            after = apply_edits(before, list(fix.edits))
        except (IndexError, ValueError):
            continue  # the file changed since the run
        diffs[index] = unified_diff(before, after, fromfile=f"a/{path}", tofile=f"b/{path}")
    return diffs


def record_history(args: argparse.Namespace, settings, findings: list[dict], baselined: int | None, stamp: str):
    """Append this run's line to ``--history`` and return the whole history (None without it)."""
    if args.history is None:
        return None
    from nnx_lint.base.confined_writes import WriteRefused, WriteScope
    from nnx_lint.reporting.html.history import append_history, commit_of, history_line

    line = history_line(findings, commit_of(settings.root), stamp, baselined)
    try:
        return append_history(args.history, line, WriteScope.of(settings.root, [args.history]))
    except (WriteRefused, OSError) as exc:
        raise ReportError(f"--history: {exc}") from None


def prepare(args: argparse.Namespace) -> dict | None:
    """Check the report's options before the run (a usage error costs no lint) and read the
    gate's report; its tests (None without ``--gate-report``)."""
    from nnx_lint.reporting.html.gate_page import GateReportError, load_gate_report

    if args.output_format != "html":
        if args.gate_report is not None:
            raise ReportError("--gate-report adds a page to the HTML report: use it with --output-format html")
        return None
    directory = args.output_file
    if directory is None:
        raise ReportError("--output-format html writes a directory of pages: name it with -o DIR")
    if directory.is_symlink() or (directory.exists() and not directory.is_dir()):
        raise ReportError(f"-o {directory}: not a directory (--output-format html writes a directory of pages, "
                          "never through a symlink)")
    if args.gate_report is None:
        return None
    try:
        return load_gate_report(args.gate_report)
    except GateReportError as exc:
        raise ReportError(f"--gate-report: {exc}") from None


def write_html(args: argparse.Namespace, settings, result: RunResult, findings: list[dict], history,
               stamp: str, gate: dict | None) -> int:
    """Write the report into ``-o DIR`` (time-stamped ``stamp``); the number of files written."""
    from nnx_lint.base.confined_writes import WriteRefused, WriteScope
    from nnx_lint.reporting.html.writer import ReportInput, write_report

    directory = args.output_file
    report = ReportInput(findings, result.files_checked, settings.root, stamp,
                         fix_diffs(findings, result.fixes or {}), history, gate)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        written = write_report(directory, report, WriteScope.of(settings.root, [directory]))
    except (WriteRefused, OSError) as exc:
        raise ReportError(f"-o {directory}: {exc}") from None
    if not args.quiet:
        print(f"nnx-lint: wrote the report to {directory / 'index.html'} ({len(written)} files)", file=sys.stderr)
    return len(written)
