"""The engine: one walk, rule failures contained, bad input reported per file."""
from __future__ import annotations

import pytest
from astroid import nodes

from checkers.prefix_filters.nnx201_state_axes_prefix import StateAxesPrefix
from nnx_lint.engine.walk import lint_bytes, lint_source
from nnx_lint.engine.registry import all_rules
from nnx_lint.analysis.rule import Rule

STATE_AXES = "from flax import nnx\nf = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"


class ExplodingRule(Rule):
    """Fault injection: a rule that fails on every call (not in checkers/, never discovered)."""

    code = "NNX999"
    symbol = "exploding-rule"
    message = "never"
    kind = "advisory"

    def visit_call(self, node: nodes.Call) -> None:
        raise RuntimeError("boom")


def test_a_failing_rule_is_reported_and_the_others_still_run():
    rules = [ExplodingRule, StateAxesPrefix, *[r for r in all_rules() if r.code == "NNX003"]]
    diagnostics = lint_source(STATE_AXES, "m.py", rules)
    codes = [d.code for d in diagnostics]
    assert codes.count("NNX003") == 1, "reported once, then the rule is skipped for the file"
    assert "NNX201" in codes
    crash = next(d for d in diagnostics if d.code == "NNX003")
    assert "NNX999" in crash.message and "RuntimeError: boom" in crash.facts["traceback"]


def test_exploding_rule_is_not_discovered():
    assert ExplodingRule not in all_rules()


def test_prefilter_skips_files_without_flax():
    # Text (flake8 and pylint parse the file first, and report its errors themselves): skipped.
    assert lint_source("def f(:\n", "m.py", all_rules()) == []
    assert lint_bytes(b"import os\n", "m.py", all_rules()) == []
    # Bytes that do not decode or parse are diagnosed whatever they name (issue 45).
    assert [d.code for d in lint_bytes(b"\xff\xfe garbage", "m.py", all_rules())] == ["NNX001"]
    assert [d.code for d in lint_bytes(b"def f(:\n", "m.py", all_rules())] == ["NNX002"]


def test_undecodable_file_points_at_the_byte():
    data = b"from flax import nnx\nx = '\xff'\n"
    (diagnostic,) = lint_bytes(data, "m.py", all_rules())
    assert (diagnostic.code, diagnostic.line, diagnostic.column) == ("NNX001", 2, 6)


def test_null_bytes_are_a_parse_failure_not_a_crash():
    (diagnostic,) = lint_bytes(b"from flax import nnx\nx = 1\x00\n", "m.py", all_rules())
    assert diagnostic.code == "NNX002"


def test_huge_file_is_skipped_with_a_diagnostic():
    data = b"from flax import nnx\n" + b"x = 1\n" * 800_000
    (diagnostic,) = lint_bytes(data, "m.py", all_rules())
    assert diagnostic.code == "NNX004" and "MiB" in diagnostic.message


def test_deeply_nested_statements_do_not_crash_the_walk():
    # 90 nested ifs parse fine but are deep for a recursive walker.
    lines = ["from flax import nnx"]
    for depth in range(90):
        lines.append("    " * depth + "if x:")
    lines.append("    " * 90 + "f = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))")
    codes = [d.code for d in lint_source("\n".join(lines) + "\n", "m.py", all_rules())]
    assert codes == ["NNX201"]


def test_noqa_blanket_and_specific():
    source = (
        "from flax import nnx\n"
        "a = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))  # noqa\n"
        "b = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))  # noqa: NNX201\n"
        "c = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))  # noqa: NNX202\n"
        "d = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))  # NOQA:NNX2\n"
    )
    found = [(d.line, d.code) for d in lint_source(source, "m.py", all_rules())]
    # all_rules() includes NNX009: line 4's NNX202 suppressed nothing.
    assert sorted(found) == [(4, "NNX009"), (4, "NNX201")]


def test_diagnostic_positions_and_url():
    (diagnostic,) = lint_source(STATE_AXES, "m.py", all_rules())
    assert (diagnostic.line, diagnostic.column, diagnostic.end_line) == (2, 26, 2)
    assert diagnostic.end_column > diagnostic.column
    assert diagnostic.url.endswith("NNX201.md")
    assert diagnostic.kind == "raises"


def test_prefilter_skips_linen_only_files():
    from nnx_lint.analysis.prefilter import mentions_nnx

    linen = "import flax.linen as nn\nclass M(nn.Module):\n    pass\n"
    assert not mentions_nnx(linen) and not mentions_nnx(linen.encode())
    assert mentions_nnx("import flax\nflax.nnx.vmap\n")
    assert lint_source(linen + "def f(:\n", "m.py", all_rules()) == []


NNX_AND_OTHER_CALLS = "from flax import nnx\nimport math\nm = nnx.Linear(2, 3, rngs=nnx.Rngs(0))\nx = math.sqrt(4)\n"


