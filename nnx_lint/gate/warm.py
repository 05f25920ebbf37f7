"""Warm re-runs: a server that imports pytest and flax once, then forks one process per re-run.

Each isolated re-run is its own process, forked from a server started in the mode's
environment (flax reads ``NNX_GRAPH_MODE`` / ``NNX_GRAPH_UPDATES`` when it is imported, so
one server per mode). The server only imports: it runs no test and builds no model, so a
forked child starts from the same state as a fresh ``python -m pytest`` that has imported
flax, minus the seconds of the import. JAX is fork-safe as long as its backend has not been
initialised, which importing does not do.

Used when the test command is ``<python> -m pytest ...``; the server is started as
``<python> -m nnx_lint.gate.warm [--preload FILE]`` from the same directory, so ``sys.path`` is
the same. ``FILE`` names the modules the first full run's pytest imported while starting,
before any conftest (its auto-loaded plugins' dependencies: seconds per re-run in an
environment with several plugins); the server imports them too, in the same order and before
flax as pytest does, except the modules pytest rewrote, nnx-lint's own and the project's
(:func:`write_preload`). Then it freezes what it imported out of the garbage collector's reach
(``gc.freeze``), so each child's collections walk only what the child allocates.

Protocol, one JSON object per line: the client sends ``{"args", "output"}`` over the Unix
socket that is the server's stdin, with two descriptors attached (``SCM_RIGHTS``): the
re-run's channel to the gate and the pipe holding its key (``nnx_lint.gate.channel``). The
server answers on stdout ``{"pid"}`` when the child has started and ``{"exit"}`` (the child's
exit status, negative for a signal) when it has ended. The child keeps neither the socket
nor the reply pipe, so a test cannot talk to the gate in the server's name.
"""
from __future__ import annotations

import gc
import importlib
import json
import os
import re
import socket
import sys
from pathlib import Path

from nnx_lint.gate.channel import CHANNEL_ENV


def _child(args: list[str], channel: list[int], output: str) -> None:
    """Run pytest in the forked child; never returns."""
    code = 3
    try:
        os.setsid()  # its own process group: the gate can kill it and whatever it starts
        descriptor = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(descriptor, 1)  # replaces the reply pipe
        os.dup2(descriptor, 2)
        os.close(descriptor)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)  # replaces the request socket
        os.close(null)
        if len(channel) == 2:
            os.environ[CHANNEL_ENV] = f"{channel[0]}:{channel[1]}"
        sys.argv = ["pytest", *args]
        import pytest

        code = int(pytest.main(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - report anything as pytest's internal error
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


_pending = [b""]


def _next_request(requests: socket.socket) -> tuple[bytes | None, list[int]]:
    """The next request line and the descriptors sent with it; None at end of input."""
    descriptors: list[int] = []
    while b"\n" not in _pending[0]:
        data, received, _flags, _address = socket.recv_fds(requests, 1 << 16, 4)
        descriptors.extend(received)
        if not data:
            return None, descriptors
        _pending[0] += data
    line, _, _pending[0] = _pending[0].partition(b"\n")
    return line, descriptors


def fork_unsafe_reason() -> str | None:
    """Why forking this process would be unsafe (threads, an initialised JAX backend), or None."""
    import threading

    if threading.active_count() > 1:
        return f"{threading.active_count()} threads are running"
    xla_bridge = sys.modules.get("jax._src.xla_bridge")
    if xla_bridge is not None and getattr(xla_bridge, "_backends", None):
        return "the JAX backend is already initialised"
    return None


#: A dotted module name: the preload list is data, and only names of this shape are imported.
_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def write_preload(workdir: Path, startup_modules: list[tuple[str, str]], project: Path) -> Path:
    """Write the list of modules the warm servers import; returns its path (``workdir``/warm-preload.json).

    ``startup_modules`` is what the first run's pytest imported before any conftest, as
    ``(name, file)``. Left out: ``__main__``; nnx-lint's own modules (the gate's plugin opens its
    channel when imported: it must be imported by each re-run's pytest); and any module whose
    file lies under ``project``: the server runs no project code.
    """
    root = os.path.realpath(project) + os.sep
    names = [name for name, file in startup_modules
             if _MODULE_NAME.match(name) and name not in ("__main__", "__mp_main__")
             and name.split(".")[0] != "nnx_lint" and not (file and os.path.realpath(file).startswith(root))]
    path = workdir / "warm-preload.json"
    path.write_text(json.dumps(names))
    return path


def _preload(path: str) -> None:
    """Import the modules listed in ``path`` (see :func:`write_preload`); one that fails is left to the children."""
    try:
        names = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return
    for name in names if isinstance(names, list) else ():
        if isinstance(name, str) and _MODULE_NAME.match(name) and name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the child imports it again and sees what pytest sees
                pass


def serve(preload: str | None = None) -> None:
    """Import once, then fork a child per request read from stdin.

    If the imports left the process unsafe to fork, the server exits at once; the gate then
    runs the re-runs as fresh processes.
    """
    import pytest  # noqa: F401 - imported for the children

    if preload:
        _preload(preload)
    try:
        import flax.nnx  # noqa: F401 - the expensive import every re-run would pay
    except Exception:  # noqa: BLE001 - without flax the children report it themselves
        pass
    reason = fork_unsafe_reason()
    if reason is not None:
        print(f"nnx-lint gate: no warm re-runs: {reason} after importing flax", file=sys.stderr)
        sys.exit(3)
    gc.freeze()  # what the server imported is never garbage in a child: its collections skip it
    requests, replies = socket.socket(fileno=0), sys.stdout
    while True:
        line, channel = _next_request(requests)
        if line is None:
            return
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(list(request["args"]), channel, str(request["output"]))
        for descriptor in channel:  # the child has them; the next child must not
            os.close(descriptor)
        replies.write(json.dumps({"pid": pid}) + "\n")
        replies.flush()
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        replies.write(json.dumps({"exit": code}) + "\n")
        replies.flush()


if __name__ == "__main__":
    serve(sys.argv[2] if sys.argv[1:2] == ["--preload"] and len(sys.argv) > 2 else None)
