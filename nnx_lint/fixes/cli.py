"""``nnx-lint check --fix / --unsafe-fixes / --diff``: the command-line side of fixes.

Kept apart from :mod:`nnx_lint.cli` (which only calls :func:`run_fixes` and
:func:`attach_fixes`) so that linting never imports libcst.
"""
from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

from nnx_lint.fixes.isolated import FixCrashed

MISSING_LIBCST = "--fix needs libcst: pip install 'nnx-lint[fix]'"


def libcst_available() -> bool:
    """Whether libcst can be imported (the ``fix`` extra is installed); it is not imported here:
    the fixes are computed in the fix worker, and a warm run should not pay for the import."""
    import importlib.util

    return importlib.util.find_spec("libcst") is not None


def run_fixes(paths: list[Path], settings, *, unsafe: bool, diff: bool,
              jobs: int = 1) -> tuple[Counter, int, list[str], int]:
    """Fix every discovered file (or, with ``diff``, only compute the fixes).

    Every file's fixes are computed against the files as they are before any is written, by up
    to ``jobs`` isolated fix workers at once (``-j``; 0: one per CPU), then written in file
    order: ``--fix`` writes exactly what ``--diff`` shows, whatever the number of workers.
    Returns the applied fixes by code, the number of files changed (or that would change), the
    unified diffs (with ``diff``), and the number of files whose fixes could not be computed (a
    fix worker died on them: a note says so on stderr, and they stay as they are).
    """
    from nnx_lint.base.confined_writes import WriteRefused, WriteScope, write_confined
    from nnx_lint.base.escaping import printable
    from nnx_lint.engine.runner import _display_path, discover

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
    for path, answer in _ask_workers(pending, roots, jobs):
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


def note_crash(display: str, crash: FixCrashed) -> None:
    """One stderr line: this file's fixes could not be computed (its diagnostics are still reported)."""
    from nnx_lint.base.escaping import printable

    print(f"nnx-lint: warning: {printable(display)}: its fixes could not be computed (the fix worker "
          f"{crash.how}); its diagnostics are reported without fixes", file=sys.stderr)


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
    from nnx_lint.fixes.tracking import unified_diff

    return unified_diff(before, after, fromfile=f"a/{display}", tofile=f"b/{display}")


def fix_stdin(data: bytes, stdin_filename: Path | None, settings, *, unsafe: bool, diff: bool) -> tuple[str, Counter]:
    """Fix source read from stdin, as Ruff does: the fixed source (or, with ``diff``, the
    diff) is what goes to stdout. ``stdin_filename`` names the file for configuration,
    notebooks and cross-file knowledge."""
    from nnx_lint.fixes.isolated import IsolatedFixes

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


def attach_fixes(diagnostics, unsafe: bool, settings=None, cache_dir: Path | None = None,
                 jobs: int = 1, digests: dict[str, str] | None = None) -> dict[int, object]:
    """Index in ``diagnostics`` -> :class:`Fix`, for the JSON output (empty without libcst);
    pins follow the flax of the project ``settings`` name.

    Computed in fix workers, one file per request: a file on which one dies gets no fixes
    (and a note on stderr); its diagnostics and every other file's fixes are still reported.
    ``jobs``: how many workers may run at once (``-j``; 0: one per CPU), never more than the
    files left to ask about. ``digests``: the sha256 of the files the lint run read, by
    absolute path (:attr:`RunResult.digests`), so the fix cache need not hash them again."""
    if not libcst_available():
        return {}
    from dataclasses import asdict

    from nnx_lint.base.diagnostic import analysed_whole
    from nnx_lint.fixes.flax_target import UNKNOWN, project_flax_for
    from nnx_lint.engine.file_config import selectors_for
    from nnx_lint.fixes.line_length import settings_indent_width, settings_line_length
    from nnx_lint.fixes.model import Fix

    flax = UNKNOWN if settings is None else project_flax_for(settings)
    found: dict[int, object] = {}
    by_path: dict[str, list[int]] = {}
    for position, diagnostic in enumerate(diagnostics):
        by_path.setdefault(diagnostic.path, []).append(position)
    # A file that could not be analysed whole (over its budget, a crash) is not parsed again here.
    failed = {d.path for d in diagnostics if not analysed_whole([d])}
    known = _AttachedFixes(cache_dir, digests or {})
    roots = [] if settings is None else [str(root) for root in settings.analysis_roots()]
    width = None if settings is None else settings_line_length(settings).value
    indent = None if settings is None else settings_indent_width(settings).value
    answers: dict[str, dict] = {}
    pending: list[tuple[str, dict, str | None]] = []  # (path, request, cache key), in file order
    for path, positions in by_path.items():
        if path in failed:
            continue
        request = {"op": "attach", "path": path, "unsafe": unsafe, "flax": asdict(flax),
                   "diagnostics": [diagnostics[position].to_dict() for position in positions]}
        if settings is not None:
            request["line_length"], request["indent_width"] = width, indent
            # The run's rules and roots: the worker fixes the file as --fix would, to mark
            # `[*]` only the findings that then go away.
            # Selectors, not rules: resolving them imports the rules (and astroid), which the
            # parent never does here (it runs with the linted checkout on its path).
            request["selectors"] = selectors_for(settings, Path(path))
            request["roots"] = roots
        key = known.key(path, request)
        # Asked first: a warm run then starts no worker. The parent never imports the rules or
        # libcst for this (the worker sorts out which diagnostics have fixes).
        fixes = known.get(key)
        if fixes is None:
            pending.append((path, request, key))
        else:
            answers[path] = fixes
    for path, outcome in _ask_workers(pending, roots, jobs):
        if isinstance(outcome, FixCrashed):
            note_crash(path, outcome)
            continue
        answers[path] = outcome
    for path, request, key in pending:
        if path in answers:
            known.put(key, answers[path])
    for path, fixes in answers.items():
        positions = by_path[path]
        for number, fix in fixes.items():
            found[positions[int(number)]] = Fix.from_json(fix)
    known.save()
    return found


