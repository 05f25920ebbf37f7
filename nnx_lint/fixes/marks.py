"""The fixes of a check's findings: the JSON output's ``fix`` objects and the text formats' ``[*]``.

A file's fixes are computed by a fix worker (:mod:`nnx_lint.fixes.isolated`), which fixes the
file as ``--fix`` would and lints the result, to mark ``[*]`` only the findings that go away.
That costs about as much as linting the file again, plus a worker's start (the interpreter,
libcst, the rules). :class:`FixMarks` hides most of it: the run hands it each file's findings
as soon as they are known (:meth:`FixMarks.file_done`, the run's ``on_file``), and a background
thread asks the fix worker about them while the run lints the next files. When the run is over,
:meth:`FixMarks.attach` keeps each answer whose request is exactly the one the final findings
make (a baseline or ``--strict`` can change a file's list) and asks again for the rest.
"""
from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

# Type checkers take TYPE_CHECKING as true; a run never imports typing for annotations (start-up).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import threading
    from queue import SimpleQueue

    from nnx_lint.fixes.isolated import FixCrashed, IsolatedFixes

# The fix workers' modules (nnx_lint.fixes.isolated, .workers) are imported when a worker is asked:
# a warm run whose fixes are all in the fix cache starts none, and imports neither.


class _Early:
    """One file's request asked during the run, and its answer once there is one."""

    def __init__(self, request: dict, key: str | None) -> None:
        self.request = request
        self.key = key
        self.answer: dict | FixCrashed | None = None  # None: withdrawn, or not asked yet


