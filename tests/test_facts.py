"""Typed facts: every rule declares them, reports with them, and the stored dict round-trips."""
from __future__ import annotations

import dataclasses
import json

import pytest

from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.engine.walk import lint_bytes
from nnx_lint.base.facts import ABSENT, Facts, facts_from_dict
from nnx_lint.engine.registry import all_rules, rule_by_code

REPORTING = [rule for rule in all_rules() if not rule.engine_reported]
CASES = [
    (rule, case, diagnostic)
    for rule in REPORTING
    for case in rule.INVALID
    if not case.files
    for diagnostic in lint_bytes(case.source.encode(), "case.py", [rule])
    if diagnostic.code == rule.code
]
IDS = [f"{rule.code}-{case.id}-{diagnostic.line}" for rule, case, diagnostic in CASES]


@pytest.mark.parametrize("rule", REPORTING, ids=lambda r: r.code)
def test_every_reporting_rule_declares_frozen_facts(rule):
    facts_type = rule.facts_type
    assert facts_type is not None and issubclass(facts_type, Facts), rule.code
    assert dataclasses.is_dataclass(facts_type) and facts_type.__dataclass_params__.frozen
    assert facts_type.__doc__ and facts_type.keys_and_fields(), rule.code


def test_engine_reported_rules_have_no_facts_type():
    """NNX0xx diagnostics are built by the engine, not by a rule's report()."""
    assert all(rule.facts_type is None for rule in all_rules() if rule.engine_reported)


@pytest.mark.parametrize("index", range(len(CASES)), ids=IDS)
def test_stored_facts_round_trip_through_the_typed_facts(index):
    rule, _case, diagnostic = CASES[index]
    typed = rule.facts_from(diagnostic.facts)
    assert isinstance(typed, rule.facts_type)
    assert list(typed.as_dict().items()) == list(diagnostic.facts.items())  # same keys, values, order
    # What the cache stores (JSON) gives the same typed facts back.
    cached = Diagnostic.from_dict(json.loads(json.dumps(diagnostic.to_dict())))
    assert rule.facts_from(cached.facts) == typed
    # The keys a notebook adds after reporting are not facts of the rule.
    assert rule.facts_from({**diagnostic.facts, "cell": 3, "ipynb": [1, 2, 3, 4]}) == typed


def test_every_rule_with_cases_is_covered():
    assert {rule.code for rule, _c, _d in CASES} == {rule.code for rule in REPORTING if rule.INVALID}


def test_facts_are_read_as_attributes_never_as_a_mapping():
    """A reader written against the stored dict fails at once (no mapping interface to fall back on)."""
    rule = rule_by_code("NNX201")
    _r, _c, diagnostic = next(c for c in CASES if c[0] is rule)
    facts = rule.facts_from(diagnostic.facts)
    assert facts.transform == diagnostic.facts["transform"] == "vmap"
    with pytest.raises(TypeError):
        facts["transform"]  # noqa: B018 - the read itself is the test
    with pytest.raises(AttributeError):
        facts.get("transform")
    with pytest.raises(TypeError):
        "{argument}".format(**facts)
    assert rule.render(facts)[0] == diagnostic.message
    with pytest.raises(TypeError, match="not a dict"):
        rule.render(diagnostic.facts)


def test_an_absent_fact_is_left_out_and_a_keyword_fact_keeps_its_name():
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Example(Facts):
        kind: str
        class_: str = dataclasses.field(metadata={"key": "class"})
        pin: list = ABSENT

    facts = Example(kind="Module", class_="M")
    assert facts.as_dict() == {"kind": "Module", "class": "M"} and facts.pin is ABSENT
    assert facts_from_dict(Example, {"kind": "Module", "class": "M", "pin": []}).pin == []


def test_a_stored_dict_that_disagrees_with_the_declaration_is_refused():
    rule = rule_by_code("NNX201")
    _r, _c, diagnostic = next(c for c in CASES if c[0] is rule)
    with pytest.raises(TypeError, match="no fact 'surprise'"):
        rule.facts_from({**diagnostic.facts, "surprise": 1})
    missing = dict(diagnostic.facts)
    del missing["transform"]
    with pytest.raises(TypeError):
        rule.facts_from(missing)


def test_report_refuses_a_fact_the_rule_does_not_declare():
    rule = rule_by_code("NNX901")
    reported = []

    class Context:
        def report(self, rule, node, facts, message=None, help=None, related=None):
            reported.append(facts)

    instance = rule(Context())
    instance.report(object(), what="`nnx.compat.vmap`")
    assert [facts.as_dict() for facts in reported] == [{"what": "`nnx.compat.vmap`"}]
    with pytest.raises(TypeError):
        instance.report(object(), what="x", extra=1)
    instance.report(object(), rule.facts_type(what="y"))
    assert reported[-1] == rule.facts_type(what="y")
