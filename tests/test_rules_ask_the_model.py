"""Rules learn what a value is from the analysis (the object-flow model, the fact index and the other
services of ``nnx_lint.api``), not from astroid, and keep no analysis of their own (issue 43).

- No astroid inference, lookup or node scan in ``checkers/``: not the node methods (``infer``,
  ``inferred``, ``lookup``, ``ilookup``, ``igetattr``, ``nodes_of_class``), nor ``safe_infer`` or a
  function-form ``nodes_of_class(...)``. A rule asks the fact index what lies inside a node
  (``fact_index(context).calls_in(node)``, ``returns_of``, ...) or the model what a value is.
- The family modules that are not rules (a family's shared bases, facts and wording: every module of
  a family package but its rule modules ``nnxNNN_*.py``, ``reproduction.py``, ``__init__.py`` and
  ``cases/``) total at most 600 lines: value analysis lives in ``nnx_lint/analysis/``.
"""
from __future__ import annotations

import re
from pathlib import Path

CHECKERS = Path(__file__).resolve().parent.parent / "checkers"
#: astroid's own inference, lookup and node scans: as methods of a node, or as functions.
ASTROID_CALLS = re.compile(
    r"\.(infer|inferred|lookup|ilookup|igetattr|nodes_of_class)\(|(?<![\w.])(safe_infer|nodes_of_class)\(")
#: The most lines the family modules that are not rules may hold together (2,391 when this test came).
FAMILY_MODULE_LINES = 600
RULE_MODULE = re.compile(r"nnx\d{3}_\w+\.py")
NOT_COUNTED = {"reproduction.py", "__init__.py"}


def rule_sources() -> list[Path]:
    """Every module of ``checkers/`` but the rules' examples (``cases/``)."""
    return [path for path in sorted(CHECKERS.rglob("*.py")) if "cases" not in path.relative_to(CHECKERS).parts]


def astroid_calls() -> list[str]:
    found = []
    for path in rule_sources():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if ASTROID_CALLS.search(line.split("#")[0]):
                found.append(f"{path.relative_to(CHECKERS)}:{number}")
    return found


def family_modules() -> list[Path]:
    """The modules of the family packages that are not rules, reproductions or package inits."""
    return [path for path in rule_sources()
            if path.parent != CHECKERS and not RULE_MODULE.fullmatch(path.name) and path.name not in NOT_COUNTED]


def test_the_scan_sees_every_form():
    calls = ["x.infer()", "node.inferred()", "scope.lookup(name)", "c.ilookup('x')", "m.igetattr('a')",
             "f.nodes_of_class(nodes.Call)", "nodes_of_class(scope, nodes.Call)", "safe_infer(node)"]
    assert [call for call in calls if not ASTROID_CALLS.search(call)] == []
    allowed = ["facts.calls_in(scope)", "lookup(name)", "my_nodes_of_class(x)", "bound_values(name)"]
    assert [call for call in allowed if ASTROID_CALLS.search(call)] == []


def test_rules_call_no_astroid_inference_lookup_or_scan():
    assert astroid_calls() == [], "ask the fact index or the object-flow model (nnx_lint.api)"


def test_the_family_count_sees_bases_and_not_rules():
    names = {path.relative_to(CHECKERS).as_posix() for path in family_modules()}
    assert "shared_references/base.py" in names
    assert not any(RULE_MODULE.fullmatch(Path(name).name) or Path(name).name in NOT_COUNTED for name in names)


def test_families_keep_no_analysis_of_their_own():
    lines = {path.relative_to(CHECKERS).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
             for path in family_modules()}
    assert sum(lines.values()) <= FAMILY_MODULE_LINES, lines
