"""Classes that hold each other through their stores are analysed, not a RecursionError (NNX003).

Found by tests/test_fuzz.py (a line dropped from NNX101_sharing_without_variables.py): the class
model asked what ``A`` holds, which asked what ``B`` holds, which asked about ``A`` again.
"""
from __future__ import annotations

from nnx_lint.engine.walk import lint_source
from nnx_lint.engine.registry import all_rules

MUTUAL = '''
from flax import nnx


class A(nnx.Module):
    def __init__(self):
        self.b = B()


class B(nnx.Module):
    def __init__(self):
        self.a = A()


class Holder(nnx.Module):
    def __init__(self, rngs):
        self.first = A()
        self.second = self.first
        self.weights = nnx.Param(rngs.params())


def use(rngs):
    model = Holder(rngs)
    return nnx.jit(lambda m: m)(model)
'''


def test_mutually_holding_classes_are_analysed_by_every_rule():
    codes = [d.code for d in lint_source(MUTUAL, "cycle.py", all_rules())]
    assert "NNX003" not in codes
    assert "NNX104" in codes  # the rules still ran to the end of the file