def _ask_workers(pending: list[tuple[str, dict, str | None]], roots: list[str], jobs: int):
    """``(path, answer or FixCrashed)`` for each request, in the order of ``pending``, from up
    to ``jobs`` fix workers at once (each its own process: a crash costs only its file)."""
    import os
    from concurrent.futures import ThreadPoolExecutor
    from queue import SimpleQueue
    from nnx_lint.fixes.isolated import IsolatedFixes

    count = _worker_count(pending, jobs or os.cpu_count() or 1)
    if count <= 1:
        with IsolatedFixes(roots) as fixer:  # the roots it lints with are never imported from
            for path, request, _key in pending:
                try:
                    yield path, fixer.ask(request)
                except FixCrashed as crash:
                    yield path, crash
        return
    idle: SimpleQueue = SimpleQueue()
    fixers = [IsolatedFixes(roots) for _ in range(count)]
    for fixer in fixers:
        idle.put(fixer)

    def ask(request: dict):
        # A thread per request waits on one worker's pipe (the GIL is released there).
        fixer = idle.get()
        try:
            return fixer.ask(request)
        except FixCrashed as crash:
            return crash
        finally:
            idle.put(fixer)

    pool = ThreadPoolExecutor(count)
    try:
        futures = [(path, pool.submit(ask, request)) for path, request, _key in pending]
        results = [(path, future.result()) for path, future in futures]
    except BaseException:  # Ctrl-C: stop the workers now (as one worker's context does), wait for nothing
        pool.shutdown(wait=False, cancel_futures=True)
        for fixer in fixers:
            fixer.__exit__(KeyboardInterrupt, None, None)
        raise
    pool.shutdown()
    for fixer in fixers:
        fixer.close()
    yield from results


#: Source bytes that keep one fix worker busy about as long as starting another takes (~1 s of
#: CPU: the interpreter, libcst, the rules, astroid's builtins): below this much per worker, a
#: further worker only costs CPU. A file's fixes are computed by linting it, fixing it and
#: linting the result; at about 1.5 s per MB for each lint, 256 kB is ~0.8 s of work.
BYTES_PER_FIX_WORKER = 256 * 1024


def _worker_count(pending: list[tuple[str, dict, str | None]], jobs: int) -> int:
    """How many fix workers to start: at most ``jobs`` and one per file, and no more than the
    files' size keeps busy (:data:`BYTES_PER_FIX_WORKER`), so two small files share one worker."""
    import os

    size = 0
    for path, request, _key in pending:
        text = request.get("text")
        if isinstance(text, str):
            size += len(text)
        else:
            try:
                size += os.stat(path).st_size
            except OSError:
                pass
    return max(1, min(jobs, len(pending), -(-size // BYTES_PER_FIX_WORKER)))


def print_missing() -> None:
    print(f"nnx-lint: error: {MISSING_LIBCST}", file=sys.stderr)


class _AttachedFixes:
    """The fixes computed for a file's diagnostics in earlier runs, by the file's bytes and
    the request (diagnostics, ``--unsafe-fixes``, the project's flax): a warm run that shows
    the ``[*]`` markers starts no fix worker when nothing changed. A signed cache file, like
    the result cache (:mod:`nnx_lint.base.cache_store`); off with ``--no-cache``."""

    def __init__(self, directory: Path | None, digests: dict[str, str]) -> None:
        from nnx_lint.base.cache_store import SignedFile

        self.store = SignedFile(directory, "fixes.json", "fixes") if directory is not None else None
        loaded = self.store.load() if self.store is not None else None
        self.entries: dict = loaded if isinstance(loaded, dict) else {}
        self.used: dict = {}
        self._code = None  # nnx-lint's own fingerprint: fixes computed by other code are not reused
        self.digests = digests  # what the lint run found, by absolute path

    def key(self, path: str, request: dict) -> str | None:
        """The request's key: None (not cached) when the file cannot be read."""
        import hashlib
        import json

        from nnx_lint.base import bounds

        if self.store is None:
            return None
        # The lint run has just read (or known unchanged) the file: its digest.
        digest = self.digests.get(os.path.abspath(path))
        if digest is None:
            try:
                digest = hashlib.sha256(bounds.read_bounded(path)).hexdigest()
            except bounds.ParseFailure:
                return None
        if self._code is None:
            from nnx_lint.engine.cache import code_fingerprint

            self._code = code_fingerprint()
        asked = json.dumps({k: v for k, v in request.items() if k != "path"}, sort_keys=True).encode()
        return hashlib.sha256(f"{self._code}\0{digest}\0".encode() + asked).hexdigest()

    def get(self, key: str | None) -> dict | None:
        found = self.entries.get(key) if key is not None else None
        if isinstance(found, dict):
            self.used[key] = found
            return found
        return None

    def put(self, key: str | None, fixes: dict) -> None:
        if key is not None:
            self.used[key] = fixes

    def save(self) -> None:
        # Only this run's entries are kept: the file stays as small as the findings of one run.
        if self.store is not None and self.used != self.entries:
            self.store.save(self.used)
