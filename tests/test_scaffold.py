"""``python -m nnx_lint.scaffold`` writes a rule that works as written (in a scratch tree)."""
from __future__ import annotations

import importlib.util
import sys

import pytest
from _support import fixture_expectations

from nnx_lint.engine.walk import lint_bytes
from nnx_lint.analysis.rule import Rule
from nnx_lint.scaffold import scaffold


@pytest.fixture
def scratch(tmp_path):
    (tmp_path / "checkers" / "api_semantics").mkdir(parents=True)
    (tmp_path / "checkers" / "api_semantics" / "__init__.py").write_text('"""NNX7xx."""\n')
    return tmp_path


def _load_rule(path, monkeypatch) -> type[Rule]:
    spec = importlib.util.spec_from_file_location("scaffolded_rule", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "scaffolded_rule", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return next(value for value in vars(module).values()
                if isinstance(value, type) and issubclass(value, Rule) and "code" in vars(value))


def test_the_scaffolded_rule_passes_its_own_cases_and_fixture(scratch, monkeypatch):
    module, fixture = scaffold("NNX799", "graph-only-helper", "api_semantics", "cached_partial", "ValueError",
                               scratch)
    assert module.name == "nnx799_graph_only_helper.py" and fixture.name == "NNX799_basic.py"
    assert fixture.parent == scratch / "tests" / "fixtures" / "api_semantics"
    rule = _load_rule(module, monkeypatch)
    assert (rule.code, rule.symbol, rule.facts_type.__name__) == ("NNX799", "graph-only-helper", "GraphOnlyHelperFacts")
    assert not rule.has_reproduction() and rule.no_reproduction_reason
    assert not rule.fixes and rule.no_fix_reason
    for case in rule.VALID + rule.INVALID:
        found = {(d.line, d.code) for d in lint_bytes(case.source.encode(), "case.py", [rule])}
        assert found == case.expected(), case.id
    found = {(d.line, d.code) for d in lint_bytes(fixture.read_bytes(), str(fixture), [rule])}
    assert found == fixture_expectations(fixture) == {(4, "NNX799")}
    diagnostic = lint_bytes(rule.INVALID[0].source.encode(), "case.py", [rule])[0]
    assert diagnostic.facts == {"api": "cached_partial"}
    assert diagnostic.message == "`nnx.cached_partial(...)`: Tree Mode raises ValueError"


@pytest.mark.parametrize(("code", "symbol", "family", "problem"), [
    ("NNX201", "new-symbol", "api_semantics", "taken"),
    ("NNX799", "state-axes-prefix", "api_semantics", "taken"),
    ("NNX7", "new-symbol", "api_semantics", "three digits"),
    ("NNX799", "NewSymbol", "api_semantics", "lower-case"),
    ("NNX799", "new-symbol", "no_such_family", "not a family"),
])
def test_the_scaffold_refuses_clashes_and_bad_names(scratch, code, symbol, family, problem):
    with pytest.raises(ValueError, match=problem):
        scaffold(code, symbol, family, "cached_partial", "ValueError", scratch)
    assert not list((scratch / "checkers" / "api_semantics").glob("nnx*.py"))


def test_the_scaffold_never_overwrites(scratch):
    scaffold("NNX799", "graph-only-helper", "api_semantics", "cached_partial", "ValueError", scratch)
    with pytest.raises(ValueError, match="exists"):
        scaffold("NNX799", "graph-only-helper", "api_semantics", "cached_partial", "ValueError", scratch)
