"""Confirmation: reproductions of INVALID cases are confirmed by both oracles, controls are not.

Each oracle runs all programs in one worker subprocess (module-scoped), as ``--confirm`` does.
``flax-graph`` (flax in graph mode) checks each builder's claim about graph mode: there a
``raises`` reproduction must run cleanly and a ``silent`` one must give ``expect_graph``.
"""
from __future__ import annotations

import json

import pytest

pytest.importorskip("jax")
pytest.importorskip("flax")

from nnx_lint.confirmation import oracle as confirmation  # noqa: E402
from nnx_lint.cli import main  # noqa: E402
from nnx_lint.confirmation.oracle import Confirmation, confirm, judge, run_programs  # noqa: E402
from nnx_lint.engine.walk import lint_bytes  # noqa: E402
from nnx_lint.engine.registry import all_rules  # noqa: E402
from nnx_lint.analysis.rule import Reproduction  # noqa: E402
from _support import partial_facts  # noqa: E402

_BUILT = [
    (rule, case, diagnostic, rule.reproduce(rule.facts_from(diagnostic.facts)))
    for rule in all_rules()
    if rule.has_reproduction()
    for case in rule.INVALID
    for diagnostic in lint_bytes(case.source.encode(), "case.py", [rule])
]
#: Findings of a rule with a builder that have no reproduction: ``reproduce`` returns the reason.
WITHOUT_REPRODUCTION = [(rule, case, built) for rule, case, _diagnostic, built in _BUILT if isinstance(built, str)]
CASES = [(rule, case, diagnostic) for rule, case, diagnostic, built in _BUILT if not isinstance(built, str)]
REPRODUCTIONS = [built for _rule, _case, _diagnostic, built in _BUILT if not isinstance(built, str)]
IDS = [f"{rule.code}-{case.id}-{diagnostic.line}" for rule, case, diagnostic in CASES]
MAIN = [r.program() for r in REPRODUCTIONS]
CONTROLS = [r.program(r.control) for r in REPRODUCTIONS if r.control]


def test_there_is_something_to_confirm():
    assert len(CASES) >= 8 and len(CONTROLS) >= 6


@pytest.fixture(scope="module", params=["tree_runtime", "flax"])
def oracle_outcomes(request):
    outcomes = run_programs(MAIN + CONTROLS, request.param)
    return request.param, outcomes[: len(MAIN)], outcomes[len(MAIN):]


@pytest.fixture(scope="module")
def graph_mode_outcomes():
    return run_programs(MAIN, "flax-graph")


@pytest.mark.parametrize(("rule", "case", "reason"), WITHOUT_REPRODUCTION,
                         ids=[f"{rule.code}-{case.id}" for rule, case, _ in WITHOUT_REPRODUCTION])
def test_a_finding_without_reproduction_says_why(rule, case, reason):
    assert isinstance(reason, str) and len(reason.split()) >= 5, reason
    assert any(c.id != case.id for c in rule.INVALID), "a rule with a builder reproduces some INVALID case"


@pytest.mark.parametrize("index", range(len(CASES)), ids=IDS)
@pytest.mark.slow
def test_invalid_case_is_confirmed(oracle_outcomes, index):
    oracle, main_outcomes, _ = oracle_outcomes
    status, evidence = judge(REPRODUCTIONS[index], main_outcomes[index])
    # an example that shows no use of its object is reproduced through nnx.jit: the pattern
    expected = "pattern-confirmed" if REPRODUCTIONS[index].stand_ins else "confirmed"
    assert status == expected, f"{oracle}: {evidence}\n{MAIN[index]}"


@pytest.mark.slow
def test_controls_are_not_confirmed(oracle_outcomes):
    oracle, _, control_outcomes = oracle_outcomes
    with_controls = [r for r in REPRODUCTIONS if r.control]
    for reproduction, outcome, program in zip(with_controls, control_outcomes, CONTROLS):
        assert outcome["status"] == "ok", f"{oracle}: the Tree Mode rewrite failed: {outcome}\n{program}"
        assert judge(reproduction, outcome)[0] == "not-confirmed"


