"""The gate's report: one JSON-able document, rendered as text or markdown.

Everything the renderers show is in the document built by :func:`build_report`, so the
three formats cannot disagree. Every text in it but the renderers' own words (test ids,
failures, file and function names, notes, problems, run names and statuses, versions) comes
from the tests or, through ``gate merge``, from shard files: the text renderer passes each
through :func:`~nnx_lint.base.escaping.printable` (:func:`~nnx_lint.base.escaping.line_start`
where it begins a line), and the Markdown renderer through
:func:`~nnx_lint.base.escaping.markdown_cell`.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from nnx_lint.base.escaping import json_document, line_start, markdown_cell, printable, printable_lines
from nnx_lint.gate.attribution import Attribution, PassingFinding, attribution_to_dict
from nnx_lint.gate.classify import GateOutcome, Verdict
from nnx_lint.gate.modes import MODES
from nnx_lint.gate.results import TestResult

#: The report format's version: 2 added ``run`` (what ``gate merge`` ties the shards by).
REPORT_VERSION = 2
#: The verdicts that fail the gate unless baselined.
BREAKING_KINDS = ("tree-break", "not-isolated")
_SECTIONS = (
    ("tree_breaks", "Breaks in Tree Mode", "fails alone in Tree Mode, passes alone in graph mode"),
    ("not_isolated", "Failed only in the Tree Mode run, not isolated",
     "the re-runs alone were skipped or gave no result"),
    ("order_dependent", "Order-dependent",
     "fails only in the full Tree Mode run; passes alone (an earlier test's pollution)"),
    ("fails_in_both_modes", "Fails in both modes", "not a Tree Mode break"),
    ("graph_only", "Fails in graph mode only", "passes in Tree Mode"),
)
_KIND_SECTION = {"tree-break": "tree_breaks", "not-isolated": "not_isolated", "order-dependent": "order_dependent",
                 "both": "fails_in_both_modes", "graph-only": "graph_only"}


def _one_line(text: str, limit: int = 160) -> str:
    first = " ".join(text.strip().split("\n", 1)[0].split())
    return first if len(first) <= limit else first[: limit - 1] + "…"


def _result_dict(result: TestResult | None) -> dict[str, Any] | None:
    if result is None:
        return None
    failure = result.failure
    return {"outcome": result.outcome, "duration": round(result.duration, 3),
            "exception": None if failure is None else {"type": failure.type, "message": failure.message,
                                                       "category": failure.category}}


def _verdict_dict(verdict: Verdict, baseline: set[str], attribution: Attribution | None, root: Path) -> dict[str, Any]:
    item: dict[str, Any] = {
        "nodeid": verdict.nodeid, "verdict": verdict.kind, "note": verdict.note,
        "full_graph": _result_dict(verdict.graph), "full_tree": _result_dict(verdict.tree),
        "alone_tree": _result_dict(verdict.alone_tree), "alone_graph": _result_dict(verdict.alone_graph),
    }
    if verdict.kind in BREAKING_KINDS:
        item["in_baseline"] = verdict.nodeid in baseline
    if attribution is not None:
        item["attribution"] = attribution_to_dict(attribution, root)
    return item


def _run_dict(record: Any) -> dict[str, Any]:
    results = record.results
    return {"status": record.status, "returncode": record.returncode, "elapsed": round(record.elapsed, 1),
            "tests": len(results.tests), "failing": sum(1 for t in results.tests.values() if t.failing),
            "collect_errors": sorted(results.collect_errors), "flax_version": results.flax_version,
            "flax_config": results.flax_config, "command": record.command,
            # What the command printed last, when it produced no usable report (the text report names the cause).
            "output_tail": record.output_tail if record.status in ("no-report", "usage-error", "crashed") else ""}


def build_report(outcome: GateOutcome, attributions: dict[str, Attribution], passing: list[PassingFinding], *,
                 root: Path, baseline: set[str] | None, baseline_file: str | None, findings: int | None,
                 exit_status: int, notes: list[str], untested: str | None = None,
                 shard: tuple[int, int] | None = None, run: dict[str, Any] | None = None) -> dict[str, Any]:
    """The whole report as plain data (the JSON output). ``run`` is its run identity
    (:mod:`nnx_lint.gate.run_identity`): what ``gate merge`` matches the shards by."""
    baseline = baseline or set()
    sections: dict[str, list] = {key: [] for key, _title, _hint in _SECTIONS}
    for verdict in outcome.verdicts:
        sections[_KIND_SECTION[verdict.kind]].append(
            _verdict_dict(verdict, baseline, attributions.get(verdict.nodeid), root))
    breaking = [v for v in outcome.verdicts if v.kind in BREAKING_KINDS]
    attributed = [attributions[v.nodeid] for v in breaking if v.nodeid in attributions]
    still_breaking = {v.nodeid for v in breaking}
    return {
        "tool": "nnx-lint gate",
        "version": REPORT_VERSION,
        "project": str(root),
        "run": run,
        "modes": {mode.name: mode.environment for mode in MODES},
        # This report covers shard K of N (nnx-lint gate --shard K/N; nnx-lint gate merge joins them).
        "shard": None if shard is None else {"index": shard[0], "count": shard[1]},
        "runs": {name: _run_dict(record) for name, record in outcome.runs.items()},
        "summary": {
            "tests": outcome.tests_total,
            "tree_breaks": len(sections["tree_breaks"]),
            "not_isolated": len(sections["not_isolated"]),
            "new_breaks": sum(1 for v in breaking if v.nodeid not in baseline),
            "order_dependent": len(sections["order_dependent"]),
            "fails_in_both_modes": len(sections["fails_in_both_modes"]),
            "graph_only": len(sections["graph_only"]),
            "explained": sum(1 for a in attributed if a.explained),
            "explained_in_dependencies": sum(1 for a in attributed if a.explained and a.matches[0].dependency),
            "unproven": sum(1 for a in attributed if a.unproven),
            "unexplained": sum(1 for a in attributed if not a.matches),
            "static_findings": findings,
            "reruns": len(outcome.reruns),
            "warm_reruns": sum(1 for record in outcome.reruns if record.command[:1] == ["(warm)"]),
            "reruns_skipped": outcome.reruns_skipped,
            "interrupted": outcome.interrupted,
            "elapsed": round(outcome.elapsed, 1),
        },
        **sections,
        "findings_in_passing_tests": [
            {"code": item.diagnostic.code, "kind": item.diagnostic.kind,
             "path": os.path.relpath(os.path.abspath(item.diagnostic.path), root), "line": item.diagnostic.line,
             "message": _one_line(item.diagnostic.message), "tests": item.nodeids}
            for item in passing],
        "baseline": None if baseline_file is None else {
            "file": baseline_file, "fixed": sorted(baseline - still_breaking)},
        "problems": list(outcome.problems),
        "notes": notes,
        # Why the gate compared nothing (nnx_lint.gate.untested); the run then exits 2 and says so last.
        "untested": untested,
        "exit_status": exit_status,
    }


def _status_line(report: dict[str, Any]) -> str:
    summary = report["summary"]
    in_dependencies = summary["explained_in_dependencies"]
    explained = f"{summary['explained']} explained by static findings" + (
        f" ({in_dependencies} in dependencies)" if in_dependencies else "")
    parts = [f"{summary['tree_breaks']} break(s) in Tree Mode ({summary['new_breaks']} not in the baseline, "
             f"{explained}, " + (f"{summary['unproven']} unproven, " if summary.get("unproven") else "")
             + f"{summary['unexplained']} unexplained)",
             f"{summary['order_dependent']} order-dependent",
             f"{summary['fails_in_both_modes']} fail(s) in both modes"]
    if summary["not_isolated"]:
        parts.insert(1, f"{summary['not_isolated']} not isolated")
    return (f"{summary['tests']} tests: " + ", ".join(parts)
            + f"; {summary['reruns']} isolated re-run(s), {summary['reruns_skipped']} skipped; "
              f"{summary['elapsed']:.0f}s")


def _failure_text(item: dict[str, Any]) -> str:
    for key in ("alone_tree", "full_tree"):
        result = item.get(key)
        if result and result.get("exception"):
            exception = result["exception"]
            category = f" [{exception['category']}]" if exception.get("category") else ""
            return f"{exception['type'].rpartition('.')[2]}{category}: {exception['message'].strip()}"
    return ""


def render_text(report: dict[str, Any]) -> str:
    """The human report for a terminal (or a CI log): the tests' text escaped, wherever it sits."""
    lines: list[str] = []
    for name, run in report["runs"].items():
        lines.append(f"{line_start(name)} run: {printable(run['status'])}, {run['tests']} tests, "
                     f"{run['failing']} failing, {run['elapsed']:.0f}s "
                     f"(flax {printable(run['flax_version'] or 'not found')})")
    for key, title, hint in _SECTIONS:
        items = report[key]
        if not items:
            continue
        lines.append("")
        lines.append(f"{title} ({len(items)}): {hint}")
        for item in items:
            flag = " [baseline]" if item.get("in_baseline") else ""
            lines.append(f"  {line_start(item['nodeid'])}{flag}")
            failure = _failure_text(item)
            if failure and key != "fails_in_both_modes":
                # The whole error: flax's names the paths of a shared Variable on its later lines.
                # It is the tests' text, so it is escaped like any analysed text.
                first, *rest = printable_lines(failure).split("\n")
                lines.append(f"      {line_start(first)}")
                lines.extend(f"        {line_start(line)}" if line.strip() else "" for line in rest)
            attribution = item.get("attribution")
            if attribution:
                frame = attribution["deepest_frame"]
                if frame:
                    lines.append(f"      deepest project frame: {printable(frame['file'])}:{frame['line']} "
                                 f"in {printable(frame['function'])}")
                lines.append(f"      {line_start(attribution['summary'])}")
            if item.get("note") and key not in ("order_dependent",):
                lines.append(f"      ({printable(item['note'])})")
    if report["findings_in_passing_tests"]:
        lines.append("")
        findings = report["findings_in_passing_tests"]
        lines.append(f"Static findings inside tests that pass in both modes ({len(findings)}):")
        for item in findings:
            tests = ", ".join(printable(test) for test in item["tests"][:3])
            lines.append(f"  {line_start(item['path'])}:{item['line']}: {printable(item['code'])} "
                         f"({printable(item['kind'])}) in {tests}")
    baseline = report.get("baseline")
    if baseline and baseline["fixed"]:
        lines.append("")
        fixed = baseline["fixed"]
        lines.append(f"In the baseline but no longer breaking ({len(fixed)}): "
                     + ", ".join(printable(nodeid) for nodeid in fixed))
    for note in report["notes"]:
        lines.append(f"note: {printable(note)}")
    for problem in report["problems"]:
        lines.append(f"problem: {printable(problem)}")
    lines.append("")
    lines.append(final_line(report))
    return "\n".join(lines).strip("\n")


