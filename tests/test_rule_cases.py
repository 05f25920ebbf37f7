"""Every rule's VALID and INVALID cases, run with only that rule enabled."""
from __future__ import annotations

import pytest

from nnx_lint.base.diagnostic import shown
from nnx_lint.engine.walk import lint_bytes
from nnx_lint.engine.registry import all_rules

CASES = [
    pytest.param(rule, case, expect_findings, id=f"{rule.code}-{'invalid' if expect_findings else 'valid'}-{case.id}")
    for rule in all_rules()
    for cases, expect_findings in ((rule.INVALID, True), (rule.VALID, False))
    for case in cases
]


@pytest.mark.parametrize(("rule", "case", "expect_findings"), CASES)
def test_case(rule, case, expect_findings):
    crash_rule = [r for r in all_rules() if r.code == "NNX003"]  # a crash must show, not hide as "missing"
    diagnostics = lint_bytes(case.source.encode("utf-8"), "case.py", [rule, *crash_rule],
                             target_version=case.target_version)
    diagnostics = shown(diagnostics, strict=False)  # the cases describe the default mode
    found = {(d.line, d.code) for d in diagnostics}
    if expect_findings:
        assert case.expected(), "an INVALID case must mark the lines that fire"
        assert {code for _, code in case.expected()} == {rule.code}
        assert case.tree_mode is not None or rule.kind in ("linter", "advisory"), "say what Tree Mode does"
    else:
        assert not case.expected(), "a VALID case must not carry markers"
    assert found == case.expected(), "\n".join(f"{d.line}:{d.column} {d.code} {d.message}" for d in diagnostics)
