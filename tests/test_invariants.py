"""What a hand-kept list of rules would guarantee, enforced over the discovered rules."""
from __future__ import annotations

import json
import re

import pytest
from _support import family_of, fixture_files

from nnx_lint.base.diagnostic import KINDS
from nnx_lint.reporting.docs import DOCS_DIR, expected_pages
from nnx_lint.engine.registry import all_rules
from nnx_lint.analysis.rule import SECTION_TITLES

RULES = all_rules()


def test_rules_are_discovered():
    assert len(RULES) >= 9
    assert {"NNX201", "NNX202", "NNX203", "NNX601"} <= {r.code for r in RULES}


def test_codes_and_symbols_are_unique_and_well_formed():
    codes = [r.code for r in RULES]
    symbols = [r.symbol for r in RULES]
    assert len(codes) == len(set(codes))
    assert len(symbols) == len(set(symbols))
    for rule in RULES:
        assert re.fullmatch(r"NNX\d{3}", rule.code), rule
        assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)+", rule.symbol), rule
        assert rule.kind in KINDS


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_has_docs_sections_and_cases(rule):
    sections = rule.docs_sections()
    for title in SECTION_TITLES:
        assert sections.get(title), f"{rule.code}: docstring lacks a '{title}:' section"
    assert rule.VALID, f"{rule.code} has no VALID case"
    if not rule.INVALID:
        assert rule.engine_reported and getattr(rule, "no_invalid_case_reason", ""), (
            f"{rule.code} has no INVALID case and no documented reason"
        )
    ids = [case.id for case in rule.VALID + rule.INVALID]
    assert len(ids) == len(set(ids)), f"{rule.code}: duplicate case ids"
    if rule.code.startswith("NNX9"):
        assert rule.kind == "advisory", "NNX9xx are advisories"
    if rule.kind == "advisory":
        # NNX9xx: code that opts into graph mode; NNX0xx: checks of the file's own comments (NNX009).
        assert rule.code.startswith(("NNX9", "NNX0")), "advisories live in NNX9xx (or NNX0xx for linter checks)"
    assert rule.default_enabled == (rule.kind != "advisory")
    # Messages format from facts: every placeholder is a plain name.
    assert all(re.fullmatch(r"\w+", f) for f in re.findall(r"(?<!\{)\{([^{}]*)\}(?!\})", rule.message))


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_has_a_fixture(rule):
    if not rule.INVALID:
        pytest.skip(rule.no_invalid_case_reason)
    families = {path.name.split("_")[0]: path for path in fixture_files()}
    assert rule.code in families, f"no tests/fixtures/{family_of(rule)}/{rule.code}_*.py"
    assert family_of(rule) in families[rule.code].parts, "fixtures live under their family's folder"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_facts_are_json_able(rule):
    from nnx_lint.engine.walk import lint_bytes

    for case in rule.INVALID:
        for diagnostic in lint_bytes(case.source.encode(), "case.py", [rule]):
            json.dumps(diagnostic.facts)


def test_docs_pages_are_current():
    """Regenerate with `python -m nnx_lint.docs` when this fails."""
    stale = []
    for name, content in expected_pages().items():
        path = DOCS_DIR / name
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            stale.append(name)
    assert not stale, f"stale docs pages (run `python -m nnx_lint.docs`): {stale}"
    pages = {p.name for p in DOCS_DIR.glob("*.md")}
    assert pages == set(expected_pages()), f"orphan pages: {pages - set(expected_pages())}"
