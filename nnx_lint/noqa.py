"""``# noqa`` and ``# noqa: NNX201, NNX202`` suppression comments, as in Ruff/flake8."""
from __future__ import annotations

import re
from collections.abc import Iterable

from nnx_lint.diagnostic import Diagnostic

_NOQA = re.compile(
    r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE
)


def suppressions(lines: list[str]) -> dict[int, frozenset[str] | None]:
    """Line number -> suppressed codes (None: every code) for lines with a noqa comment."""
    found: dict[int, frozenset[str] | None] = {}
    for number, line in enumerate(lines, start=1):
        if "noqa" not in line.lower():
            continue
        match = _NOQA.search(line)
        if match:
            codes = match.group("codes")
            found[number] = (
                frozenset(c.upper() for c in re.split(r"[,\s]+", codes) if c) if codes else None
            )
    return found


def suppressing_line(diagnostic: Diagnostic, table: dict[int, frozenset[str] | None]) -> int | None:
    """The line of the noqa comment in ``table`` that suppresses ``diagnostic``, or None.

    The one place that decides which comment applies to which diagnostic (the unused-noqa
    check asks it too).
    """
    if diagnostic.line in table:
        codes = table[diagnostic.line]
        if codes is None or any(diagnostic.code.startswith(c) for c in codes):
            return diagnostic.line
    return None


def apply_noqa(diagnostics: Iterable[Diagnostic], lines: list[str]) -> list[Diagnostic]:
    """Drop diagnostics whose start line carries a matching noqa comment."""
    table = suppressions(lines)
    return [diagnostic for diagnostic in diagnostics if suppressing_line(diagnostic, table) is None]
