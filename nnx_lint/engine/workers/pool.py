"""Parallel analysis in clean workers, where a dead worker costs only the file it held.

Each of ``jobs`` threads drives one :class:`~nnx_lint.engine.workers.process.WorkerProcess` and
hands it one file at a time from a shared queue, so the slowest files never wait behind a
fixed batch and the parent always knows which file a worker held. A worker that dies (the
out-of-memory killer, a native crash) is replaced, and the file it held is retried at the
end, alone in a fresh worker of its own: a worker bloated by the files before it gets a
clean start. If that worker dies too, the file gets an NNX004 and every other file still
has its results. A worker that imported something from the analysed tree
(:class:`~nnx_lint.engine.workers.process.WorkerUntrusted`) or could not start fails the run.
"""
from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from nnx_lint.engine.workers.process import WorkerDied, WorkerProcess, WorkerStartFailed

#: How many times a worker is started before its failing start-up fails the run.
START_ATTEMPTS = 3


def run_in_workers(jobs: list[Any], workers: int, role: str, roots: list[str],
                   when_killed: Callable[[Any, str], None], when_killed_twice: Callable[[Any, str], Any],
                   on_answer: Callable[[int, Any], None] | None = None) -> list[Any]:
    """Each job's answer from ``role`` workers, in order. ``when_killed(job, how)`` is told
    of each job whose worker died on it (before its retry); ``when_killed_twice(job, how)``
    stands in for a job whose worker died on it again in the retry. ``on_answer(index,
    answer)`` is told each answer as it arrives, from the threads that drive the workers, one
    call at a time (it need not be thread-safe, but must be quick: a worker waits meanwhile)."""
    answers: list[Any] = [None] * len(jobs)
    state = _Shared(deque(range(len(jobs))))
    reporting = threading.Lock()

    def answered(index: int, answer: Any) -> None:
        answers[index] = answer
        if on_answer is not None:
            with reporting:
                on_answer(index, answer)

    def first_pass(worker: WorkerProcess | None) -> WorkerProcess | None:
        while True:
            index = state.take()
            if index is None:
                return worker
            if worker is None:
                worker = state.start(role, roots)
            try:
                answer = worker.request(jobs[index])
            except WorkerDied as died:
                state.forget(worker)
                worker = None
                if state.add_suspect(index):
                    when_killed(jobs[index], died.how)
                continue
            answered(index, answer)

    def retry_pass(_worker: WorkerProcess | None) -> None:
        while True:
            index = state.take()
            if index is None:
                return
            worker = state.start(role, roots)  # alone, in a fresh process
            try:
                answer = worker.request(jobs[index])
            except WorkerDied as died:
                answer = when_killed_twice(jobs[index], died.how)
            finally:
                state.forget(worker)
            answered(index, answer)

    try:
        kept = _run_threads(min(workers, len(jobs)), first_pass, state)
        for worker in kept:
            state.forget(worker)
        if state.suspects:
            state.queue.extend(sorted(state.suspects))
            _run_threads(min(workers, len(state.suspects)), retry_pass, state)
    finally:
        state.end_all()
    return answers


class _Shared:
    """The queue of job indices and the live workers, shared by the threads."""

    def __init__(self, queue: deque) -> None:
        self.queue = queue
        self.lock = threading.Lock()
        self.suspects: list[int] = []
        self.live: set[WorkerProcess] = set()
        self.failure: BaseException | None = None
        self.stopped = False

    def take(self) -> int | None:
        with self.lock:
            if self.stopped or self.failure is not None or not self.queue:
                return None
            return self.queue.popleft()

    def add_suspect(self, index: int) -> bool:
        """Remember a job whose worker died on it; False once the run is stopping (the
        worker was ended by the run itself, not by its job)."""
        with self.lock:
            if self.stopped or self.failure is not None:
                return False
            self.suspects.append(index)
            return True

    def start(self, role: str, roots: list[str]) -> WorkerProcess:
        for attempt in range(START_ATTEMPTS):
            try:
                worker = WorkerProcess(role, roots)
                break
            except WorkerStartFailed:
                # Killed while it started (the out-of-memory killer does not wait for a
                # worker to be ready): a fresh one, a few times; a worker that can never
                # start fails the run.
                if attempt == START_ATTEMPTS - 1 or self.stopped:
                    raise
        with self.lock:
            if self.stopped:  # the run ended while this worker started
                worker.kill()
                raise WorkerDied("the run was stopped")
            self.live.add(worker)
        return worker

    def forget(self, worker: WorkerProcess) -> None:
        with self.lock:
            self.live.discard(worker)
        worker.close()

    def end_all(self) -> None:
        """Kill what is left (after a failure or Ctrl-C; normally nothing)."""
        with self.lock:
            self.stopped = True
            live, self.live = list(self.live), set()
        for worker in live:
            worker.kill()


def _run_threads(count: int, body: Callable, state: _Shared) -> list[WorkerProcess]:
    """Run ``body`` on ``count`` threads; the workers they end with; the first failure re-raised."""
    kept: list[WorkerProcess] = []

    def run() -> None:
        try:
            worker = body(None)
            if worker is not None:
                kept.append(worker)
        except BaseException as exc:  # stop the others, and re-raise in the caller
            with state.lock:
                if state.failure is None:
                    state.failure = exc

    threads = [threading.Thread(target=run, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        while thread.is_alive():
            thread.join(0.2)  # short waits, so Ctrl-C reaches the main thread
    if state.failure is not None:
        raise state.failure
    return kept
