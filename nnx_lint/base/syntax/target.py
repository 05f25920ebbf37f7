"""The target Python version: ``--target-version``, ``[tool.nnx-lint] target-version``, or the lower
bound of ``[project] requires-python``, as Ruff resolves it.

The target decides which syntax is an error: a construct added after the target is reported
(NNX002) and the file is still analysed, as Ruff reports its version-related syntax errors.
Without any of the three there is no target, and no syntax is too new (Ruff, too, checks these
errors against the newest Python when no version is configured).
"""
from __future__ import annotations

import re

Version = tuple[int, int]

#: The values Ruff accepts for ``target-version``.
TARGET_VERSIONS = ("py37", "py38", "py39", "py310", "py311", "py312", "py313", "py314")

_LOWER_BOUND = r"(===|==|~=|>=|>)\s*(\d+)(?:\.(\d+))?"


def parse_target_version(value: str) -> Version | None:
    """``"py311"`` -> ``(3, 11)``; None for anything Ruff does not accept.

    >>> parse_target_version("py311"), parse_target_version("3.11")
    ((3, 11), None)
    """
    if value not in TARGET_VERSIONS:
        return None
    return 3, int(value[3:])


def requires_python_lower_bound(specifier: str) -> Version | None:
    """The oldest Python (major, minor) a ``requires-python`` specifier admits, or None if it sets
    no lower bound (``"<4"``, ``"*"``).

    Every clause that bounds from below counts (``>=``, ``>``, ``~=``, ``==``); the highest wins,
    since all clauses must hold. ``>3.10`` admits 3.10.1, so its bound is 3.10.

    >>> requires_python_lower_bound(">=3.11"), requires_python_lower_bound(">=3.10, <3.14")
    ((3, 11), (3, 10))
    >>> requires_python_lower_bound("~=3.12.1"), requires_python_lower_bound("<4")
    ((3, 12), None)
    """
    bounds = [(int(major), int(minor or 0)) for _, major, minor in re.findall(_LOWER_BOUND, specifier)]
    return max(bounds) if bounds else None


def version_text(version: Version) -> str:
    """``(3, 11)`` -> ``"3.11"``."""
    return f"{version[0]}.{version[1]}"