@pytest.mark.parametrize("index", range(len(CASES)), ids=IDS)
@pytest.mark.slow
def test_graph_mode_behaves_as_the_builder_says(graph_mode_outcomes, index):
    reproduction, outcome = REPRODUCTIONS[index], graph_mode_outcomes[index]
    assert outcome["status"] == "ok", f"graph mode should run this: {outcome}"
    if not reproduction.expect_error:
        assert outcome["observation"] == reproduction.expect_graph
    assert judge(reproduction, outcome)[0] == "not-confirmed"


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_every_rule_has_a_builder_or_says_why(rule):
    reason = rule.no_reproduction_reason
    assert rule.has_reproduction() != bool(reason.strip()), (
        f"{rule.code}: a rule has a reproduction builder, or (only then) a reason why none can exist"
    )
    if reason:  # shown as "No reproduction: {reason}." on the rule page and by --confirm
        assert len(reason.split()) >= 4 and not reason.endswith("."), reason
    else:
        assert rule.reproduce(rule.facts_from(_first_diagnostic(rule).facts)) is not None


def _first_diagnostic(rule):
    return next(d for case in rule.INVALID for d in lint_bytes(case.source.encode(), "case.py", [rule]))


def test_the_base_rule_has_no_builder():
    from nnx_lint.analysis.rule import Rule

    assert Rule.reproduce({}) is None and not Rule.has_reproduction()


def test_judge_distinguishes_wrong_errors():
    expected = Reproduction("return 1", expect_error="prefix-filter")
    assert judge(expected, {"status": "raises", "category": "aliasing", "type": "ValueError", "message": "x"})[0] == "error"
    assert judge(expected, {"status": "error", "message": "does not build"})[0] == "error"
    silent = Reproduction("return 1", expect_tree=[1], expect_graph=[2])
    assert judge(silent, {"status": "ok", "observation": [3]})[0] == "error"


@pytest.mark.slow
def test_broken_program_is_an_error_not_a_drop():
    (outcome,) = run_programs(["def run(nnx):\n    return undefined_name\n"], "tree_runtime")
    assert outcome["status"] == "raises" and outcome["category"] == "other:NameError"
    (outcome,) = run_programs(["this is not python"], "tree_runtime")
    assert outcome["status"] == "error"


@pytest.mark.slow
def test_dedup_and_disk_cache(tmp_path, monkeypatch):
    rule, _case, diagnostic = next(c for c in CASES if c[0].code == "NNX201")
    calls = []
    real = confirmation.run_programs

    def counting(programs, oracle, timeout=None):
        calls.append(len(programs))
        return real(programs, oracle, timeout)

    monkeypatch.setattr(confirmation, "run_programs", counting)
    first = confirm([diagnostic, diagnostic], "tree_runtime", tmp_path)
    assert calls == [1], "identical programs run once"
    assert first[0] == first[1] and first[0].status == "confirmed"
    second = confirm([diagnostic], "tree_runtime", tmp_path)
    assert calls == [1, 0], "the second run is served from the cache"
    assert second[0] == first[0]


def test_without_jax_confirm_exits_2(tmp_path, monkeypatch, capsys):
    (tmp_path / "m.py").write_text("from flax import nnx\nf = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n")
    monkeypatch.chdir(tmp_path)
    real = confirmation.importlib.util.find_spec
    monkeypatch.setattr(confirmation.importlib.util, "find_spec", lambda name: None if name == "jax" else real(name))
    assert main(["check", "--confirm", "--no-cache"]) == 2
    error = capsys.readouterr().err
    # nnx-lint is not on a package index: the hint installs the extra the way this copy was installed
    # (an editable checkout here), never the unpublished name.
    from nnx_lint.base.install_hints import pip_install

    assert "'nnx-lint[" not in error
    assert f"--confirm needs jax: {pip_install('runtime')}" in error


