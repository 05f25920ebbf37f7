"""The fix workers of one command: up to ``-j`` isolated processes (:mod:`nnx_lint.fixes.isolated`)
that compute the fixes of many files, one file per request, a crash costing only its file."""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from queue import SimpleQueue

from nnx_lint.fixes.isolated import FixCrashed, IsolatedFixes


def ask_workers(pending: list[tuple[str, dict, str | None]], roots: list[str], jobs: int,
                warm: IsolatedFixes | None = None, on_answer: Callable[[], None] | None = None):
    """``(path, answer or FixCrashed)`` for each request, in the order of ``pending``, from up
    to ``jobs`` fix workers at once (each its own process: a crash costs only its file).
    ``warm``: a worker already started (:class:`~nnx_lint.fixes.marks.FixMarks`'s), used first
    and closed at the end like the others. ``on_answer()`` is called as each answer arrives
    (from the threads that drive the workers: it must be thread-safe)."""
    count = _worker_count(pending, jobs or os.cpu_count() or 1)
    if count <= 1:
        with warm or IsolatedFixes(roots) as fixer:  # the roots it lints with are never imported from
            for path, request, _key in pending:
                try:
                    answer = fixer.ask(request)
                except FixCrashed as crash:
                    answer = crash
                if on_answer is not None:
                    on_answer()
                yield path, answer
        return
    idle: SimpleQueue = SimpleQueue()
    fixers = [warm] if warm is not None else []
    fixers += [IsolatedFixes(roots) for _ in range(count - len(fixers))]
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
            if on_answer is not None:
                on_answer()

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


def note_crash(display: str, crash: FixCrashed) -> None:
    """One stderr line: this file's fixes could not be computed (its diagnostics are still reported)."""
    from nnx_lint.base.escaping import printable

    print(f"nnx-lint: warning: {printable(display)}: its fixes could not be computed (the fix worker "
          f"{crash.how}); its diagnostics are reported without fixes", file=sys.stderr)
