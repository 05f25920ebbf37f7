"""``Diagnostic.to_dict`` (built directly, for speed) gives what ``dataclasses.asdict`` gives."""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from nnx_lint.analysis.project import Project
from nnx_lint.base.diagnostic import Diagnostic, Related
from nnx_lint.engine.registry import all_rules
from nnx_lint.engine.walk import lint_source

FIXTURES = Path(__file__).parent / "fixtures"


def test_to_dict_is_asdict_on_every_fixture_finding():
    rules = list(all_rules())
    checked = 0
    for path in sorted(FIXTURES.glob("shared_references/*.py"))[:40]:
        for diagnostic in lint_source(path.read_text(), str(path), rules, project=Project([path.parent])):
            plain = diagnostic.to_dict()
            assert plain == asdict(diagnostic)
            assert [type(value) for value in plain.values()] == [type(value) for value in asdict(diagnostic).values()]
            assert Diagnostic.from_dict(plain) == diagnostic
            checked += 1
    assert checked > 20


def test_to_dict_copies_nested_facts_and_keeps_tuples():
    diagnostic = Diagnostic("NNX101", "s", "m", "a.py", 1, 1, 1, 2, "raises",
                            facts={"pin": [{"line": 1, "api": "jit"}], "pair": (1, 2), "none": None},
                            related=(Related("a.py", 2, 1, 2, 3, "here", 1, (1, 2, 3, 4)),))
    plain = diagnostic.to_dict()
    assert plain == asdict(diagnostic)
    assert plain["facts"]["pin"] is not diagnostic.facts["pin"]
    assert plain["facts"]["pair"] == (1, 2) and isinstance(plain["related"], tuple)
    plain["facts"]["pin"][0]["line"] = 9
    assert diagnostic.facts["pin"][0]["line"] == 1
