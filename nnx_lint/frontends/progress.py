"""``nnx-lint check``'s progress on a terminal: files done of total and the time elapsed.

One status line on stderr, redrawn in place (``\\r``), only when stderr is a terminal and ``-q``
is not given, as pytest and Ruff do: a log or a pipe gets nothing (a CI log would fill with
redrawn lines). The line is cleared before the report is written, so the report reads as
without it. A run whose cache entries no longer match (nnx-lint, the selection, the roots or
the target version changed: every unchanged file is analysed again) says so on that line,
``cache invalidated: re-analysing``, since such a run takes as long as the first one.

Imported only by a ``check`` whose stderr is a terminal (``nnx_lint.cli``): ``--version`` and a
piped run never import it.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

#: Seconds between two redraws: often enough to look alive, rarely enough to cost nothing.
REDRAW_INTERVAL = 0.1


class FileProgress:
    """A callable ``(done, total, invalidated)`` that redraws the status line; :meth:`clear` ends it.

    Called from the threads that drive the lint or fix workers too (one lock keeps a line whole).
    The first and the last counts are always drawn; those in between at most every
    :data:`REDRAW_INTERVAL` seconds.
    """

    def __init__(self, action: str = "checked", stream: TextIO | None = None):
        self.action = action
        self.stream = stream if stream is not None else sys.stderr
        self.started = time.monotonic()
        self._drawn_at = 0.0
        self._width = 0
        self._lock = threading.Lock()

    def __call__(self, done: int, total: int, invalidated: bool = False) -> None:
        now = time.monotonic()
        with self._lock:
            if self._width and 0 < done < total and now - self._drawn_at < REDRAW_INTERVAL:
                return
            self._drawn_at = now
            elapsed = int(now - self.started)
            reason = "cache invalidated: re-analysing, " if invalidated else ""
            line = f"nnx-lint: {reason}{done}/{total} files {self.action}, {elapsed // 60}:{elapsed % 60:02d} elapsed"
            self.stream.write("\r" + line.ljust(self._width))
            self.stream.flush()
            self._width = len(line)

    def clear(self) -> None:
        """Erase the status line (before the report is written)."""
        with self._lock:
            if self._width:
                self.stream.write("\r" + " " * self._width + "\r")
                self.stream.flush()
                self._width = 0

