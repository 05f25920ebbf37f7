"""Writing the report: every page from one :class:`ReportInput`, into one directory.

The pages are built in memory first (so a failure leaves no half report), then each is
written through :func:`~nnx_lint.base.confined_writes.write_confined`: a regular file inside
the report's directory, never through a symlink, replaced atomically. Nothing on a page but
the time stamp depends on when or where it was written, and the files are listed in a fixed
order: the same input gives the same bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from nnx_lint.reporting.html.counts import totals
from nnx_lint.reporting.html.escape import file_page, rule_page
from nnx_lint.reporting.html.file_page import render_file_page
from nnx_lint.reporting.html.gate_page import render_gate_page
from nnx_lint.reporting.html.history import History
from nnx_lint.reporting.html.index_page import render_index
from nnx_lint.reporting.html.layout import page, static_files
from nnx_lint.reporting.html.rule_page import render_rule_page


@dataclass
class ReportInput:
    """What a report shows.

    ``findings`` are the JSON output's objects of the run, in its order (their positions name
    them); ``diffs`` the unified diff of each finding's fix, by position; ``root`` the project
    root (to join the gate's paths with the findings'); ``stamp`` the time stamp.
    """

    findings: list[dict]
    files_checked: int
    root: Path
    stamp: str
    diffs: dict[int, str] = field(default_factory=dict)
    history: History | None = None
    gate: dict | None = None


def build_pages(report: ReportInput) -> dict[str, str]:
    """Every page, by its path in the report."""
    findings = report.findings
    by_file: dict[str, list[tuple[int, dict]]] = {}
    by_rule: dict[str, list[tuple[int, dict]]] = {}
    named: set[str] = set()
    for index, finding in enumerate(findings):
        by_file.setdefault(finding["filename"], []).append((index, finding))
        by_rule.setdefault(finding["code"], []).append((index, finding))
        named.update(other["filename"] for other in finding["related"])
    pages: dict[str, str] = {}
    with_pages = set(by_file) | named
    for path in sorted(with_pages):
        pages[file_page(path)] = page(path, render_file_page(path, by_file.get(path, []), report.diffs, with_pages),
                                      1, report.stamp)
    for code, found in sorted(by_rule.items()):
        target = rule_page(code)
        if target is not None:
            pages[target] = page(code, render_rule_page(code, found), 1, report.stamp)
    gate_counts = None
    if report.gate is not None:
        body, gate_counts = render_gate_page(report.gate, findings, report.root)
        pages["gate.html"] = page("Tests that break in Tree Mode", body, 0, report.stamp)
    pages["index.html"] = page("nnx-lint: Tree Mode migration report",
                               render_index(findings, totals(findings), report.files_checked, report.history,
                                            gate_counts), 0, report.stamp)
    return pages


def write_report(directory: Path, report: ReportInput, scope) -> list[Path]:
    """Write the report into ``directory`` (created if needed) and return the files written.
    ``scope`` is the :class:`~nnx_lint.base.confined_writes.WriteScope` the directory lies in."""
    from nnx_lint.base.confined_writes import WriteRefused, write_confined

    contents = {name: data.encode("utf-8") for name, data in build_pages(report).items()}
    contents.update(static_files())
    if directory.is_symlink():
        raise WriteRefused(f"{directory}: is a symlink: not written")
    written = []
    for name in sorted(contents):
        target = directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.parent.is_symlink():
            raise WriteRefused(f"{target.parent}: is a symlink: not written")
        write_confined(target, contents[name], scope)
        written.append(target)
    return written
