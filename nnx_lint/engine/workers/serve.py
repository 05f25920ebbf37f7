"""The worker's side: check where every module came from, then answer requests.

Started by :data:`nnx_lint.engine.workers.process.BOOTSTRAP` with ``sys.path`` already fixed. The
first message says which directories are untrusted (the run's working directory and the
analysed roots), where the Python installation and nnx-lint live, and the directory to work
in. The worker imports its role's analysis stack, checks every module in ``sys.modules``
(:func:`untrusted_modules`), moves to the run's directory and answers ``{"ready": true}``;
then one JSON line in, one JSON line out, until its input closes. Each answer also lists the
modules imported since the last check that came from outside the installation: the parent
then stops trusting the worker.

The check is a tripwire behind the real defence (the worker's ``sys.path`` never holds an
analysed directory): code that did run could hide itself, but nothing can reach a worker
through ``sys.path`` that this check would not also see.
"""
from __future__ import annotations

import importlib
import json
import os
import signal
import sys
from typing import Any

from nnx_lint.base.fast_exit import end_without_teardown

#: Role -> the module whose ``prepare()`` imports what the role needs and whose
#: ``answer(request)`` serves one request. Named by the parent, never by a message.
ROLES = {
    "lint": "nnx_lint.engine.runner",
    "fix": "nnx_lint.fixes.isolated",
}


def _inside(path: str, directories) -> bool:
    return any(path == d or path.startswith(d.rstrip(os.sep) + os.sep) for d in directories)


class ModuleCheck:
    """Where each imported module came from; remembers what it has checked already."""

    def __init__(self, setup: dict[str, Any]) -> None:
        self.untrusted = [str(d) for d in setup.get("untrusted", [])]
        self.prefixes = [str(d) for d in setup.get("prefixes", [])]
        self.own_dir = str(setup.get("own_dir", ""))
        self.own_packages = set(setup.get("own_packages", []))
        self.entries = [os.path.realpath(entry) for entry in sys.path]
        self.checked: set[str] = set()

    def allowed(self, name: str, file: str) -> bool:
        """Installed (under the Python prefixes), nnx-lint's own, or on the worker's path
        and outside the analysed tree."""
        real = os.path.realpath(file)
        if _inside(real, self.prefixes):
            return True
        if name.partition(".")[0] in self.own_packages and _inside(real, [self.own_dir]):
            return True
        return _inside(real, self.entries) and not _inside(real, self.untrusted)

    def untrusted_modules(self) -> list[str]:
        """``name (file)`` of each module imported since the last call that is not allowed."""
        found = []
        for name, module in list(sys.modules.items()):
            if name in self.checked:
                continue
            self.checked.add(name)
            spec = getattr(module, "__spec__", None)
            files = [getattr(module, "__file__", None)]
            files += list(getattr(spec, "submodule_search_locations", None) or [])  # namespace packages
            for file in files:
                if isinstance(file, str) and file and not self.allowed(name, file):
                    found.append(f"{name} ({file})")
                    break
        return found


def main(role: str) -> None:
    """Serve ``role`` over stdin/stdout until stdin closes."""
    # The protocol keeps the real stdout; anything printed by accident goes to stderr.
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    # Ctrl-C reaches the whole process group: the parent decides, and ends its workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    incoming = sys.stdin.buffer

    def send(message: Any) -> None:
        try:
            protocol.write(json.dumps(message).encode("utf-8") + b"\n")
            protocol.flush()
        except BrokenPipeError:
            # The parent is gone (its run ended while this worker started): nobody reads the
            # answer, and a traceback would land in the run's output, which shares stderr.
            os._exit(0)

    line = incoming.readline()
    if not line:
        return
    setup = json.loads(line)
    check = ModuleCheck(setup)
    handler = importlib.import_module(ROLES[role])
    handler.prepare()
    untrusted = check.untrusted_modules()
    if untrusted:
        send({"ready": False, "untrusted": untrusted})
        return
    os.chdir(setup["cwd"])
    send({"ready": True})
    for line in incoming:
        answer = handler.answer(json.loads(line))
        send({"answer": answer, "untrusted": check.untrusted_modules()})
    # The last answer is written: the parent closing the worker waits for this exit.
    end_without_teardown(0, protocol)
