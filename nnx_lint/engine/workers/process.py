"""Starting a clean worker interpreter and talking to it (the parent's side).

A worker is ``python -I -c BOOTSTRAP ROLE ENTRY...``:

* ``-I`` (isolated mode, Python 3.4+): neither the script's nor the working directory is
  put on ``sys.path``, no ``PYTHON*`` variable is read, no user site directory is added;
* it starts in a private empty directory (mode 0700), with an allow-listed environment;
* the bootstrap's first statement sets ``sys.path`` to the entries given on its command
  line (data, never code): the parent's ``sys.path`` without ``''``, ``.``, and any entry
  inside the working directory or the analysed roots that is not part of the Python
  installation (:func:`trusted_path`);
* before it answers, it imports the whole analysis stack and checks where every imported
  module came from (:mod:`nnx_lint.engine.workers.serve`); the parent refuses a worker that
  reports a module from the analysed tree (:class:`WorkerUntrusted`).

Messages are JSON lines (never pickle: nothing a worker sends can run code in the parent).
A worker that exits or is killed while it holds a request raises :class:`WorkerDied`.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: Environment variables a worker inherits (with ``LC_*``): what the interpreter needs. The
#: analysis reads no environment variable, and nothing else (tokens, ``PYTHONPATH``) is passed.
PASSED_THROUGH = ("PATH", "LANG", "LANGUAGE", "TZ", "LD_LIBRARY_PATH", "SYSTEMROOT", "TMPDIR", "TEMP", "TMP")

#: nnx-lint's own top-level packages: the only modules a worker may import from nnx-lint's
#: directory when that directory is inside the analysed tree (nnx-lint linting its checkout).
OWN_PACKAGES = ("nnx_lint", "checkers", "tree_runtime")

# The worker's first statements: the path arrives as arguments, never as code, and is set
# before anything but the interpreter's own start-up modules is imported.
BOOTSTRAP = (
    "import sys\n"
    "sys.path[:] = sys.argv[2:]\n"
    "from nnx_lint.engine.workers.serve import main\n"
    "main(sys.argv[1])\n"
)


class WorkerDied(Exception):
    """The worker exited or was killed while it held a request; ``how`` says how it ended."""

    def __init__(self, how: str) -> None:
        super().__init__(how)
        self.how = how


class WorkerStartFailed(RuntimeError):
    """A worker ended before it was ready: nothing of the analysed tree is involved yet, so the run fails."""


class WorkerUntrusted(RuntimeError):
    """A worker imported a module from outside nnx-lint's installation: its results are not used."""


def own_dir() -> str:
    """The directory holding the ``nnx_lint`` package (site-packages, or a checkout)."""
    return os.path.realpath(Path(__file__).resolve().parent.parent.parent.parent)


def installation_prefixes() -> list[str]:
    """Where the running Python and its environment are installed (stdlib, site-packages)."""
    return list(dict.fromkeys(os.path.realpath(p) for p in (sys.prefix, sys.exec_prefix, sys.base_prefix,
                                                             sys.base_exec_prefix)))


