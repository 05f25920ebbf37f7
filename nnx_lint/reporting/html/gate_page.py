"""The gate page: the tests that break in Tree Mode (from ``nnx-lint gate --output-format
json``), explained by a static finding or not, each linked to the findings that explain it.

The gate's report comes from another run (a CI job's artifact), so :func:`load_gate_report`
reads it as untrusted data: a bounded size, the fields the page shows checked for their
types, the lists cut at :data:`MAX_TESTS`. What the page counts (broken, explained,
unexplained) is counted from the tests it lists, never copied from the report's summary.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from nnx_lint.reporting.html.escape import file_page, finding_anchor, text

#: The largest gate report read, and the most tests listed per section.
MAX_BYTES = 32 * 1024 * 1024
MAX_TESTS = 10_000

#: The sections of tests that break in Tree Mode, with their headings.
SECTIONS = (("tree_breaks", "Breaks in Tree Mode"), ("not_isolated", "Failed only in the Tree Mode run, not isolated"))


class GateReportError(ValueError):
    """The file is not a gate JSON report; says why."""


def _str(value, limit: int = 20_000) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _int(value) -> int | None:
    return value if type(value) is int and value >= 0 else None


def _test(item) -> dict | None:
    """One test of a section with the fields the page shows, or None if it is malformed."""
    if not isinstance(item, dict) or not isinstance(item.get("nodeid"), str):
        return None
    failure = ""
    for key in ("alone_tree", "full_tree"):
        result = item.get(key)
        exception = result.get("exception") if isinstance(result, dict) else None
        if isinstance(exception, dict) and isinstance(exception.get("type"), str):
            failure = f"{_str(exception['type']).rpartition('.')[2]}: {_str(exception.get('message')).strip()}"
            break
    attribution = item.get("attribution") if isinstance(item.get("attribution"), dict) else {}
    matches = []
    for match in attribution.get("matches") or []:
        if isinstance(match, dict) and isinstance(match.get("code"), str) and isinstance(match.get("path"), str) \
                and _int(match.get("line")) is not None:
            matches.append({"code": _str(match["code"], 16), "path": _str(match["path"], 4096), "line": match["line"],
                            "how": _str(match.get("how"), 32)})
    return {"nodeid": _str(item["nodeid"], 4096), "failure": failure, "in_baseline": item.get("in_baseline") is True,
            "explained": attribution.get("explained") is True,
            "summary": _str(attribution.get("summary")), "matches": matches[:100]}


def load_gate_report(path: Path) -> dict:
    """The tests of each section of :data:`SECTIONS`, read and checked from ``path``."""
    try:
        if path.stat().st_size > MAX_BYTES:
            raise GateReportError(f"{path}: larger than {MAX_BYTES} bytes")
        report = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        raise GateReportError(f"{path}: not a gate JSON report: {exc}") from None
    if not isinstance(report, dict) or report.get("tool") != "nnx-lint gate":
        raise GateReportError(f"{path}: not a gate JSON report (nnx-lint gate --output-format json)")
    checked = {}
    for key, _title in SECTIONS:
        items = report.get(key)
        if not isinstance(items, list):
            raise GateReportError(f"{path}: `{key}` is not a list")
        checked[key] = [test for test in map(_test, items[:MAX_TESTS]) if test is not None]
    return checked


def _key(path: str, root: Path) -> str:
    """A path as both reports can name it: relative to the project root, normalised."""
    return os.path.normpath(os.path.relpath(os.path.abspath(path), os.path.abspath(root)))


def finding_index(findings: list[dict], root: Path) -> dict[tuple[str, str, int], int]:
    """This run's findings by (code, path relative to ``root``, line), as the gate names them."""
    index: dict[tuple[str, str, int], int] = {}
    for position, finding in enumerate(findings):
        index.setdefault((finding["code"], _key(finding["filename"], root), finding["location"]["row"]), position)
    return index


def explained_by(test: dict, index: dict, root: Path) -> list[tuple[dict, int | None]]:
    """The test's matching findings, each with its position in this run's findings (None: not in it)."""
    return [(match, index.get((match["code"], _key(os.path.join(root, match["path"]), root), match["line"])))
            for match in test["matches"]]


def render_gate_page(gate: dict, findings: list[dict], root: Path) -> tuple[str, dict[str, int]]:
    """The page's body, and its counts: ``broken``, ``explained`` (the gate's attribution explains
    the failure by a finding), ``matched`` (findings match it without explaining it) and
    ``unexplained`` (no finding matches)."""
    counts = {"broken": 0, "explained": 0, "matched": 0, "unexplained": 0}
    index = finding_index(findings, root)
    body = ["<h1>Tests that break in Tree Mode</h1>"]
    for key, title in SECTIONS:
        tests = gate[key]
        counts["broken"] += len(tests)
        body.append(f'<h2 id="{key}">{text(title)} ({len(tests)})</h2>')
        if not tests:
            body.append('<p class="note">None.</p>')
            continue
        rows = []
        for test in tests:
            found = explained_by(test, index, root)
            verdict = "explained" if found and test["explained"] else "matched" if found else "unexplained"
            counts[verdict] += 1
            links = []
            for match, position in found:
                label = text(f"{match['code']} {match['path']}:{match['line']}")
                links.append(f'<a href="{file_page(findings[position]["filename"])}#{finding_anchor(position)}">'
                             f"{label}</a>" if position is not None else f"{label} (not in this run)")
            baseline = ' <span class="badge">baseline</span>' if test["in_baseline"] else ""
            rows.append(f'<tr class="{verdict}"><td>{text(test["nodeid"])}{baseline}</td>'
                        f'<td>{text(test["failure"].splitlines()[0] if test["failure"] else "")}</td>'
                        f'<td data-value="{verdict}">{verdict}</td><td>{"<br>".join(links)}'
                        f'<div class="note">{text(test["summary"])}</div></td></tr>')
        body.append('<table class="gate"><thead><tr><th>test</th><th>failure</th><th>static analysis</th>'
                    "<th>findings</th></tr></thead><tbody>" + "\n".join(rows) + "</tbody></table>")
    summary = (f'<p class="gate-counts"><span data-gate="broken">{counts["broken"]}</span> broken, '
               f'<span data-gate="explained">{counts["explained"]}</span> explained by a finding, '
               f'<span data-gate="matched">{counts["matched"]}</span> near a finding, '
               f'<span data-gate="unexplained">{counts["unexplained"]}</span> unexplained.</p>')
    body.insert(1, summary)
    return "\n".join(body), counts
