"""The gate's progress on stderr: a line rewritten in place on a terminal, log lines in CI.

On a terminal (stderr is a TTY) one status line is rewritten in place. Anywhere else (a CI log,
a pipe) rewriting is useless and silence is worse: a long gate would print nothing until the
end. There the gate writes one line when a phase starts or ends (lint, collection, the graph-mode
run, the Tree-Mode run, the isolated re-runs, the join) and a heartbeat with the tests done so
far every ``interval`` seconds (``--progress-interval``, default 30).
"""
from __future__ import annotations

import sys
import time

#: Seconds between two heartbeat lines in a log (``--progress-interval``).
DEFAULT_INTERVAL = 30.0


class Progress:
    """Progress on stderr. ``enabled``: the in-place line (default: stderr is a TTY); ``log``: phase
    and heartbeat lines (default: stderr is not a TTY)."""

    def __init__(self, enabled: bool | None = None, started: float | None = None, *, log: bool | None = None,
                 interval: float = DEFAULT_INTERVAL):
        tty = sys.stderr.isatty()
        self.enabled = tty if enabled is None else enabled
        self.log = (not tty) if log is None else log
        self.interval = interval
        self.started = started if started is not None else time.monotonic()
        self._width = 0
        self._phase: str | None = None
        self._collected_logged = False
        self._last_line = time.monotonic()

    def _elapsed(self) -> str:
        elapsed = int(time.monotonic() - self.started)
        return f"{elapsed // 60}:{elapsed % 60:02d} elapsed"

    def _line(self, text: str) -> None:
        self.clear()
        sys.stderr.write(f"nnx-lint gate: {text} ({self._elapsed()})\n")
        sys.stderr.flush()
        self._last_line = time.monotonic()

    def phase(self, text: str) -> None:
        """A phase starts or ends: one log line (nothing on a terminal, where the status line shows it)."""
        if self.log:
            self._line(text)

    def show(self, phase: str, done: int | None = None, total: int | None = None, *, unit: str = "tests") -> None:
        """Where a phase is: rewrites the terminal's status line; in a log, says when the phase starts, when
        its total of tests is known (collected) and every ``interval`` seconds."""
        counts = "" if done is None else f" {done}/{total if total is not None else '?'} {unit}"
        if self.log:
            if phase != self._phase:
                self._phase, self._collected_logged = phase, False
                self._line(f"{phase}: started")
            if unit == "tests" and total is not None and not self._collected_logged:
                self._collected_logged = True
                self._line(f"{phase}: collected {total} test(s)")
            elif time.monotonic() - self._last_line >= self.interval:
                self._line(f"{phase}:{counts or ' running'}")
        if not self.enabled:
            return
        line = f"nnx-lint gate: {phase}{counts}, {self._elapsed()}"
        sys.stderr.write("\r" + line.ljust(self._width))
        sys.stderr.flush()
        self._width = len(line)

    def clear(self) -> None:
        if self.enabled and self._width:
            sys.stderr.write("\r" + " " * self._width + "\r")
            sys.stderr.flush()
            self._width = 0
