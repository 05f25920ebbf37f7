"""Each message names the first error Tree Mode raises on its line (issue 26).

The order is measured with flax 0.12.8 in Tree Mode: ``nnx.grad(f, argnums=(0, 1))(m, m)`` over
a Module with integer state raises ``ValueError: Duplicate ...`` (not NNX401's TypeError), and
``nnx.vmap(..., in_axes=(nnx.StateAxes(...), 0), transform_metadata=...)`` raises on its
StateAxes when the transform is created (NNX601's silent change never happens).
"""
from __future__ import annotations

import doctest
import textwrap

from nnx_lint.analysis import first_error
from nnx_lint.engine.walk import lint_source
from nnx_lint.engine.registry import all_rules

SOURCE = textwrap.dedent("""\
    import jax.numpy as jnp
    from flax import nnx

    class M(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.ones(2))
            self.count = nnx.Variable(jnp.array(0))

    def f(a, b):
        return (a.w[...] * b.w[...]).sum()

    m = M()
    nnx.grad(f, argnums=(0, 1))(m, m)
    nnx.grad(f, argnums=(0, 1))(m, M())
    nnx.vmap(lambda m, x: m.w[...] * x, in_axes=(nnx.StateAxes({...: None}), 0), transform_metadata={"p": "b"})(m, 1)
    """)


def _messages(rules) -> dict[tuple[int, str], set[str]]:
    found: dict[tuple[int, str], set[str]] = {}
    for d in lint_source(SOURCE, "m.py", rules):
        found.setdefault((d.line, d.code), set()).add(d.message)
    return found


def test_later_findings_name_the_first_error_on_their_line():
    found = _messages(all_rules())
    (nnx401,) = found[(13, "NNX401")]
    assert nnx401.endswith("Tree Mode raises TypeError; but Tree Mode raises ValueError first (NNX103)")
    assert not any("first" in m for m in found[(13, "NNX103")])
    (nnx601,) = found[(15, "NNX601")]
    assert nnx601.endswith("; but Tree Mode raises ValueError first (NNX201)")
    assert not any("first" in m for m in found[(15, "NNX201")])
    # Alone on its line, a finding names its own error.
    assert not any("first" in m for m in found[(14, "NNX401")])


def test_a_rule_that_is_off_is_not_named():
    rules = [r for r in all_rules() if r.code not in ("NNX103", "NNX201")]
    found = _messages(rules)
    assert not any("first" in m for messages in found.values() for m in messages)


def test_every_stage_is_a_known_one():
    for rule in all_rules():
        assert rule.stage is None or rule.stage in first_error.STAGES, rule.code
    assert {r.code for r in all_rules() if r.stage == "inputs-flattened"} >= {"NNX103"}


def test_doctests():
    failures, tried = doctest.testmod(first_error)
    assert tried and not failures
