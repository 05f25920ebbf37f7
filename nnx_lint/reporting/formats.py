"""The output formats other tools' users expect, in their shapes:

- ``concise``: Ruff's one line per finding, ``path:line:col: CODE [*] message``, and the summary;
- ``full``: the same line, then the flagged source lines with carets under the span and
  ``= help:`` (Ruff's ``full``), with the related locations;
- ``pylint``: ``path:line: [CODE] message`` (pylint's parseable format, as Ruff writes it);
- ``junit``: JUnit XML, one ``testsuite`` per file and one failing ``testcase`` per finding
  (``org.nnx-lint.CODE``, as Ruff's ``org.ruff.CODE``);
- ``gitlab``: GitLab Code Quality JSON (``description``, ``check_name``, ``fingerprint``,
  ``severity``, ``location.path``, ``location.lines.begin``).

Analysed text (file names, messages, source lines) is escaped as in every other format:
:func:`~nnx_lint.base.escaping.printable` for terminal text, ``line_start_path`` for a file name
that begins a line, XML escaping by :mod:`xml.etree` and JSON escaping by :mod:`json`.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from nnx_lint.base.diagnostic import Diagnostic

#: The formats this module renders.
FORMATS = ("concise", "full", "junit", "gitlab", "pylint")

#: GitLab severities (info, minor, major, critical, blocker) per kind.
_GITLAB_SEVERITY = {"raises": "critical", "silent": "major", "linter": "minor", "advisory": "info"}

#: Lines of context above and below the flagged lines in ``full``.
_CONTEXT = 1


def fix_marker(index: int, fixes: dict, unsafe: bool) -> str:
    """``"[*] "`` when the finding at ``index`` has a fix ``--fix`` would apply (Ruff's marker)."""
    fix = fixes.get(index)
    return "[*] " if fix is not None and fix.fixes_finding(unsafe) else ""


def headline(d: Diagnostic, marker: str = "") -> str:
    """``path:line:col: CODE [*] message`` (``path:cell N:line:col`` in notebooks), escaped."""
    from nnx_lint.base.escaping import line_start_path, printable

    where = f"cell {d.cell}:" if d.cell is not None else ""
    return f"{line_start_path(d.path)}:{where}{d.line}:{d.column}: {d.code} {marker}{printable(d.message)}"


def render_concise(diagnostics: list[Diagnostic], fixes: dict, unsafe: bool) -> list[str]:
    """One line per finding (the summary lines are added by the caller)."""
    return [headline(d, fix_marker(i, fixes, unsafe)) for i, d in enumerate(diagnostics)]


def render_full(diagnostics: list[Diagnostic], fixes: dict, unsafe: bool, url_base: str | None) -> list[str]:
    """Each finding with its source lines, carets under the span, its help and related lines."""
    from nnx_lint.base.escaping import printable
    from nnx_lint.base.related import position
    from nnx_lint.base.links import rule_reference

    sources: dict[str, list[str] | None] = {}
    blocks = []
    for index, d in enumerate(diagnostics):
        block = [headline(d, fix_marker(index, fixes, unsafe))]
        lines = sources.setdefault(d.path, _source_lines(d.path))
        if lines is not None and d.cell is None and 1 <= d.line <= len(lines):
            block += _snippet(lines, d)
        for other in d.related:
            block.append(f"  = also at {printable(position(other))}: {printable(other.message)}")
        if d.help:
            block.append(f"  = help: {printable(d.help)}")
        block.append(f"  = rule: {printable(rule_reference(d.code, url_base))}")
        blocks.append("\n".join(block) + "\n")
    return blocks


def _source_lines(path: str) -> list[str] | None:
    """The file's lines, read with the same bounds as the lint (None if it cannot be read)."""
    from nnx_lint.base import bounds

    if path == "-" or path.endswith(".ipynb"):
        return None
    try:
        data = bounds.read_bounded(Path(path))
        return data.decode("utf-8").splitlines()
    except (bounds.ParseFailure, OSError, UnicodeDecodeError):
        return None


def _snippet(lines: list[str], d: Diagnostic) -> list[str]:
    """Ruff's gutter: numbered lines, and ``^`` under the flagged span of its first line."""
    from nnx_lint.base.escaping import printable

    first = max(1, d.line - _CONTEXT)
    last = min(len(lines), max(d.line, d.end_line) + _CONTEXT)
    width = len(str(last))
    out = [f"{'':>{width}} |"]
    for number in range(first, last + 1):
        text = lines[number - 1]
        out.append(f"{number:>{width}} | {printable(text)}".rstrip())
        if number == d.line:
            # Carets count escaped characters, so they stay under the span an escape widened.
            start = len(printable(text[: d.column - 1]))
            end_column = d.end_column if d.end_line == d.line else len(text) + 1
            length = max(1, len(printable(text[d.column - 1: max(end_column, d.column) - 1])))
            out.append(f"{'':>{width}} | {' ' * start}{'^' * length} {d.code}")
    out.append(f"{'':>{width}} |")
    return out


def render_pylint(diagnostics: list[Diagnostic]) -> str:
    """``path:line: [CODE] message``, one line each (Ruff's and flake8's pylint format)."""
    from nnx_lint.base.escaping import line_start_path, printable

    return "\n".join(f"{line_start_path(d.path)}:{d.line}: [{d.code}] {printable(d.message)}" for d in diagnostics)


def render_junit(diagnostics: list[Diagnostic]) -> str:
    """JUnit XML as Ruff writes it: a ``testsuites`` element named ``nnx-lint``, a ``testsuite``
    per file, and per finding a ``testcase`` (``name="org.nnx-lint.CODE"``, ``classname`` the
    path without its suffix, ``line``, ``column``) holding a ``failure`` whose ``message`` is the
    finding's message and whose text is ``line L, col C, message``. No finding: one passing
    ``No errors found`` case."""
    import xml.etree.ElementTree as ET

    from nnx_lint.base.escaping import printable

    root = ET.Element("testsuites", name="nnx-lint", tests=str(max(1, len(diagnostics))),
                      failures=str(len(diagnostics)), errors="0")
    if not diagnostics:
        suite = ET.SubElement(root, "testsuite", name="nnx-lint", tests="1", failures="0", errors="0",
                              package="org.nnx-lint")
        ET.SubElement(suite, "testcase", name="No errors found", classname="nnx-lint")
    by_file: dict[str, list[Diagnostic]] = {}
    for d in diagnostics:
        by_file.setdefault(d.path, []).append(d)
    for path, found in by_file.items():
        # XML 1.0 cannot hold most control characters even escaped: analysed text is made printable first.
        suite = ET.SubElement(root, "testsuite", name=printable(path), tests=str(len(found)),
                              failures=str(len(found)), errors="0", package="org.nnx-lint")
        classname = printable(str(Path(path).with_suffix("")))
        for d in found:
            case = ET.SubElement(suite, "testcase", name=f"org.nnx-lint.{d.code}", classname=classname,
                                 line=str(d.line), column=str(d.column))
            failure = ET.SubElement(case, "failure", message=printable(d.message))
            failure.text = f"line {d.line}, col {d.column}, {printable(d.message)}"
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


def render_gitlab(diagnostics: list[Diagnostic]) -> str:
    """GitLab Code Quality report: a JSON array of issues. ``description`` starts with the code
    (GitLab shows no ``check_name``, as Ruff notes); ``fingerprint`` is stable across runs
    (code, path, message and an occurrence index, no line numbers) and unique in the report."""
    from nnx_lint.base.notebooks import file_span

    issues = []
    seen: set[str] = set()
    for d in diagnostics:
        line, _, end_line, _ = file_span(d)
        salt = 0
        while True:
            digest = hashlib.sha256(json.dumps([d.code, d.path, d.message, salt]).encode("utf-8")).hexdigest()
            if digest not in seen:
                break
            salt += 1
        seen.add(digest)
        issues.append({
            "description": f"{d.code}: {d.message}",
            "check_name": d.code,
            "fingerprint": digest,
            "severity": _GITLAB_SEVERITY[d.kind],
            "location": {"path": d.path.replace("\\", "/"), "lines": {"begin": line, "end": end_line}},
        })
    return json.dumps(issues, indent=2)