def inside(path: str, directories: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``directories`` or below one of them (real paths)."""
    return any(path == d or path.startswith(d.rstrip(os.sep) + os.sep) for d in directories)


def untrusted_dirs(roots: Iterable[str]) -> list[str]:
    """The working directory and the analysed roots, as real paths: what a worker never imports from."""
    return list(dict.fromkeys(os.path.realpath(p) for p in [os.getcwd(), *roots]))


def trusted_path(untrusted: list[str]) -> list[str]:
    """The worker's ``sys.path``: the parent's, without ``''``/``.`` and without any entry
    inside ``untrusted`` that is not part of the Python installation (a ``.venv`` inside the
    repository is; a ``PYTHONPATH=.`` or an editable install of the analysed project is not).
    nnx-lint's own directory is added at the end when it is not on the path (an editable
    install, or a checkout of nnx-lint linting itself): after the standard library and
    site-packages, so it cannot shadow them."""
    prefixes = installation_prefixes()
    kept: list[str] = []
    for entry in sys.path:
        if not isinstance(entry, str) or entry in ("", "."):
            continue
        absolute = os.path.abspath(entry)
        if inside(os.path.realpath(absolute), untrusted) and not inside(os.path.realpath(absolute), prefixes):
            continue
        if absolute not in kept:
            kept.append(absolute)
    own = own_dir()
    if own not in {os.path.realpath(entry) for entry in kept}:
        kept.append(own)
    return kept


def worker_environment() -> dict[str, str]:
    """The allow-listed part of the environment."""
    return {name: value for name, value in os.environ.items() if name in PASSED_THROUGH or name.startswith("LC_")}


def worker_command(role: str, path: list[str]) -> list[str]:
    """``python -I [-X utf8] [-B] -c BOOTSTRAP role path...``."""
    command = [sys.executable, "-I"]
    if sys.flags.utf8_mode:  # -I ignores PYTHONUTF8: keep the parent's text encoding
        command += ["-X", "utf8"]
    if sys.flags.dont_write_bytecode:
        command.append("-B")
    return [*command, "-c", BOOTSTRAP, role, *path]


def describe_exit(returncode: int | None) -> str:
    """``was killed by signal SIGKILL`` / ``exited with status 1``."""
    if returncode is None:
        return "stopped answering"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = str(-returncode)
        return f"was killed by signal {name}"
    return f"exited with status {returncode}"


class WorkerProcess:
    """One clean worker interpreter serving ``role`` (see :data:`nnx_lint.engine.workers.serve.ROLES`).

    The constructor waits until the worker has imported what it needs and checked where it
    all came from; :meth:`request` sends one message and returns the worker's answer.
    """

    def __init__(self, role: str, roots: Iterable[str]) -> None:
        untrusted = untrusted_dirs(roots)
        private_dir = tempfile.mkdtemp(prefix="nnx-lint-worker-")  # mode 0700, empty
        try:
            self.process = subprocess.Popen(
                worker_command(role, trusted_path(untrusted)), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                cwd=private_dir, env=worker_environment(),
            )
            # The worker moves to the run's directory once its path is fixed and its modules
            # checked (diagnostics show paths relative to it), so its start-up one can go.
            ready = self.request({"cwd": os.getcwd(), "untrusted": untrusted, "own_dir": own_dir(),
                                  "own_packages": list(OWN_PACKAGES), "prefixes": installation_prefixes()})
        except WorkerDied as died:
            self.close()
            raise WorkerStartFailed(f"a worker process could not start (it {died.how})") from None
        except BaseException:
            self.close()
            raise
        finally:
            shutil.rmtree(private_dir, ignore_errors=True)
        if not isinstance(ready, dict) or ready.get("ready") is not True:
            self.close()
            raise WorkerStartFailed("a worker process could not start")

    def request(self, message: Any, timeout: float | None = None) -> Any:
        """Send ``message``, return the answer; :class:`WorkerDied` if the worker ends first.

        ``timeout``: seconds the answer may take; past them the worker is killed (a deadline
        that holds whatever the worker is stuck in, native code included) and
        :class:`WorkerDied` says so."""
        process = getattr(self, "process", None)
        if process is None or process.stdin is None or process.stdout is None:
            raise WorkerDied("did not start")
        expired = threading.Event()
        timer = None
        if timeout is not None:
            timer = threading.Timer(timeout, self._expire, (expired,))
            timer.daemon = True
            timer.start()
        try:
            process.stdin.write(json.dumps(message).encode("utf-8") + b"\n")
            process.stdin.flush()
            line = process.stdout.readline()
        except (OSError, ValueError):
            line = b""
        finally:
            if timer is not None:
                timer.cancel()
        if not line.endswith(b"\n"):
            self._reap()
            if expired.is_set():
                raise WorkerDied(f"took longer than {timeout:g} s and was stopped")
            raise WorkerDied(describe_exit(self.process.returncode))
        try:
            answer = json.loads(line)
        except ValueError:  # only a broken worker writes this: never trust it again
            self.kill()
            raise WorkerDied("sent a malformed answer") from None
        untrusted = answer.get("untrusted") if isinstance(answer, dict) else None
        if untrusted:
            self.close()
            raise WorkerUntrusted("a worker process imported modules from outside nnx-lint's installation, "
                                  "so its results are not used: " + ", ".join(map(str, untrusted[:5])))
        return answer.get("answer") if isinstance(answer, dict) and "answer" in answer else answer

    def _expire(self, expired: threading.Event) -> None:
        expired.set()
        if self.process.poll() is None:
            self.process.kill()

    def _reap(self) -> int | None:
        try:
            return self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # closed its output but still running: end it
            self.process.kill()
            return self.process.wait()

    def kill(self) -> None:
        """End the worker now (Ctrl-C, or the run failed)."""
        process = getattr(self, "process", None)
        if process is not None and process.poll() is None:
            process.kill()
        self.close()

    def close(self) -> None:
        """End the worker (closing its input ends its loop; a stuck worker is killed)."""
        process = getattr(self, "process", None)
        if process is None:
            return
        for stream in (process.stdin, process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
