"""``nnx-lint check --fix / --unsafe-fixes / --diff``: the command-line side of fixes.

Kept apart from :mod:`nnx_lint.cli` (which calls :func:`run_fixes` and :func:`fix_stdin`; the
report's ``[*]`` marks are :mod:`nnx_lint.fixes.marks`) so that linting never imports libcst.
"""
from __future__ import annotations

import itertools
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

# The fix workers' modules are imported by the functions that start workers: the command line
# asks libcst_available() on every run, warm ones included.



def missing_libcst() -> str:
    """Why ``--fix`` cannot run, and the install command that matches this installation."""
    from nnx_lint.base.install_hints import pip_install

    return f"--fix needs libcst: {pip_install('fix')}"


def libcst_available() -> bool:
    """Whether libcst can be imported (the ``fix`` extra is installed); it is not imported here:
    the fixes are computed in the fix worker, and a warm run should not pay for the import."""
    import importlib.util

    return importlib.util.find_spec("libcst") is not None


def run_fixes(paths: list[Path], settings, *, unsafe: bool, diff: bool,
              jobs: int = 1, progress: Callable[[int, int, bool], None] | None = None
              ) -> tuple[Counter, int, list[str], int]:
    """Fix every discovered file (or, with ``diff``, only compute the fixes).

    Every file's fixes are computed against the files as they are before any is written, by up
    to ``jobs`` isolated fix workers at once (``-j``; 0: one per CPU), then written in file
    order: ``--fix`` writes exactly what ``--diff`` shows, whatever the number of workers.
    Returns the applied fixes by code, the number of files changed (or that would change), the
    unified diffs (with ``diff``), and the number of files whose fixes could not be computed (a
    fix worker died on them: a note says so on stderr, and they stay as they are).
    ``progress(done, total, False)``: the files whose fixes are computed so far, as for a lint run.
    """
    from nnx_lint.base.confined_writes import WriteRefused, WriteScope, write_confined
    from nnx_lint.base.escaping import printable
    from nnx_lint.engine.runner import _display_path, discover
    from nnx_lint.fixes.isolated import FixCrashed
    from nnx_lint.fixes.workers import ask_workers, note_crash

    scope = WriteScope.of(settings.root, paths)
    fixed: Counter = Counter()
    changed = 0
    crashed = 0
    diffs: list[str] = []
    pending: list[tuple[str, dict, None]] = []
    files: dict[str, tuple[Path, str]] = {}
    for file in discover(paths, settings):
        asked = _fix_request(file, settings, unsafe)
        if asked is not None:
            before, request = asked
            files[str(file)] = (file, before)
            pending.append((str(file), request, None))
    roots = [str(root) for root in settings.analysis_roots()]
    answered = itertools.count(1)  # next() on a count is atomic under the GIL: the workers' threads call it
    if progress is not None:
        progress(0, len(pending), False)

    def on_answer() -> None:
        progress(next(answered), len(pending), False)

    for path, answer in ask_workers(pending, roots, jobs, on_answer=on_answer if progress is not None else None):
        file, before = files[path]
        if isinstance(answer, FixCrashed):
            crashed += 1
            note_crash(_display_path(file), answer)
            continue
        if answer.get("after") is None or answer["after"] == before:
            continue
        after = answer["after"]
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
        fixed.update(Counter(answer["fixed"]))
    return fixed, changed, diffs, crashed


def _fix_request(file: Path, settings, unsafe: bool, data: bytes | None = None) -> tuple[str, dict] | None:
    """``(text before, the fix worker's request)`` for one file (or its stdin ``data``); None when
    it cannot be fixed here (unreadable, over the size limits, malformed: the lint run reports
    those) or no rule can match it (the text pre-filter)."""
    from nnx_lint.base import bounds
    from nnx_lint.engine.file_config import rules_for
    from dataclasses import asdict

    from nnx_lint.fixes.flax_target import project_flax_for
    from nnx_lint.fixes.line_length import settings_indent_width, settings_line_length
    from nnx_lint.analysis.prefilter import mentions_nnx

    try:
        data = bounds.read_bounded(file) if data is None else data
        bounds.check_bytes(data, bounds.LIMITS.notebook_bytes if file.suffix == ".ipynb" else bounds.LIMITS.source_bytes)
    except bounds.ParseFailure:
        return None
    if not mentions_nnx(data, notebook=file.suffix == ".ipynb"):
        return None
    try:
        before = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return before, {
        "op": "text", "path": str(file), "text": before, "notebook": file.suffix == ".ipynb",
        "codes": [rule.code for rule in rules_for(settings, file)],
        "roots": [str(root) for root in settings.analysis_roots()], "unsafe": unsafe,
        "flax": asdict(project_flax_for(settings)),  # pins follow the project's flax
        "line_length": settings_line_length(settings).value,  # and fit its line length
        "indent_width": settings_indent_width(settings).value,  # with its indentation
    }


def _fixed_text(file: Path, settings, unsafe: bool, fixer, data: bytes | None = None) -> tuple[str, str, Counter] | None:
    """``(before, after, fixes by code)`` for one file (or its stdin ``data``), computed by
    ``fixer`` (:class:`IsolatedFixes`), which raises :class:`FixCrashed` if its worker dies on
    this file; None when it cannot be fixed (see :func:`_fix_request`)."""
    asked = _fix_request(file, settings, unsafe, data)
    if asked is None:
        return None
    before, request = asked
    answer = fixer.ask(request)
    if answer.get("after") is None:
        return None
    return before, answer["after"], Counter(answer["fixed"])


def _unified_diff(before: str, after: str, display: str) -> str:
    """The ``--diff`` of one file, escaped for a terminal or a CI log like every other output.

    Its file name and source lines are analysed text: a line holding ``##vso[...]`` or an ANSI
    escape would otherwise reach the log live. Tabs, form feeds and the ``\\r`` of a CRLF line
    are kept, so an ordinary diff is byte for byte what ``diff -u`` prints; only a line that
    carries something a terminal or a runner would obey differs (and no longer applies)."""
    from nnx_lint.base.escaping import printable
    from nnx_lint.fixes.tracking import unified_diff

    shown = printable(display)
    diff = unified_diff(before, after, fromfile=f"a/{shown}", tofile=f"b/{shown}")
    return "\n".join(_diff_line(line) for line in diff.split("\n"))


def _diff_line(line: str) -> str:
    from nnx_lint.base.escaping import printable

    body = line[:-1] if line.endswith("\r") else line
    return printable(body, keep="\t\f") + line[len(body):]


def fix_stdin(data: bytes, stdin_filename: Path | None, settings, *, unsafe: bool, diff: bool) -> tuple[str, Counter]:
    """Fix source read from stdin, as Ruff does: the fixed source (or, with ``diff``, the
    diff) is what goes to stdout. ``stdin_filename`` names the file for configuration,
    notebooks and cross-file knowledge."""
    from nnx_lint.fixes.isolated import FixCrashed, IsolatedFixes
    from nnx_lint.fixes.workers import note_crash

    file = stdin_filename if stdin_filename is not None else Path("-.py")
    with IsolatedFixes(str(root) for root in settings.analysis_roots()) as fixer:
        try:
            outcome = _fixed_text(file, settings, unsafe, fixer, data)
        except FixCrashed as crash:
            note_crash(str(stdin_filename or "-"), crash)
            outcome = None
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


def print_missing() -> None:
    print(f"nnx-lint: error: {missing_libcst()}", file=sys.stderr)
