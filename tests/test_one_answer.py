"""One answer reaches every rule: "this parameter is an Rngs" is decided once, in the class
model (``ClassModel.parameter_is_rngs``), and a shared-reference rule (NNX105: two children
store one Rngs) and a grad rule (NNX401: ``nnx.grad`` differentiates RNG state) both follow it.

Before the class model answered it for both, a parameter named ``dropout_rngs`` was an Rngs for
the shared-reference rules (their own ``name.endswith("_rngs")``) but not for the grad rules
(``name == "rngs"``): NNX105 fired and NNX401 stayed silent on the same model.
"""
from __future__ import annotations

import textwrap

import pytest

from nnx_lint.base.diagnostic import shown
from nnx_lint.engine.walk import lint_bytes
from nnx_lint.engine.registry import all_rules

_MODEL = """\
from flax import nnx


class Block(nnx.Module):
    def __init__(self, {parameter}):
        self.linear = nnx.Linear(2, 2, rngs={name})
        self.rngs = {name}


class Pair(nnx.Module):
    def __init__(self, {parameter}):
        self.first = Block({name})
        self.second = Block({name})


def loss(model, x):
    return model.first.linear(x).sum()


def train({parameter}, x):
    model = Pair({name})
    return nnx.grad(loss)(model, x)
"""


def _codes(parameter: str) -> set[str]:
    name = parameter.split(":")[0]
    source = textwrap.dedent(_MODEL.format(parameter=parameter, name=name))
    return {d.code for d in shown(lint_bytes(source.encode(), "model.py", all_rules()), strict=False)}


@pytest.mark.parametrize("parameter", ["rngs", "dropout_rngs", "rngs: nnx.Rngs", "keys: nnx.Rngs", "keys: nnx.Rngs | None"])
def test_an_rngs_parameter_reaches_the_shared_reference_and_the_grad_rules_alike(parameter):
    codes = _codes(parameter)
    assert {"NNX105", "NNX401"} <= codes, codes


@pytest.mark.parametrize("parameter", ["dropout_rngs: int", "seed"])
def test_a_parameter_that_is_not_an_rngs_reaches_neither(parameter):
    codes = _codes(parameter)
    assert not {"NNX105", "NNX401"} & codes, codes