@pytest.mark.slow
def test_cli_json_carries_the_verdict(tmp_path, monkeypatch, capsys):
    (tmp_path / "m.py").write_text("from flax import nnx\nf = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n")
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--confirm", "--output-format", "json"]) == 1
    (item,) = json.loads(capsys.readouterr().out)
    assert item["confirmation"]["status"] == "confirmed"
    assert "StateAxes" in item["confirmation"]["evidence"]
    assert "def run(nnx):" in item["confirmation"]["program"]
    assert main(["check", "--show-repro"]) == 1
    out = capsys.readouterr().out
    assert "[confirmed]" in out
    # The program is printed verbatim between marker lines, so it can be pasted and run.
    program = out.split("--- reproduction for NNX201 at m.py:2 ---\n", 1)[1].split("\n--- end of reproduction ---", 1)[0]
    assert program == item["confirmation"]["program"].rstrip()
    compile(program, "repro.py", "exec")


def test_confirmation_is_plain_data():
    verdict = Confirmation("confirmed", "ValueError: ...", "program")
    assert json.loads(json.dumps(verdict.to_dict()))["status"] == "confirmed"


def test_a_program_with_stand_ins_confirms_the_pattern_only():
    """A reproduction that goes beyond the finding's facts (nnx.jit standing for
    nnx.shard_map) never says "confirmed": its verdict names what stood in."""
    from checkers.shared_references.nnx103_duplicate_transform_argument import DuplicateTransformArgument

    facts = {"transform": "shard_map", "first_position": "args[0]", "second_position": "args[1]",
             "kinds": ["Module", "Module"]}
    reproduction = DuplicateTransformArgument.reproduce(partial_facts(DuplicateTransformArgument, **facts))
    assert reproduction.stand_ins == ("`nnx.jit` stands for `nnx.shard_map`",)
    raised = {"status": "raises", "category": "aliasing", "type": "ValueError", "message": "Duplicate Param"}
    status, evidence = judge(reproduction, raised)
    assert status == "pattern-confirmed" and "`nnx.jit` stands for `nnx.shard_map`" in evidence
    exact = DuplicateTransformArgument.reproduce(partial_facts(DuplicateTransformArgument, **{**facts, "transform": "jit"}))
    assert exact.stand_ins == () and judge(exact, raised)[0] == "confirmed"
    # a program that runs as graph mode would is still suspect, stand-ins or not
    assert judge(reproduction, {"status": "ok", "observation": "ran"})[0] == "not-confirmed"


@pytest.mark.slow
def test_findings_sharing_a_program_are_judged_each_with_its_own_stand_ins():
    """`nnx.jit(f)(c1, c2)` and `nnx.jit_partial(f, c1, c2)` give one program (jit stands for
    jit_partial); it runs once, but only the jit_partial finding is a pattern confirmation."""
    from checkers.shared_references.nnx103_duplicate_transform_argument import DuplicateTransformArgument

    source = (
        "import jax.numpy as jnp\nfrom flax import nnx\n\n"
        "class Container(nnx.Module):\n    def __init__(self, v):\n        self.v = v\n\n"
        "def run():\n    v = nnx.Param(jnp.ones(2))\n"
        "    nnx.jit(lambda a, b: None)(Container(v), Container(v))\n"
        "    nnx.jit_partial(lambda a, b: None, Container(v), Container(v), graph_updates=False)\n"
    )
    found = lint_bytes(source.encode(), "case.py", [DuplicateTransformArgument])
    assert [d.facts["transform"] for d in found] == ["jit", "jit_partial"]
    verdicts = confirm(found)
    assert verdicts[0].program == verdicts[1].program
    assert [verdicts[0].status, verdicts[1].status] == ["confirmed", "pattern-confirmed"]
