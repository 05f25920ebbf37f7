"""Warm re-runs: a server that imports pytest and flax once, then forks one process per re-run.

Each isolated re-run is its own process, forked from a server started in the mode's
environment (flax reads ``NNX_GRAPH_MODE`` / ``NNX_GRAPH_UPDATES`` when it is imported, so
one server per mode). The server only imports: it runs no test and builds no model, so a
forked child starts from the same state as a fresh ``python -m pytest`` that has imported
flax, minus the seconds of the import. JAX is fork-safe as long as its backend has not been
initialised, which importing does not do.

Used when the test command is ``<python> -m pytest ...``; the server is started as
``<python> -m nnx_lint.gate.warm`` from the same directory, so ``sys.path`` is the same.

Protocol, one JSON object per line: the client sends ``{"args", "report", "output"}``; the
server answers ``{"pid"}`` when the child has started and ``{"exit"}`` (the child's exit
status, negative for a signal) when it has ended.
"""
from __future__ import annotations

import json
import os
import sys


def _child(args: list[str], report: str, output: str) -> None:
    """Run pytest in the forked child; never returns."""
    code = 3
    try:
        os.setsid()  # its own process group: the gate can kill it and whatever it starts
        descriptor = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(descriptor, 1)
        os.dup2(descriptor, 2)
        os.environ["NNX_LINT_GATE_REPORT"] = report
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


def fork_unsafe_reason() -> str | None:
    """Why forking this process would be unsafe (threads, an initialised JAX backend), or None."""
    import threading

    if threading.active_count() > 1:
        return f"{threading.active_count()} threads are running"
    xla_bridge = sys.modules.get("jax._src.xla_bridge")
    if xla_bridge is not None and getattr(xla_bridge, "_backends", None):
        return "the JAX backend is already initialised"
    return None


def serve() -> None:
    """Import once, then fork a child per request read from stdin.

    If the imports left the process unsafe to fork, the server exits at once; the gate then
    runs the re-runs as fresh processes.
    """
    import pytest  # noqa: F401 - imported for the children

    try:
        import flax.nnx  # noqa: F401 - the expensive import every re-run would pay
    except Exception:  # noqa: BLE001 - without flax the children report it themselves
        pass
    reason = fork_unsafe_reason()
    if reason is not None:
        print(f"nnx-lint gate: no warm re-runs: {reason} after importing flax", file=sys.stderr)
        sys.exit(3)
    requests, replies = sys.stdin, sys.stdout
    for line in requests:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(list(request["args"]), str(request["report"]), str(request["output"]))
        replies.write(json.dumps({"pid": pid}) + "\n")
        replies.flush()
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        replies.write(json.dumps({"exit": code}) + "\n")
        replies.flush()


if __name__ == "__main__":
    serve()
