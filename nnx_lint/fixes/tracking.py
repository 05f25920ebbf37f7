"""Which findings a fix run made go away: the count ``--fix`` reports and ``[*]`` promises.

Counting applied edits overstates what a fix run did: one finding can take several edits
(a pin at the call, then at the transform that encloses it, in a later pass), and a pin
shared by two findings is one edit. What a user sees is the findings that are gone when the
fixed text is linted again, so that is what is counted (Ruff counts the same way).

A finding of the text before is *still there* when the text after has a finding with the
same code on the same line, where lines are followed through the edit with
:class:`difflib.SequenceMatcher`: an unchanged line keeps its finding's place (shifted by
the lines inserted above it), and a rewritten stretch (a pinned call wrapped over several
lines) may hold it on any of its new lines. Findings are matched one to one. No libcst.
"""
from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Sequence

from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.fixes.model import source_lines


def line_map(before: str, after: str) -> list[range]:
    """For each line of ``before`` (0-based), the 0-based lines of ``after`` it became.

    >>> line_map("a\\nb\\nc\\n", "a\\nb1\\nb2\\nc\\n")
    [range(0, 1), range(1, 3), range(3, 4)]
    """
    old, new = source_lines(before), source_lines(after)
    mapping: list[range] = [range(0)] * len(old)
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for i in range(i1, i2):
            mapping[i] = range(j1 + i - i1, j1 + i - i1 + 1) if tag == "equal" else range(j1, j2)
    return mapping


def gone(before: Sequence[Diagnostic], after: Sequence[Diagnostic], before_text: str,
         after_text: str) -> list[int]:
    """Positions in ``before`` of the findings that no longer appear in ``after``."""
    mapping = line_map(before_text, after_text)
    remaining: dict[str, list[Diagnostic]] = {}
    for diagnostic in after:
        remaining.setdefault(diagnostic.code, []).append(diagnostic)
    missing = []
    for position, diagnostic in enumerate(before):
        lines = mapping[diagnostic.line - 1] if 0 < diagnostic.line <= len(mapping) else range(0)
        candidates = remaining.get(diagnostic.code, [])
        match = next((other for other in candidates if other.line - 1 in lines), None)
        if match is None:
            missing.append(position)
        else:
            candidates.remove(match)
    return missing


def gone_by_code(before: Sequence[Diagnostic], after: Sequence[Diagnostic], before_text: str,
                 after_text: str) -> Counter:
    """The findings that are gone, counted by code (what ``Fixed N diagnostics`` reports)."""
    return Counter(before[position].code for position in gone(before, after, before_text, after_text))
