"""Rules learn what a value is from the analysis (the object-flow model and its services), not from
astroid: the count of astroid inference, lookup and node-scan calls in ``checkers/`` may only fall.

The ceiling is the count when the object-flow model landed; lower it when a rule stops calling
astroid (the issue's goal is none)."""
from __future__ import annotations

import re
from pathlib import Path

CHECKERS = Path(__file__).resolve().parent.parent / "checkers"
#: astroid's own inference, lookup and node scans, as methods of a node.
ASTROID_CALLS = re.compile(r"\.(infer|inferred|lookup|nodes_of_class)\(|\bsafe_infer\(")
CEILING = 9


def astroid_calls() -> list[str]:
    found = []
    for path in sorted(CHECKERS.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if ASTROID_CALLS.search(line.split("#")[0]):
                found.append(f"{path.relative_to(CHECKERS)}:{number}")
    return found


def test_rules_call_astroid_no_more_than_the_ceiling():
    found = astroid_calls()
    assert len(found) <= CEILING, found
