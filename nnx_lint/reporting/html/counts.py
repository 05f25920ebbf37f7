"""What the report counts, computed from the JSON output's objects.

The report is drawn from the very list of objects ``--output-format json`` prints for the
same run (:func:`nnx_lint.reporting.reporters.to_json_object`), so its numbers and the JSON
output cannot disagree, and the history line of a run (:mod:`.history`) counts the same way.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

from nnx_lint.base.diagnostic import KINDS, UNPROVEN

#: The confirmation statuses that mean the break was seen by running a reproduction.
CONFIRMED = ("confirmed", "pattern-confirmed")

#: The totals on the index page, in order: (key, label, what it counts).
TOTALS = (
    ("raises", "break: raises", "proven findings that raise in Tree Mode"),
    ("silent", "break: silent", "proven findings that silently change results in Tree Mode"),
    ("confirmed", "confirmed by running", "findings whose reproduction confirmed the break (--confirm)"),
    ("proven", "proven statically", "findings the analysis proves (not --strict's unproven ones)"),
    ("unproven", "unproven", "--strict findings that hang on a value the analysis cannot resolve"),
    ("fixable_safe", "safe fix", "findings with a safe fix (--fix applies it)"),
    ("fixable_unsafe", "unsafe fix", "findings with an unsafe fix (--unsafe-fixes applies it)"),
    ("linter", "not analysed", "NNX0xx: files or parts the analysis could not read"),
    ("advisory", "advisory", "NNX9xx advisories"),
)


def is_unproven(finding: dict) -> bool:
    """Whether a JSON finding is an unproven one (audit mode, ``--strict``)."""
    return finding.get("proof") == UNPROVEN


def family_of(code: str) -> str:
    """``NNX201`` -> ``NNX2xx`` (as :func:`nnx_lint.reporting.overview.family_of`)."""
    from nnx_lint.reporting.overview import family_of as overview_family

    return overview_family(code)


def category(finding: dict) -> str:
    """The one column a finding counts in by kind: its kind, or ``unproven``."""
    return UNPROVEN if is_unproven(finding) else finding["kind"]


def totals(findings: list[dict]) -> dict[str, int]:
    """The index page's totals (keys of :data:`TOTALS`, and ``total``)."""
    counts = Counter(category(f) for f in findings)
    fixes = Counter((f.get("fix") or {}).get("applicability") for f in findings if (f.get("fix") or {}).get("edits"))
    statuses = Counter((f.get("confirmation") or {}).get("status") for f in findings)
    return {
        "total": len(findings),
        "raises": counts["raises"],
        "silent": counts["silent"],
        "confirmed": sum(statuses[s] for s in CONFIRMED),
        "proven": sum(1 for f in findings if not is_unproven(f)),
        "unproven": counts[UNPROVEN],
        "fixable_safe": fixes["safe"],
        "fixable_unsafe": fixes["unsafe"],
        "linter": counts["linter"],
        "advisory": counts["advisory"],
    }


#: The kind columns of the tables, in order (``unproven`` apart from what is known to break).
COLUMNS = ("raises", "silent", UNPROVEN, "linter", "advisory")
assert set(COLUMNS) >= set(KINDS)


@dataclass
class Row:
    """One row of the index's tables: a directory, a file or a rule, with counts by column."""

    key: str
    counts: Counter = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def worst_first(self) -> tuple:
        """Sort key: most that raises, then silent, then all; then by name."""
        return (-self.counts["raises"], -self.counts["silent"], -self.total, self.key)


def rows_by(findings: list[dict], key) -> list[Row]:
    """Findings grouped by ``key(finding)``, the worst first."""
    rows: dict[str, Row] = {}
    for finding in findings:
        name = key(finding)
        rows.setdefault(name, Row(name)).counts[category(finding)] += 1
    return sorted(rows.values(), key=Row.worst_first)


def directory_of(finding: dict) -> str:
    """A finding's directory, ``.`` at the top (as :func:`nnx_lint.reporting.overview.group_key`)."""
    return os.path.dirname(finding["filename"]) or "."


def history_counts(findings: list[dict]) -> dict:
    """The counts a history line keeps: by kind (unproven apart) and by family."""
    return {
        "total": len(findings),
        "kinds": {column: sum(1 for f in findings if category(f) == column) for column in COLUMNS},
        "families": dict(sorted(Counter(family_of(f["code"]) for f in findings).items())),
    }