def final_line(report: dict[str, Any]) -> str:
    """The report's last line: the summary, or why nothing was tested (never a clean-looking summary)."""
    if report.get("untested"):
        return f"nnx-lint gate: nothing was tested: {printable(report['untested'])}"
    return _status_line(report)


def render_markdown(report: dict[str, Any]) -> str:
    """The report for ``$GITHUB_STEP_SUMMARY``; every text of the tests goes through ``markdown_cell``."""
    _md = markdown_cell
    verdict = {0: "passed", 1: "failed: new Tree Mode breaks", 2: "could not complete"}.get(report["exit_status"], "")
    lines = [f"## nnx-lint gate: {verdict}", "", _md(final_line(report)), ""]
    lines += ["| run | status | tests | failing | time |", "|---|---|---|---|---|"]
    for name, run in report["runs"].items():
        lines.append(f"| {_md(name)} | {_md(run['status'])} | {run['tests']} | {run['failing']} | "
                     f"{run['elapsed']:.0f}s |")
    for key, title, hint in _SECTIONS:
        items = report[key]
        if not items:
            continue
        lines += ["", f"### {title} ({len(items)})", "", f"_{_md(hint)}_", ""]
        if key in ("tree_breaks", "not_isolated"):
            lines += ["| test | failure | deepest project frame | static analysis |", "|---|---|---|---|"]
            for item in items:
                attribution = item.get("attribution") or {}
                frame = attribution.get("deepest_frame")
                where = f"{frame['file']}:{frame['line']}" if frame else ""
                flag = " (baseline)" if item.get("in_baseline") else ""
                lines.append(f"| {_md(item['nodeid'])}{flag} | {_md(_failure_text(item))} | {_md(where)} | "
                             f"{_md(attribution.get('summary', ''))} |")
        else:
            lines += [f"- {_md(item['nodeid'])}" for item in items]
    if report["findings_in_passing_tests"]:
        lines += ["", "### Static findings inside tests that pass in both modes", ""]
        lines += [f"- {_md(item['path'])}:{item['line']} {_md(item['code'])} ({_md(item['kind'])})"
                  for item in report["findings_in_passing_tests"]]
    for problem in report["problems"]:
        lines += ["", f"> **problem:** {_md(problem)}"]
    return "\n".join(lines)


def render(report: dict[str, Any], output_format: str) -> str:
    """The report in ``text``, ``json`` or ``markdown``."""
    if output_format == "json":
        return json_document(json.dumps(report, indent=2))
    if output_format == "markdown":
        return render_markdown(report)
    return render_text(report)
