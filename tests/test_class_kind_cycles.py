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


#: Found on avitai/artifex (tests/utils/test_models.py): two classes whose methods of the same name
#: call that name on a parameter. The class of ``rngs`` asked the callers of ``A.sample``, whose
#: receiver's class asked the callers of ``B.sample``, and so on: the receiver question restarted
#: its depth at 0 each time.
SAME_NAMED_METHODS = '''
from flax import nnx


class A(nnx.Module):
    def sample(self, *, rngs=None):
        return rngs.sample()


class B(nnx.Module):
    def sample(self, *, rngs=None):
        return rngs.sample()
'''


def test_methods_calling_their_own_name_on_a_parameter_are_analysed_by_every_rule():
    codes = [d.code for d in lint_source(SAME_NAMED_METHODS, "same_named.py", all_rules())]
    assert codes == []