class FixMarks:
    """The fixes of one check's findings (empty without libcst); pins follow the flax of the
    project ``settings`` name. Use as a context manager: leaving it stops the fix worker.

    ``jobs``: how many fix workers may run at once (``-j``; 0: one per CPU). During the run one
    fix worker answers in the background; what it has not started when the run is over is
    shared by up to ``jobs`` workers."""

    def __init__(self, unsafe: bool, settings=None, cache_dir: Path | None = None, jobs: int = 1) -> None:
        from nnx_lint.fixes.line_length import settings_indent_width, settings_line_length

        self.unsafe, self.settings, self.jobs = unsafe, settings, jobs
        self._flax: dict | None = None  # the project's flax, read when a file has findings
        self.roots = [] if settings is None else [str(root) for root in settings.analysis_roots()]
        self.width = None if settings is None else settings_line_length(settings).value
        self.indent = None if settings is None else settings_indent_width(settings).value
        self.known = _AttachedFixes(cache_dir, {})
        self.early: dict[str, _Early] = {}
        # Made with the thread, for the first file the fix cache does not know: a check that
        # the caches answer whole starts neither (nor imports queue).
        self._asked: SimpleQueue | None = None
        self._closing = False
        self._thread: threading.Thread | None = None
        self._fixer: IsolatedFixes | None = None

    # -- during the run ------------------------------------------------------------------

    def file_done(self, absolute_path: str, digest: str, diagnostics: list) -> None:
        """The run has this file's findings (as it reports them): ask for their fixes now, in
        the background (a file the fix cache knows is answered here, without a worker). Called
        by one thread at a time, never once :meth:`attach` has begun."""
        from nnx_lint.base.diagnostic import Diagnostic, analysed_whole

        if not diagnostics or not analysed_whole(diagnostics) or self._closing:
            return
        if digest:
            self.known.digests[absolute_path] = digest
        path = diagnostics[0].path
        if any(d.path != path for d in diagnostics) or path in self.early:
            return  # not one file's list: asked for when the run is over
        request = self._request(path, sorted(diagnostics, key=Diagnostic.sort_key))
        early = self.early[path] = _Early(request, self.known.key(path, request))
        early.answer = self.known.peek(early.key)
        if early.answer is None:
            if self._thread is None:
                import threading
                from queue import SimpleQueue

                self._asked = SimpleQueue()
                self._thread = threading.Thread(target=self._serve, name="nnx-lint fix marks", daemon=True)
                self._thread.start()
            self._asked.put(early)

    def _serve(self) -> None:
        # The one thread that talks to the background worker; it waits on the worker's pipe
        # with the GIL released, so the run's linting goes on beside it.
        while (early := self._asked.get()) is not None:
            if self._closing:
                continue  # withdrawn: attach() asks for it with the other workers
            from nnx_lint.fixes.isolated import FixCrashed, IsolatedFixes

            if self._fixer is None:
                self._fixer = IsolatedFixes(self.roots)
            try:
                early.answer = self._fixer.ask(early.request)
            except FixCrashed as crash:
                early.answer = crash
            except Exception:  # asked again when the run is over, where an error is reported
                early.answer = None

    def _stop(self, timeout: float | None = None) -> None:
        """Withdraw what the background worker has not started, and wait for the one it has."""
        self._closing = True
        if self._thread is not None:
            self._asked.put(None)
            self._thread.join(timeout)
            self._thread = None

    # -- when the run is over ------------------------------------------------------------

    def attach(self, diagnostics, digests: dict[str, str] | None = None) -> dict[int, object]:
        """Index in ``diagnostics`` (the findings as reported) -> :class:`Fix`. A file on which
        a worker dies gets no fixes (and a note on stderr); its diagnostics and every other
        file's fixes are still reported. ``digests``: the sha256 of the files the run read, by
        absolute path (:attr:`RunResult.digests`), so the fix cache need not hash them again."""
        from nnx_lint.base.diagnostic import analysed_whole
        from nnx_lint.fixes.model import Fix

        self._stop()
        self.known.digests.update(digests or {})
        by_path: dict[str, list[int]] = {}
        for position, diagnostic in enumerate(diagnostics):
            by_path.setdefault(diagnostic.path, []).append(position)
        # A file that could not be analysed whole (over its budget, a crash) is not parsed again here.
        failed = {d.path for d in diagnostics if not analysed_whole([d])}
        outcomes: dict[str, dict | FixCrashed] = {}
        keys: dict[str, str | None] = {}  # the fix cache's key of each file's request
        pending: list[tuple[str, dict, str | None]] = []  # (path, request, cache key), in file order
        for path, positions in by_path.items():
            if path in failed:
                continue
            request = self._request(path, [diagnostics[position] for position in positions])
            early = self.early.get(path)
            if early is not None and early.answer is not None and early.request == request:
                keys[path], outcome = early.key, early.answer
            else:
                keys[path] = self.known.key(path, request)
                outcome = self.known.peek(keys[path])
            if outcome is None:
                pending.append((path, request, keys[path]))
            else:
                outcomes[path] = outcome
        warm, self._fixer = self._fixer, None
        if pending:
            from nnx_lint.fixes.workers import ask_workers

            outcomes.update(ask_workers(pending, self.roots, self.jobs, warm))
        elif warm is not None:
            warm.close()
        found: dict[int, object] = {}
        for path, positions in by_path.items():  # in file order, however the fixes were asked
            outcome = outcomes.get(path)
            if outcome is not None and not isinstance(outcome, dict):  # a FixCrashed, from a worker
                from nnx_lint.fixes.workers import note_crash

                note_crash(path, outcome)
            elif outcome is not None:
                self.known.put(keys[path], outcome)
                for number, fix in outcome.items():
                    found[positions[int(number)]] = Fix.from_json(fix)
        self.known.save()
        return found

    def _request(self, path: str, diagnostics: list) -> dict:
        if self._flax is None:
            from nnx_lint.fixes.flax_target import UNKNOWN, project_flax_for

            self._flax = asdict(UNKNOWN if self.settings is None else project_flax_for(self.settings))
        request = {"op": "attach", "path": path, "unsafe": self.unsafe, "flax": self._flax,
                   "diagnostics": [diagnostic.to_dict() for diagnostic in diagnostics]}
        if self.settings is not None:
            from nnx_lint.engine.file_config import selectors_for

            request["line_length"], request["indent_width"] = self.width, self.indent
            # The run's rules and roots: the worker fixes the file as --fix would, to mark
            # `[*]` only the findings that then go away.
            # Selectors, not rules: resolving them imports the rules (and astroid), which the
            # parent of a parallel run never does here (it runs with the linted checkout on its path).
            request["selectors"] = selectors_for(self.settings, Path(path))
            request["roots"] = self.roots
        return request

    def close(self) -> None:
        """Stop the background worker (on Ctrl-C or an error: at once)."""
        self._closing = True
        fixer, self._fixer = self._fixer, None
        if fixer is not None:
            fixer.__exit__(KeyboardInterrupt, None, None)  # kills it: a wait on its pipe ends
        self._stop(timeout=5)

    def __enter__(self) -> FixMarks:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


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

    def peek(self, key: str | None) -> dict | None:
        """The fixes stored under ``key``, if any (kept by the next save only once :meth:`put`)."""
        found = self.entries.get(key) if key is not None else None
        return found if isinstance(found, dict) else None

    def put(self, key: str | None, fixes: dict) -> None:
        if key is not None:
            self.used[key] = fixes

    def save(self) -> None:
        # Only this run's entries are kept: the file stays as small as the findings of one run.
        if self.store is not None and self.used != self.entries:
            self.store.save(self.used)
