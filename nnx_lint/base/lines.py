"""Python's physical lines: the one line numbering every part of nnx-lint uses.

Python's tokenizer (and so ``ast``/astroid line numbers, flake8 and pylint) ends a line at
``\\n``, ``\\r\\n`` and a lone ``\\r`` only. ``str.splitlines`` also splits at form feeds,
vertical tabs, ``\\x1c``-``\\x1e``, ``\\x85``, ``\\u2028`` and ``\\u2029``, which may appear
inside comments and strings; a line count taken with it drifts from the tree's.
"""
from __future__ import annotations

import io


def physical_lines(text: str) -> list[str]:
    """``text`` split into Python's physical lines, without their line endings.

    >>> physical_lines("a = 1  # page\\x0cbreak\\rb = 2\\r\\nc = 3\\n")
    ['a = 1  # page\\x0cbreak', 'b = 2', 'c = 3']
    """
    return [line.rstrip("\n") for line in io.StringIO(text, newline=None)]
