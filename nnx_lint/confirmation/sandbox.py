"""The confirmation worker, isolated: a private directory, a clean environment, per-program timeouts.

:func:`run_isolated` runs generated reproduction programs in a worker subprocess
(``tree_runtime.confirm``) and returns one outcome per program. The worker

* starts with neither its working directory nor any temporary directory on ``sys.path``:
  ``python -s`` (no user site-packages), ``-P`` where available, and a bootstrap that
  removes the script directory entry and puts only the directory holding nnx-lint's own
  ``tree_runtime`` first. (``-I``/``-E`` are not used because they also drop
  ``PYTHONHASHSEED=0``; the environment below is built from scratch, so no ``PYTHON*``
  variable of the caller reaches the worker anyway.)
* runs in a fresh private directory (``mkdtemp``, mode 0700) that is its working
  directory, ``HOME`` and ``TMPDIR``, removed afterwards;
* sees only an allow-list of environment variables (:data:`PASSED_THROUGH`), plus what
  nnx-lint sets; no tokens, no cloud credentials, no CI secrets;
* answers one program at a time over a line protocol, so one process (and one ~2 s JAX
  import) serves a whole batch, while each program has its own timeout. A program that
  hangs or kills the worker costs only its own verdict: the worker's whole process group
  is killed (nothing it started outlives nnx-lint) and a fresh worker takes the rest.

A program that leaves its process group (``setsid``, a double fork) is not reached by
killing the group. On Linux, :class:`OrphanSweeper` makes this process a child subreaper
(``prctl(PR_SET_CHILD_SUBREAPER)``) while workers run: every process orphaned below it is
re-parented here instead of to init, and is killed (with whatever it started) once its
worker is gone. The gate uses the same sweeper for its test runs. Elsewhere only the
process group is killed.

Outcomes made here (timeouts, crashes) carry ``"transient": True``: they describe this
run, not the program, and are never cached.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any, Iterable

#: Environment variables the worker inherits (with ``LC_*``): what the interpreter and
#: JAX on CPU need to start. Anything else (tokens, ``AWS_*``, ``GITHUB_TOKEN``, ``XLA_FLAGS``,
#: ``JAX_ENABLE_X64``, ``FLAX_*``) stays out: besides secrets, a variable that changes what
#: the oracle computes would make cached verdicts depend on the caller's shell.
PASSED_THROUGH = ("PATH", "LANG", "LANGUAGE", "TZ", "LD_LIBRARY_PATH", "SYSTEMROOT")
STARTUP_TIMEOUT_S = 180.0
PROGRAM_TIMEOUT_S = 30.0

# Runs before anything else in the worker. The directory to trust arrives as an argument,
# never as code.
_BOOTSTRAP = (
    "import os, sys\n"
    "sys.path[:] = [sys.argv[1]] + [p for p in sys.path if p not in ('', '.', os.getcwd())]\n"
    "from tree_runtime.confirm import main\n"
    "sys.exit(main())\n"
)


#: How much of a worker's stderr is read for its last lines.
_STDERR_TAIL_BYTES = 64 * 1024


class _WorkerGone(Exception):
    """The worker closed its output (it crashed or was killed) or could not be written to."""


class _TimedOut(Exception):
    """The worker did not answer in time."""


def worker_environment(private_dir: Path) -> dict[str, str]:
    """The worker's whole environment: the allow-list, and the private directory as home and temp."""
    environment = {
        name: value for name, value in os.environ.items()
        if name in PASSED_THROUGH or name.startswith("LC_")
    }
    environment.update({
        "HOME": str(private_dir),
        "TMPDIR": str(private_dir),
        "TEMP": str(private_dir),
        "TMP": str(private_dir),
        "JAX_PLATFORMS": "cpu",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "PYTHONSAFEPATH": "1",  # -P on 3.11+; the bootstrap covers 3.10
        "PYTHONIOENCODING": "utf-8",
    })
    return environment


def _runtime_parent() -> str:
    """The directory holding nnx-lint's own ``tree_runtime`` package (the only path the worker adds)."""
    return str(Path(__file__).resolve().parent.parent.parent)


