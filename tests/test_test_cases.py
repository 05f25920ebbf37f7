"""A parameterised test's transform parameter (``jit_fn``: ``jax.jit`` in one case, ``nnx.jit`` in
another) is read from its decorator, so every rule sees the NNX case, and no pin is offered there.

The positive was run with flax 0.12.8 in both modes (the ``nnx_jit`` case of flax's
``metrics_test.py::test_multimetric_split_merge_under_jit``, opt-ins removed): graph mode passes,
Tree Mode raises ``ValueError`` (the input Variables returned as outputs); the ``jax_jit`` case
passes in both. absl and pytest are not fixture imports (fixtures run with flax alone), so the
forms are linted here as text.
"""
from __future__ import annotations

import pytest

from nnx_lint.engine.registry import all_rules
from nnx_lint.engine.walk import lint_source

_BODY = """
    metrics = nnx.MultiMetric(loss=nnx.metrics.Average('loss'))
    graphdef, state = nnx.split(metrics)

    @partial(jit_fn, static_argnames=('graphdef',))
    def update_metric(graphdef, state, loss_value):
        metrics = nnx.merge(graphdef, state)
        metrics.update(loss=loss_value)
        _, new_state = nnx.split(metrics)
        return new_state

    update_metric(graphdef, state, 2.0)
"""

_HEADER = """\
from functools import partial

import jax
import pytest
from absl.testing import parameterized
from flax import nnx

"""


def _test(decorator: str, signature: str = "self, jit_fn", method: bool = True) -> str:
    """A test function (a method of a ``TestCase`` with ``method``) decorated by ``decorator``."""
    if method:
        return _HEADER + f"class T(parameterized.TestCase):\n  {decorator}\n  def test({signature}):" + _BODY
    return _HEADER + f"{decorator}\ndef test({signature}):" + _BODY


def _diagnostics(source: str):
    return [d for d in lint_source(source, "cases_test.py", all_rules()) if d.kind != "linter"]


def _findings(source: str) -> list[tuple[str, int, dict]]:
    return [(d.code, d.line, d.facts) for d in _diagnostics(source)]


def _return_line(source: str) -> int:
    return source.split("\n").index(next(line for line in source.split("\n") if "return new_state" in line)) + 1


NNX_CASES = [
    ("@parameterized.named_parameters(('jax_jit', jax.jit), ('nnx_jit', nnx.jit))", True),
    ("@parameterized.parameters(jax.jit, nnx.jit)", True),
    ("@parameterized.parameters((nnx.jit,), (jax.jit,))", True),
    ("@parameterized.named_parameters(dict(testcase_name='nnx', jit_fn=nnx.jit), "
     "{'testcase_name': 'jax', 'jit_fn': jax.jit})", True),
    ("@parameterized.product(jit_fn=[jax.jit, nnx.jit], size=[1, 2])", True),
    ("@pytest.mark.parametrize('jit_fn', [jax.jit, nnx.jit])", False),
    ("@pytest.mark.parametrize('size, jit_fn', [(1, jax.jit), pytest.param(2, nnx.jit, id='nnx')])", False),
    ("@pytest.mark.parametrize(('size', 'jit_fn'), [(1, nnx.jit)])", False),
]


@pytest.mark.parametrize(("decorator", "method"), NNX_CASES, ids=range(len(NNX_CASES)))
def test_the_nnx_case_of_a_parameterised_transform_is_linted_and_not_pinned(decorator, method) -> None:
    signature = "self, jit_fn" if method else ("jit_fn" if "'jit_fn'," in decorator else "size, jit_fn")
    if "size=" in decorator:
        signature = "self, jit_fn, size"
    source = _test(decorator, signature, method)
    findings = _findings(source)
    assert [(code, line) for code, line, _facts in findings] == [("NNX104", _return_line(source))], findings
    assert not findings[0][2].get("pin")  # a pin on `partial(jit_fn, ...)` would break the jax.jit case
    # The finding says which case it holds in: the decorator's `nnx.jit`.
    (note,) = [r for r in _diagnostics(source)[0].related if r.message.startswith("the case where")]
    assert note.message == "the case where `jit_fn` is `nnx.jit`"
    assert "nnx.jit" in source.split("\n")[note.line - 1] and "@" in source.split("\n")[note.line - 1]


NOT_KNOWN = [
    "@parameterized.named_parameters(('jit', nnx.jit), ('vmap', nnx.vmap))",  # two NNX transforms
    "@parameterized.named_parameters(('a', jax.jit), ('b', jax.jit))",  # no NNX case
    "@parameterized.named_parameters(*CASES)",  # cases built elsewhere
    "@parameterized.named_parameters(('jax', jax.jit), ('other', make_jit()))",  # a case that is not a name
    "@staticmethod",  # not parameterised at all
]


@pytest.mark.parametrize("decorator", NOT_KNOWN, ids=range(len(NOT_KNOWN)))
def test_a_parameter_whose_cases_are_not_one_nnx_transform_stays_unknown(decorator) -> None:
    assert _findings(_test(decorator)) == []


def test_the_nnx_transform_written_out_still_gets_its_pin() -> None:
    source = _test("@parameterized.named_parameters(('nnx', nnx.jit))").replace("partial(jit_fn,", "partial(nnx.jit,")
    findings = _findings(source)
    assert [(code, line) for code, line, _facts in findings] == [("NNX104", _return_line(source))]
    assert findings[0][2].get("pin")
