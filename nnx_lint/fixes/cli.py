"""``nnx-lint check --fix / --unsafe-fixes / --diff``: the command-line side of fixes.

Kept apart from :mod:`nnx_lint.cli` (which only calls :func:`run_fixes` and
:func:`attach_fixes`) so that linting never imports libcst.
"""
from __future__ import annotations

import difflib
import sys
from collections import Counter
from pathlib import Path

MISSING_LIBCST = "--fix needs libcst: pip install 'nnx-lint[fix]'"


def libcst_available() -> bool:
    """Whether libcst can be imported (the ``fix`` extra is installed)."""
    try:
        import libcst  # noqa: F401
    except ImportError:
        return False
    return True


def run_fixes(paths: list[Path], settings, *, unsafe: bool, diff: bool) -> tuple[Counter, int, list[str]]:
    """Fix every discovered file (or, with ``diff``, only compute the fixes).

    Returns the applied fixes by code, the number of files changed (or that would change),
    and the unified diffs (with ``diff``).
    """
    from nnx_lint.confined_writes import WriteRefused, WriteScope, write_confined
    from nnx_lint.escaping import printable
    from nnx_lint.runner import _display_path, discover

    scope = WriteScope.of(settings.root, paths)
    fixed: Counter = Counter()
    changed = 0
    diffs: list[str] = []
    for file in discover(paths, settings):
        outcome = _fixed_text(file, settings, unsafe)
        if outcome is None:
            continue
        before, after, counts = outcome
        if after == before:
            continue
        if diff:
            diffs.append(_unified_diff(before, after, _display_path(file)))
        else:
            try:
                # Encoded as decoded, without newline translation: the file keeps its own line endings.
                write_confined(file, after.encode("utf-8"), scope)
            except (WriteRefused, OSError) as exc:
                print(f"nnx-lint: warning: {printable(str(exc))}", file=sys.stderr)
                continue
        changed += 1
        fixed.update(counts)
    return fixed, changed, diffs


def _fixed_text(file: Path, settings, unsafe: bool, data: bytes | None = None) -> tuple[str, str, Counter] | None:
    """``(before, after, fixes by code)`` for one file (or its stdin ``data``); None when
    it cannot be fixed here (unreadable, over the size limits, malformed: the lint run
    reports those)."""
    from nnx_lint import bounds
    from nnx_lint.file_config import rules_for
    from nnx_lint.fixes.apply import fix_file, fix_notebook
    from nnx_lint.fixes.flax_target import project_flax_for
    from nnx_lint.prefilter import PreFilter

    try:
        data = bounds.read_bounded(file) if data is None else data
        bounds.check_bytes(data, bounds.LIMITS.notebook_bytes if file.suffix == ".ipynb" else bounds.LIMITS.source_bytes)
    except bounds.ParseFailure:
        return None
    if not PreFilter(settings.analysis_roots()).needs_analysis(file, data):
        return None
    rules = list(rules_for(settings, file))
    roots = [str(root) for root in settings.analysis_roots()]
    flax = project_flax_for(settings)  # pins follow the project's flax
    try:
        if file.suffix == ".ipynb":
            new_data, counts = fix_notebook(str(file), data, rules, unsafe, roots, flax)
            return data.decode("utf-8"), new_data.decode("utf-8"), counts
        before = data.decode("utf-8")
        outcome = fix_file(str(file), before, rules, unsafe, roots, flax)
        return before, outcome.text, outcome.fixed
    except (UnicodeDecodeError, ValueError):
        return None


def _unified_diff(before: str, after: str, display: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=f"a/{display}", tofile=f"b/{display}"))


def fix_stdin(data: bytes, stdin_filename: Path | None, settings, *, unsafe: bool, diff: bool) -> tuple[str, Counter]:
    """Fix source read from stdin, as Ruff does: the fixed source (or, with ``diff``, the
    diff) is what goes to stdout. ``stdin_filename`` names the file for configuration,
    notebooks and cross-file knowledge."""
    file = stdin_filename if stdin_filename is not None else Path("-.py")
    outcome = _fixed_text(file, settings, unsafe, data)
    if outcome is None:
        text = data.decode("utf-8", errors="replace")
        return ("" if diff else text), Counter()
    before, after, counts = outcome
    return (_unified_diff(before, after, str(stdin_filename or "-")) if diff else after), counts


def summary(fixed: Counter, diff: bool) -> str:
    """``Fixed 3 diagnostics (NNX201: 2, NNX601: 1).`` (or ``Would fix ...`` with ``--diff``)."""
    total = sum(fixed.values())
    verb = "Would fix" if diff else "Fixed"
    if not total:
        return "No fixes available." if diff else "No fixes applied."
    by_code = ", ".join(f"{code}: {count}" for code, count in sorted(fixed.items()))
    return f"{verb} {total} diagnostic{'s' * (total != 1)} ({by_code})."


def attach_fixes(diagnostics, unsafe: bool, settings=None) -> dict[int, object]:
    """Index in ``diagnostics`` -> :class:`Fix`, for the JSON output (empty without libcst);
    pins follow the flax of the project ``settings`` name."""
    if not libcst_available():
        return {}
    from nnx_lint.fixes.flax_target import UNKNOWN, project_flax_for

    flax = UNKNOWN if settings is None else project_flax_for(settings)
    from nnx_lint import bounds
    from nnx_lint.fixes.apply import cell_edits, fix_for
    from nnx_lint.fixes.source import SourceIndex
    from nnx_lint.notebooks import NotebookError, notebook_source

    from nnx_lint.diagnostic import analysed_whole
    from nnx_lint.registry import rule_by_code

    found: dict[int, object] = {}
    by_path: dict[str, list[int]] = {}
    for position, diagnostic in enumerate(diagnostics):
        rule = rule_by_code(diagnostic.code)
        if rule is not None and rule.fixes:  # only these need the file parsed again
            by_path.setdefault(diagnostic.path, []).append(position)
    # A file that could not be analysed whole (over its budget, a crash) is not parsed again here.
    failed = {d.path for d in diagnostics if not analysed_whole([d])}
    by_path = {path: positions for path, positions in by_path.items() if path not in failed}
    for path, positions in by_path.items():
        try:
            data = bounds.read_bounded(path)
            origin = None
            if path.endswith(".ipynb"):
                text, origin = notebook_source(data)
            else:
                text = data.decode("utf-8")
        except (bounds.ParseFailure, UnicodeDecodeError, NotebookError):
            continue
        index = SourceIndex(text)  # a statement libcst cannot parse gets no fix (see SourceIndex)
        for position in positions:
            diagnostic = diagnostics[position]
            if origin is not None:
                # Notebook diagnostics are in cell coordinates; the facts (pin sites) and the
                # index are in module coordinates: map the line back before asking.
                module_line = next((i + 1 for i, o in enumerate(origin)
                                    if o.cell == diagnostic.facts.get("cell") and o.line == diagnostic.line), None)
                if module_line is None:
                    continue
                span = module_line - diagnostic.line
                from dataclasses import replace

                diagnostic = replace(diagnostic, line=module_line, end_line=diagnostic.end_line + span)
            fix = fix_for(diagnostic, index, unsafe, flax)
            if fix is not None and origin is not None:
                fix = cell_edits(fix, origin)
            if fix is not None:
                found[position] = fix
    return found


def print_missing() -> None:
    print(f"nnx-lint: error: {MISSING_LIBCST}", file=sys.stderr)
