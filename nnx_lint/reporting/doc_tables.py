"""The cells of the hand-written documents that follow from the rules, regenerated from them.

``README.md``'s "Rules" table counts the rules of each code range, and ``docs/catalogue.md``'s
"All patterns" table lists the rules that flag each pattern (a rule's ``catalogue`` ids). The
prose around them is written by hand; these cells are rewritten by ``python -m nnx_lint.docs``,
and a test fails while they differ from what the rules say, so a new rule needs no edit of
either table (a new code range needs its README row, with the words that describe it).
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from nnx_lint.analysis.rule import Rule

ROOT = Path(__file__).resolve().parent.parent.parent
README = ROOT / "README.md"
CATALOGUE = ROOT / "docs" / "catalogue.md"

#: A row of README's rules table: ``| NNX1xx | <what the range covers> | <count> |``.
_RANGE_ROW = re.compile(r"^(\| (NNX\d)xx \| .* \| )(\d+)( \|)$", flags=re.MULTILINE)
#: A row of the catalogue's pattern table: ``| [A1](#a1) | <title> | <Tree Mode> | <rules> |``.
_PATTERN_ROW = re.compile(r"^(\| \[(\w+)\]\(#\w+\) \| [^|]* \| [^|]* \| )([^|]*)( \|)$", flags=re.MULTILINE)


def readme_text(current: str, rules: Iterable[type[Rule]]) -> str:
    """``README.md`` with the rule count of each code range rewritten from ``rules``.

    >>> from types import SimpleNamespace as Rule
    >>> readme_text("| NNX2xx | prefix filters | 1 |", [Rule(code="NNX201"), Rule(code="NNX202")])
    '| NNX2xx | prefix filters | 2 |'
    """
    counts = Counter(rule.code[:4] for rule in rules)
    rows = {match.group(2) for match in _RANGE_ROW.finditer(current)}
    if missing := sorted(set(counts) - rows):
        raise ValueError(f"README.md's rules table has no row for {', '.join(f'{r}xx' for r in missing)}: add one "
                         "that says what the range covers")
    if empty := sorted(rows - set(counts)):
        raise ValueError(f"README.md's rules table has a row for {', '.join(f'{r}xx' for r in empty)}, "
                         "which no rule has")
    return _RANGE_ROW.sub(lambda m: f"{m.group(1)}{counts[m.group(2)]}{m.group(4)}", current)


def catalogue_text(current: str, rules: Iterable[type[Rule]]) -> str:
    """``docs/catalogue.md`` with each pattern's rules cell rewritten from the rules' ``catalogue``
    ids (``—`` for a pattern no rule flags).

    >>> from types import SimpleNamespace as Rule
    >>> catalogue_text("| [A1](#a1) | Tied | raises | — |", [Rule(code="NNX101", catalogue=("A1",))])
    '| [A1](#a1) | Tied | raises | [NNX101](rules/NNX101.md) |'
    """
    citing: dict[str, list[str]] = {}
    for rule in sorted(rules, key=lambda r: r.code):
        for pattern_id in rule.catalogue:
            citing.setdefault(pattern_id, []).append(rule.code)

    def cell(match: re.Match) -> str:
        codes = citing.get(match.group(2), [])
        links = ", ".join(f"[{code}](rules/{code}.md)" for code in codes) or "—"
        return f"{match.group(1)}{links}{match.group(4)}"

    return _PATTERN_ROW.sub(cell, current)


def write_tables(rules: Iterable[type[Rule]]) -> list[Path]:
    """Rewrite the generated cells of ``README.md`` and ``docs/catalogue.md``; returns the files that changed."""
    rules = tuple(rules)
    changed = []
    for path, render in ((README, readme_text), (CATALOGUE, catalogue_text)):
        current = path.read_text(encoding="utf-8")
        if (new := render(current, rules)) != current:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed
