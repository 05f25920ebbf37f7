"""Ending a process that has finished its work without the interpreter's teardown."""
from __future__ import annotations

import os
import sys

# Type checkers take TYPE_CHECKING as true; a run never imports typing for annotations (start-up).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, NoReturn


def end_without_teardown(code: int, *streams: IO) -> NoReturn:
    """Flush ``streams``, stdout and stderr, then exit with ``code`` at once.

    For a process whose output is all written and whose files are all closed. At a normal exit
    Python frees every object one by one; after a lint the heap holds every tree the run built,
    which takes a tenth of a second or more on a real project, while whoever waits for the exit
    (the user, or the parent of a worker) waits for nothing.
    """
    for stream in (*streams, sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe, or a stream closed already
            pass
    os._exit(code)
