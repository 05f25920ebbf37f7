"""Which findings a fix run made go away: the count ``--fix`` reports and ``[*]`` promises.

Counting applied edits overstates what a fix run did: one finding can take several edits
(a pin at the call, then at the transform that encloses it, in a later pass), and a pin
shared by two findings is one edit. What a user sees is the findings that are gone when the
fixed text is linted again, so that is what is counted (Ruff counts the same way).

A finding of the text before is *still there* when the text after has a finding with the
same code on the same line, where lines are followed through the edit by a shortest line
diff (:func:`line_map`): an unchanged line keeps its finding's place (shifted by
the lines inserted above it), and a rewritten stretch (a pinned call wrapped over several
lines) may hold it on any of its new lines. Findings are matched one to one. No libcst.
"""
from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Sequence

from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.fixes.model import source_lines


#: Most line edits between the first and the last edit matched by :func:`_shortest_edit`;
#: a text changed more than that (never a fix's pins) is matched by difflib instead.
MOST_EDITS_FOLLOWED = 400


def line_map(before: str, after: str) -> list[range]:
    """For each line of ``before`` (0-based), the 0-based lines of ``after`` it became.

    >>> line_map("a\\nb\\nc\\n", "a\\nb1\\nb2\\nc\\n")
    [range(0, 1), range(1, 3), range(3, 4)]
    """
    old, new = source_lines(before), source_lines(after)
    mapping: list[range] = [range(0)] * len(old)
    for tag, i1, i2, j1, j2 in ShortestEditMatcher(old, new).get_opcodes():
        for i in range(i1, i2):
            mapping[i] = range(j1 + i - i1, j1 + i - i1 + 1) if tag == "equal" else range(j1, j2)
    return mapping


class ShortestEditMatcher(difflib.SequenceMatcher):
    """difflib's matcher (opcodes, grouped hunks) over the matches of a shortest edit script.

    difflib's own matching is quadratic in lines that repeat when it has no junk (27,000
    identical comment lines took minutes), and with its junk heuristic such lines never
    match (the whole file becomes one hunk). A fix changes a few lines: Myers' O(ND) diff
    (:func:`_shortest_edit`) is then near linear however the lines repeat. A text changed by
    more than :data:`MOST_EDITS_FOLLOWED` lines is matched by difflib, with its heuristic."""

    def __init__(self, a: Sequence[str], b: Sequence[str]) -> None:
        super().__init__(None, a, b)

    def get_matching_blocks(self) -> list[difflib.Match]:
        if self.matching_blocks is not None:
            return self.matching_blocks
        pairs = _shortest_edit(self.a, self.b, MOST_EDITS_FOLLOWED)
        if pairs is None:
            return super().get_matching_blocks()
        blocks: list[list[int]] = []
        for i, j in pairs:
            if blocks and blocks[-1][0] + blocks[-1][2] == i and blocks[-1][1] + blocks[-1][2] == j:
                blocks[-1][2] += 1
            else:
                blocks.append([i, j, 1])
        self.matching_blocks = [difflib.Match(*block) for block in blocks]
        self.matching_blocks.append(difflib.Match(len(self.a), len(self.b), 0))
        return self.matching_blocks


def unified_diff(before: str, after: str, fromfile: str, tofile: str, context: int = 3) -> str:
    """``before`` -> ``after`` as ``diff -u`` (and :func:`difflib.unified_diff`) print it, with
    the hunks of :class:`ShortestEditMatcher`: an edit in a long repetitive file is a small hunk."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    out: list[str] = []
    for group in ShortestEditMatcher(old, new).get_grouped_opcodes(context):
        if not out:
            out += [f"--- {fromfile}\n", f"+++ {tofile}\n"]
        first, last = group[0], group[-1]
        out.append(f"@@ -{_hunk_range(first[1], last[2])} +{_hunk_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [" " + line for line in old[i1:i2]]
                continue
            out += ["-" + line for line in old[i1:i2]]
            out += ["+" + line for line in new[j1:j2]]
    return "".join(out)


def _hunk_range(start: int, stop: int) -> str:
    """A unified diff's ``line,count`` (difflib's and GNU diff's convention: an empty range
    names the line before it, and a count of one is left out)."""
    length = stop - start
    first = start + 1 if length else start
    return str(first) if length == 1 else f"{first},{length}"


def _shortest_edit(old: Sequence[str], new: Sequence[str], most_edits: int) -> list[tuple[int, int]] | None:
    """The matched line pairs ``(old, new)`` of a shortest edit script (Myers' O(ND) diff), or
    ``None`` when it takes more than ``most_edits`` inserted and deleted lines.

    A fix changes a few lines, so D is small and this is near linear, however many lines
    repeat: difflib without junk is quadratic in repeated lines (27,000 identical comment lines
    took minutes), and with its junk heuristic it matches none of them."""
    n, m = len(old), len(new)
    head = 0
    while head < min(n, m) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(n, m) - head and old[n - 1 - tail] == new[m - 1 - tail]:
        tail += 1
    a, b = old[head:n - tail], new[head:m - tail]
    furthest: dict[int, int] = {1: 0}  # diagonal k = x - y -> the furthest x reached on it
    trace: list[dict[int, int]] = []
    for edits in range(min(len(a) + len(b), most_edits) + 1):
        trace.append(dict(furthest))
        for k in range(-edits, edits + 1, 2):
            if k == -edits or (k != edits and furthest[k - 1] < furthest[k + 1]):
                x = furthest[k + 1]  # a line of b inserted
            else:
                x = furthest[k - 1] + 1  # a line of a deleted
            y = x - k
            while x < len(a) and y < len(b) and a[x] == b[y]:
                x, y = x + 1, y + 1
            furthest[k] = x
            if x >= len(a) and y >= len(b):
                middle = _backtrack(trace, len(a), len(b))
                return ([(i, i) for i in range(head)] + [(head + x, head + y) for x, y in middle]
                        + [(n - tail + i, m - tail + i) for i in range(tail)])
    return None


def _backtrack(trace: list[dict[int, int]], x: int, y: int) -> list[tuple[int, int]]:
    """The matched pairs of the path :func:`_shortest_edit` found, walked back from its end
    (``trace[d]``: the furthest points before the d-th edit)."""
    pairs: list[tuple[int, int]] = []
    for edits in range(len(trace) - 1, -1, -1):
        furthest = trace[edits]
        k = x - y
        inserted = k == -edits or (k != edits and furthest[k - 1] < furthest[k + 1])
        previous_k = k + 1 if inserted else k - 1
        previous_x = furthest[previous_k]
        previous_y = previous_x - previous_k
        while x > previous_x and y > previous_y:  # the matched run after this edit
            x, y = x - 1, y - 1
            pairs.append((x, y))
        x, y = previous_x, previous_y
    pairs.reverse()
    return pairs


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