def _call_logging_rule(code: str, nnx_only: bool, log: list, explode: bool = False,
                       transform_calls_only: bool = False) -> type[Rule]:
    """A rule class (never discovered: defined here) that logs the calls it is handed."""

    def visit_call(self, node: nodes.Call) -> None:
        log.append((code, node.as_string()))
        if explode:
            raise RuntimeError("boom")

    attributes = {"code": code, "symbol": f"logging-{code}", "message": "never", "kind": "advisory",
                  "visits_nnx_calls_only": nnx_only, "visits_transform_calls_only": transform_calls_only,
                  "visit_call": visit_call}
    return type(f"Logging{code}", (Rule,), attributes)


def test_a_rule_that_visits_nnx_calls_only_is_handed_no_other_call():
    log: list = []
    rules = [_call_logging_rule("NNX991", False, log), _call_logging_rule("NNX992", True, log),
             _call_logging_rule("NNX993", False, log)]
    lint_source(NNX_AND_OTHER_CALLS, "m.py", rules)
    # the walk's order (pre-order, rules in their order) is kept; math.sqrt is no NNX call
    assert log == [
        ("NNX991", "nnx.Linear(2, 3, rngs=nnx.Rngs(0))"), ("NNX992", "nnx.Linear(2, 3, rngs=nnx.Rngs(0))"),
        ("NNX993", "nnx.Linear(2, 3, rngs=nnx.Rngs(0))"),
        ("NNX991", "nnx.Rngs(0)"), ("NNX992", "nnx.Rngs(0)"), ("NNX993", "nnx.Rngs(0)"),
        ("NNX991", "math.sqrt(4)"), ("NNX993", "math.sqrt(4)"),
    ]


TRANSFORM_AND_OTHER_CALLS = (
    "from flax import nnx\nimport math\n"
    "def loss(m):\n    return m\n"
    "step = nnx.jit(loss)\n"
    "y = step(1)\n"
    "x = math.sqrt(4)\n"
)


def test_a_rule_that_visits_transform_calls_only_is_handed_nnx_calls_and_applications():
    log: list = []
    rules = [_call_logging_rule("NNX991", False, log), _call_logging_rule("NNX992", False, log, transform_calls_only=True),
             _call_logging_rule("NNX993", False, log), _call_logging_rule("NNX994", True, log)]
    lint_source(TRANSFORM_AND_OTHER_CALLS, "m.py", rules)
    # nnx.jit(loss) is an NNX call, step(1) runs the jitted function, math.sqrt(4) is neither:
    # the rules before and after the flagged one keep their order on it
    assert log == [
        ("NNX991", "nnx.jit(loss)"), ("NNX992", "nnx.jit(loss)"), ("NNX993", "nnx.jit(loss)"), ("NNX994", "nnx.jit(loss)"),
        ("NNX991", "step(1)"), ("NNX992", "step(1)"), ("NNX993", "step(1)"),
        ("NNX991", "math.sqrt(4)"), ("NNX993", "math.sqrt(4)"),
    ]


def test_a_failing_transform_calls_only_rule_is_skipped_on_every_later_call():
    log: list = []
    rules = [_call_logging_rule("NNX992", False, log, explode=True, transform_calls_only=True),
             _call_logging_rule("NNX993", False, log), *[r for r in all_rules() if r.code == "NNX003"]]
    diagnostics = lint_source(TRANSFORM_AND_OTHER_CALLS, "m.py", rules)
    assert [d.code for d in diagnostics] == ["NNX003"]
    assert log == [("NNX992", "nnx.jit(loss)"), ("NNX993", "nnx.jit(loss)"), ("NNX993", "step(1)"),
                   ("NNX993", "math.sqrt(4)")]


def test_a_failing_nnx_calls_only_rule_is_skipped_on_every_later_call():
    log: list = []
    rules = [_call_logging_rule("NNX992", True, log, explode=True), _call_logging_rule("NNX993", True, log),
             *[r for r in all_rules() if r.code == "NNX003"]]
    diagnostics = lint_source(NNX_AND_OTHER_CALLS, "m.py", rules)
    assert [d.code for d in diagnostics] == ["NNX003"]
    assert log == [("NNX992", "nnx.Linear(2, 3, rngs=nnx.Rngs(0))"), ("NNX993", "nnx.Linear(2, 3, rngs=nnx.Rngs(0))"),
                   ("NNX993", "nnx.Rngs(0)")]


@pytest.mark.slow
@pytest.mark.parametrize(("flag", "at_least"), [("visits_transform_calls_only", 9), ("visits_nnx_calls_only", 10)])
def test_rules_that_visit_some_calls_only_find_the_same_on_every_call(flag, at_least):
    """Each flag is only an optimisation: each rule that sets it finds on the rule fixtures
    exactly what it finds when it is handed every call."""
    from pathlib import Path

    marked = [rule for rule in all_rules() if getattr(rule, flag)]
    assert len(marked) >= at_least
    every_call = [type(rule.__name__, (rule,), {flag: False}) for rule in marked]
    fixtures = sorted((Path(__file__).parent / "fixtures").glob("*/*.py"))
    for fixture in fixtures:
        text = fixture.read_text(errors="replace")
        found = [d.to_dict() for d in lint_source(text, str(fixture), marked)]
        assert found == [d.to_dict() for d in lint_source(text, str(fixture), every_call)], fixture.name
