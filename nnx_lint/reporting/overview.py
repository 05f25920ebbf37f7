"""The migration overview: how findings group (rule, file, directory, family) and the order
of work, shared by ``--statistics``, the Markdown summary and ``docs/migration.md``.

The order of work puts first what hides or blocks everything else:

1. files that could not be analysed (NNX0xx): nothing else in them was checked;
2. prefix filters (NNX2xx): Tree Mode rejects them when the transform is *created*, often
   at import, so the module fails before any other break can show;
3. the other code that raises: it fails loudly, so the test suite finds it;
4. the silent changes: they run and compute something else, and only a test that checks
   the values notices;
5. advisories (NNX9xx, off by default): graph-mode opt-ins to remove at the end.
"""
from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from nnx_lint.base.diagnostic import KINDS, Diagnostic

GROUPINGS = ("rule", "file", "directory")


@dataclass(frozen=True)
class Stage:
    """One step of the suggested order of work."""

    title: str
    why: str


STAGES = (
    Stage("Files that can't be analysed (NNX0xx)", "nothing else in these files was checked"),
    Stage("Prefix filters (NNX2xx)",
          "Tree Mode rejects them when the transform is created, often at import, so the module fails "
          "before any other break shows"),
    Stage("Other code that raises in Tree Mode", "it fails loudly: running your tests in Tree Mode finds it"),
    Stage("Silent changes", "the code runs and computes something else; only a test that checks the values notices"),
    Stage("Advisories (NNX9xx)", "explicit graph-mode opt-ins, to remove once the rest is done"),
)


def stage_of(diagnostic: Diagnostic) -> Stage:
    """The step of the order of work a finding belongs to."""
    if diagnostic.kind == "linter" and "target_version" in diagnostic.facts:
        return STAGES[2]  # syntax newer than the target version: a SyntaxError on the target Python
    if diagnostic.kind == "linter":
        return STAGES[0]
    if diagnostic.code.startswith("NNX2"):
        return STAGES[1]
    if diagnostic.kind == "raises":
        return STAGES[2]
    if diagnostic.kind == "silent":
        return STAGES[3]
    return STAGES[4]


def group_key(diagnostic: Diagnostic, grouping: str) -> str:
    """The group of a finding: its code, its file, or its file's directory (``.`` at the top)."""
    if grouping == "rule":
        return diagnostic.code
    if grouping == "file":
        return diagnostic.path
    return os.path.dirname(diagnostic.path) or "."


def family_of(code: str) -> str:
    """``NNX201`` -> ``NNX2xx``."""
    return code[:4] + "xx"


def family_title(family: str) -> str:
    """A family's one-line title, from its ``checkers`` package's docstring (the one place
    that says what the family is): ``NNX2xx`` -> ``prefix filters (StateAxes, ...)``."""
    from nnx_lint.engine.registry import all_rules, family_package

    rule = next((r for r in all_rules() if r.code.startswith(family[:4])), None)
    if rule is None:
        return family
    first_line = (family_package(rule).__doc__ or family).strip().splitlines()[0]
    title = first_line.split(": ", 1)[-1].replace("``", "")
    for end in (" — ", ". "):
        title = title.split(end, 1)[0]
    return title.rstrip(".")


@dataclass
class Group:
    """Counts for one group: by kind and by code."""

    key: str
    kinds: Counter
    codes: Counter

    @property
    def count(self) -> int:
        return sum(self.kinds.values())

    def to_dict(self, grouping: str) -> dict:
        return {grouping: self.key, "count": self.count, **{kind: self.kinds[kind] for kind in KINDS},
                "codes": dict(sorted(self.codes.items()))}


def groups(diagnostics: Iterable[Diagnostic], grouping: str) -> list[Group]:
    """Findings grouped, most findings first (then by name)."""
    found: dict[str, Group] = {}
    for d in diagnostics:
        group = found.setdefault(group_key(d, grouping), Group(group_key(d, grouping), Counter(), Counter()))
        group.kinds[d.kind] += 1
        group.codes[d.code] += 1
    return sorted(found.values(), key=lambda g: (-g.count, g.key))