class _Worker:
    """One ``tree_runtime.confirm`` process in its own session, and a thread reading its answers."""

    def __init__(self, private_dir: Path, environment: dict[str, str], serial: int) -> None:
        command = [sys.executable, "-s"]
        if sys.version_info >= (3, 11):
            command.append("-P")
        command += ["-c", _BOOTSTRAP, _runtime_parent()]
        self.stderr_path = private_dir / ("worker%d.stderr" % serial)
        with self.stderr_path.open("wb") as stderr:  # a file, so a chatty worker never blocks on a pipe
            self.process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                cwd=private_dir, env=environment, start_new_session=os.name == "posix",
            )
        self.answers: queue.Queue[bytes | None] = queue.Queue()
        self.stderr_mark = 0
        self.reader = threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True)
        self.reader.start()

    def _read(self, stream: IO[bytes]) -> None:
        try:
            for line in stream:
                self.answers.put(line)
        except (OSError, ValueError):
            pass
        self.answers.put(None)

    def send(self, message: Any) -> None:
        try:
            self.stderr_mark = self.stderr_path.stat().st_size  # what this message makes it say starts here
        except OSError:
            self.stderr_mark = 0
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps(message).encode("utf-8") + b"\n")
            self.process.stdin.flush()
        except (OSError, ValueError) as exc:
            raise _WorkerGone from exc

    def receive(self, timeout: float) -> Any:
        try:
            line = self.answers.get(timeout=timeout)
        except queue.Empty:
            raise _TimedOut from None
        if line is None:
            raise _WorkerGone
        try:
            return json.loads(line)
        except ValueError:
            raise _WorkerGone from None

    def stderr_tail(self) -> str:
        """The last lines the worker wrote to stderr since the last message it was sent."""
        try:
            with self.stderr_path.open("rb") as stream:
                # Only the tail: a worker that wrote gigabytes must not cost their reading.
                end = stream.seek(0, os.SEEK_END)
                stream.seek(max(self.stderr_mark, end - _STDERR_TAIL_BYTES))
                lines = stream.read(_STDERR_TAIL_BYTES).decode("utf-8", "replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(lines[-3:]) or "no message"

    def kill(self) -> None:
        """Kill the worker's whole process group (it is still unreaped, so the group id is still its own)."""
        if os.name == "posix":
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        else:
            self.process.kill()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:  # stuck in the kernel: leave it, never hang nnx-lint
            pass
        for stream in (self.process.stdin, self.process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        self.reader.join(timeout=5)


_PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
_subreaper_lock = threading.Lock()
_subreaper_users = 0


def _set_child_subreaper(on: bool) -> bool:
    """``prctl(PR_SET_CHILD_SUBREAPER, on)``; False where it is not available (not Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _parents() -> dict[int, int]:
    """``pid -> parent pid`` of every process visible in /proc (empty without /proc)."""
    parents = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return parents
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, "rb") as stream:
                fields = stream.read().rpartition(b")")[2].split()
            parents[int(entry)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    return parents


class OrphanSweeper:
    """Kills the processes that a run left behind outside its process group (Linux).

    While one exists, this process is a child subreaper: a descendant whose parent dies is
    re-parented here, whatever session or group it moved to. :meth:`sweep` kills every child
    of this process that was not a child when the sweeper was made and is not in ``keep``,
    with all its descendants, and reaps it. A process that is never orphaned (its parent
    lives on outside our tree) or that another service starts (``systemd-run``, ``at``, a
    daemon) is out of reach; only a container or a cgroup bounds those.
    """

    def __init__(self) -> None:
        global _subreaper_users
        with _subreaper_lock:
            self.enabled = _subreaper_users > 0 or _set_child_subreaper(True)
            if self.enabled:
                _subreaper_users += 1
        me = os.getpid()
        self._existing = {pid for pid, parent in _parents().items() if parent == me}
        self._own: set[int] = set()
        self._closed = False

    def own(self, pid: int) -> None:
        """Never sweep ``pid``: a child this process started on purpose and still uses."""
        self._own.add(pid)

    def sweep(self, keep: Iterable[int] = (), seconds: float = 10.0) -> int:
        """Kill and reap the orphans adopted since the sweeper was made; how many were killed."""
        if not self.enabled:
            return 0
        keep = set(keep) | self._existing | self._own
        me, killed = os.getpid(), 0
        limit = time.monotonic() + seconds
        while time.monotonic() < limit:
            parents = _parents()
            orphans = [pid for pid, parent in parents.items() if parent == me and pid not in keep]
            if not orphans:
                break
            children: dict[int, list[int]] = {}
            for pid, parent in parents.items():
                children.setdefault(parent, []).append(pid)
            # Every descendant at once: a killed process cannot start another, and what its
            # killed parent leaves behind is re-parented here and found on the next pass.
            doomed, stack = set(), list(orphans)
            while stack:
                pid = stack.pop()
                if pid not in doomed:
                    doomed.add(pid)
                    stack.extend(children.get(pid, ()))
            for pid in doomed:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            for pid in orphans:
                killed += 1
                self._reap(pid, limit)
        return killed

    @staticmethod
    def _reap(pid: int, limit: float) -> None:
        while True:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                return
            if done or time.monotonic() >= limit:
                return
            time.sleep(0.01)

    def close(self, keep: Iterable[int] = ()) -> None:
        """A last sweep, then this process stops being a subreaper (when no other sweeper is open)."""
        global _subreaper_users
        if self._closed:
            return
        self._closed = True
        self.sweep(keep)
        if self.enabled:
            with _subreaper_lock:
                _subreaper_users -= 1
                if _subreaper_users == 0:
                    _set_child_subreaper(False)


def _transient_error(message: str) -> dict:
    return {"status": "error", "message": message, "transient": True}


def _start(oracle: str, private_dir: Path, environment: dict[str, str], serial: int,
           startup_timeout: float) -> tuple[_Worker | None, dict | None]:
    """A ready worker, or the error every remaining program gets."""
    try:
        worker = _Worker(private_dir, environment, serial)
    except OSError as exc:
        return None, _transient_error("the confirmation worker could not start: %s" % exc)
    try:
        worker.send({"oracle": oracle})
        ready = worker.receive(startup_timeout)
    except _TimedOut:
        worker.kill()
        return None, _transient_error("the confirmation worker did not start within %.0f s" % startup_timeout)
    except _WorkerGone:
        worker.kill()
        return None, _transient_error("the confirmation worker failed: " + worker.stderr_tail())
    if not isinstance(ready, dict) or ready.get("ready") is not True:
        message = ready.get("message") if isinstance(ready, dict) else None
        worker.kill()
        return None, _transient_error(str(message or "the confirmation worker failed to start"))
    return worker, None


def run_isolated(programs: list[str], oracle: str, timeout: float | None = None,
                 startup_timeout: float = STARTUP_TIMEOUT_S) -> list[dict]:
    """One outcome per program; ``timeout`` bounds each program (the worker's start-up has its own bound)."""
    timeout = timeout or PROGRAM_TIMEOUT_S
    outcomes: list[dict] = []
    private_dir = Path(tempfile.mkdtemp(prefix="nnx-lint-confirm-"))  # mode 0700
    worker: _Worker | None = None
    serial = 0
    sweeper = OrphanSweeper()
    try:
        environment = worker_environment(private_dir)
        for index, program in enumerate(programs):
            if worker is None:
                serial += 1
                worker, failure = _start(oracle, private_dir, environment, serial, startup_timeout)
                if worker is None:
                    outcomes.extend(dict(failure or {}) for _ in programs[index:])
                    break
            try:
                worker.send(program)
                outcome = worker.receive(timeout)
                if not isinstance(outcome, dict) or not isinstance(outcome.get("status"), str):
                    raise _WorkerGone
                if outcome.pop("retire", False):  # the program left the worker unusable: a fresh one
                    worker.kill()                    # takes the rest (see tree_runtime.confirm)
                    worker = None
            except _TimedOut:
                outcome = _transient_error("the reproduction timed out after %.0f s" % timeout)
                worker.kill()
                worker = None
            except _WorkerGone:
                worker.kill()
                outcome = _transient_error("the confirmation worker died running this reproduction (exit status %s): %s"
                                           % (worker.process.returncode, worker.stderr_tail()))
                worker = None
            if worker is None:  # what the killed worker's programs left outside its group goes too
                sweeper.sweep()
            outcomes.append(outcome)
    finally:
        if worker is not None:
            worker.kill()
        sweeper.close()
        shutil.rmtree(private_dir, ignore_errors=True)
    return outcomes
