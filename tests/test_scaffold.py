"""``python -m nnx_lint.scaffold`` writes a rule that works as written (in a scratch tree), and
CONTRIBUTING.md's example of it is free to use and works exactly as documented."""
from __future__ import annotations

import importlib.util
import json
import re
import shlex
import shutil
import subprocess
import sys

import pytest
from _support import REPO, fixture_expectations, not_self_contained

from nnx_lint.analysis.rule import SECTION_TITLES, Rule
from nnx_lint.engine.registry import all_rules, rule_by_code, rule_by_symbol
from nnx_lint.engine.walk import lint_bytes
from nnx_lint.scaffold import arguments, scaffold

CONTRIBUTING = REPO / "CONTRIBUTING.md"


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


def _passes_the_rule_tests(rule: type[Rule], fixture) -> None:
    """What the invariants, case, fixture and facts tests ask of a discovered rule, asked of one
    loaded from a scratch tree."""
    from nnx_lint.reporting.docs import render_rule

    sections = rule.docs_sections()
    assert all(sections.get(title) for title in SECTION_TITLES), sections
    assert rule.VALID and rule.INVALID
    assert not rule.has_reproduction() and rule.no_reproduction_reason
    assert not rule.fixes and rule.no_fix_reason
    for case in rule.VALID + rule.INVALID:
        found = {(d.line, d.code) for d in lint_bytes(case.source.encode(), "case.py", [rule])}
        assert found == case.expected(), case.id
        for diagnostic in lint_bytes(case.source.encode(), "case.py", [rule]):
            stored = json.loads(json.dumps(diagnostic.facts))
            assert rule.facts_from(stored).as_dict() == diagnostic.facts
    found = {(d.line, d.code) for d in lint_bytes(fixture.read_bytes(), str(fixture), [rule])}
    assert found == fixture_expectations(fixture) and found
    assert not_self_contained(fixture) is None, not_self_contained(fixture)
    assert f"# {rule.code}" in render_rule(rule)


def test_the_scaffolded_rule_passes_its_own_cases_and_fixture(scratch, monkeypatch):
    module, fixture = scaffold("NNX799", "graph-only-helper", "api_semantics", "cached_partial", "ValueError",
                               scratch)
    assert module.name == "nnx799_graph_only_helper.py" and fixture.name == "NNX799_basic.py"
    assert fixture.parent == scratch / "tests" / "fixtures" / "api_semantics"
    rule = _load_rule(module, monkeypatch)
    assert (rule.code, rule.symbol, rule.facts_type.__name__) == ("NNX799", "graph-only-helper", "GraphOnlyHelperFacts")
    _passes_the_rule_tests(rule, fixture)
    assert fixture_expectations(fixture) == {(8, "NNX799")}
    diagnostic = lint_bytes(rule.INVALID[0].source.encode(), "case.py", [rule])[0]
    assert diagnostic.facts == {"api": "cached_partial"}
    assert diagnostic.message == "`nnx.cached_partial(...)`: Tree Mode raises ValueError"


def _documented_command() -> list[str]:
    """The arguments of the one scaffold command CONTRIBUTING.md shows."""
    lines = [line.removeprefix("$ ") for line in CONTRIBUTING.read_text(encoding="utf-8").splitlines()
             if line.removeprefix("$ ").startswith("python -m nnx_lint.scaffold ")]
    assert len(lines) == 1, lines
    return shlex.split(lines[0])[3:]


def test_the_documented_example_uses_a_free_code_symbol_and_api():
    """The example must not collide with a rule, now or soon: its code is free and in a decade of its
    family that no rule uses, its symbol is free, and no rule module names its API."""
    args = arguments().parse_args(_documented_command())
    assert rule_by_code(args.code) is None and rule_by_symbol(args.symbol) is None
    hundred = args.code[:4]
    decades = {rule.code[:5] for rule in all_rules() if rule.code.startswith(hundred)}
    assert decades and args.code[:5] not in decades, (args.code, sorted(decades))
    named = re.compile(rf"(?<![\w-]){re.escape(args.api)}(?![\w-])")
    naming = [str(path.relative_to(REPO)) for path in (REPO / "checkers").rglob("*.py")
              if named.search(path.read_text(encoding="utf-8"))]
    assert not naming, f"`nnx.{args.api}` is some rule's subject: {naming}"
    # The rest of the walk-through names the same rule.
    text = CONTRIBUTING.read_text(encoding="utf-8").split("## Adding a rule", 1)[1].split("### 7.", 1)[0]
    assert {code for code in re.findall(r"NNX\d{3}", text) if code[:4] == args.code[:4]} == {args.code}
    assert "tabulate" not in text


def test_the_documented_command_writes_a_rule_that_passes_the_rule_tests(tmp_path, monkeypatch):
    """CONTRIBUTING.md's command, run as written (into a scratch tree with ``--repo``), writes the files
    it names, and they pass the rule tests; then they are deleted."""
    args = arguments().parse_args(_documented_command())
    family = tmp_path / "checkers" / args.family
    family.mkdir(parents=True)
    shutil.copy(REPO / "checkers" / args.family / "__init__.py", family / "__init__.py")
    done = subprocess.run([sys.executable, "-m", "nnx_lint.scaffold", *_documented_command(), "--repo", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    written = re.findall(r"^wrote (\S+)$", done.stdout, flags=re.MULTILINE)
    documented = CONTRIBUTING.read_text(encoding="utf-8")
    assert len(written) == 2 and all(f"`{path}`" in documented for path in written), (written, done.stdout)
    module, fixture = (tmp_path / path for path in written)
    try:
        rule = _load_rule(module, monkeypatch)
        assert (rule.code, rule.symbol) == (args.code, args.symbol)
        assert f" class {rule.facts_type.__name__}(Facts)`" in documented
        _passes_the_rule_tests(rule, fixture)
    finally:
        shutil.rmtree(tmp_path / "checkers")
        shutil.rmtree(tmp_path / "tests")
    assert not list(tmp_path.iterdir())


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
