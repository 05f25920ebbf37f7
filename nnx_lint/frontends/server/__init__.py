"""``nnx-lint server``: a Language Server Protocol server for editors (pygls, over stdio).

* :mod:`~nnx_lint.frontends.server.workspace` — the warm state: buffers, projects, results and their
  dependencies (no protocol);
* :mod:`~nnx_lint.frontends.server.convert` — findings, positions and edits as LSP values;
* :mod:`~nnx_lint.frontends.server.actions` — code actions (fixes, ``# noqa``, the reproduction) and hovers;
* :mod:`~nnx_lint.frontends.server.protocol` — the pygls server and its handlers.

pygls and lsprotocol are the ``server`` extra: only :func:`run` imports them, and says what
to install when they are missing.
"""
from __future__ import annotations

import importlib.util
import sys


def missing() -> str:
    """What to install for the server, in the form that matches this installation."""
    from nnx_lint.base.install_hints import pip_install

    return f"nnx-lint server needs pygls and lsprotocol (and libcst for its quick fixes): {pip_install('server')}"


def available() -> bool:
    """Whether pygls and lsprotocol can be imported."""
    return all(importlib.util.find_spec(name) is not None for name in ("pygls", "lsprotocol"))


def run(baseline: str | None = None) -> int:
    """Serve over stdin/stdout until the client exits; 2 (with a message) without pygls."""
    if not available():
        print(f"nnx-lint: error: {missing()}", file=sys.stderr)
        return 2
    from nnx_lint.frontends.server.protocol import build_server

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    # The protocol owns stdout: anything else printed (a warning, a stray print) goes to stderr,
    # where clients show it as the server's log.
    sys.stdout = sys.stderr
    build_server(baseline).start_io(stdin, stdout)
    return 0
