"""Reads of ``self.x`` that only see the value the method stored just before
(``nnx_lint/analysis/objects/field_reads.py``): modelled on maxtext's ``CompressedAttention``,
which replaces its base class's rotary embedding and then hands it to a compressor. Both
programs were run with flax 0.12.8 in both modes: the first runs in Tree Mode, the second raises
``ValueError: Duplicate RngCount``."""
from __future__ import annotations

import textwrap

import pytest
from astroid import extract_node, nodes

from nnx_lint.analysis.objects.field_reads import dominating_stores
from nnx_lint.base.diagnostic import shown
from nnx_lint.engine.registry import all_rules
from nnx_lint.engine.walk import lint_bytes

LAYERS = """
import jax.numpy as jnp
from flax import nnx


class Rotary(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.rngs = rngs


class DeepSeekRotary(nnx.Module):
    def __init__(self, theta: float):
        self.theta = theta


class Compressor(nnx.Module):
    def __init__(self, rotary, rngs: nnx.Rngs):
        self.rngs = rngs
        self.rotary = rotary
        self.proj = nnx.Linear(2, 2, rngs=rngs)


class Attention(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.rotary = Rotary(rngs)


class CompressedAttention(Attention):
    def __init__(self, rngs: nnx.Rngs):
        super().__init__(rngs)
{body}

model = CompressedAttention(nnx.Rngs(0))
y = nnx.jit(lambda m, x: m.compressor.proj(x))(model, jnp.ones(2))
"""

REPLACED_THEN_HANDED_ON = """\
        self.rotary = DeepSeekRotary(160000.0)
        self.compressor = Compressor(self.rotary, rngs)"""

HANDED_ON_THEN_REPLACED = """\
        self.compressor = Compressor(self.rotary, rngs)
        self.rotary = DeepSeekRotary(160000.0)"""


def _nnx105(tmp_path, body):
    path = tmp_path / "layers.py"
    path.write_text(LAYERS.format(body=body))
    rules = [rule for rule in all_rules() if rule.code == "NNX105"]
    return [d.line for d in shown(lint_bytes(path.read_bytes(), str(path), rules), strict=False)]


def test_a_compressor_given_the_replacement_holds_no_second_rngs(tmp_path):
    assert _nnx105(tmp_path, REPLACED_THEN_HANDED_ON) == []


def test_a_compressor_given_the_base_rotary_holds_its_rngs_twice(tmp_path):
    assert _nnx105(tmp_path, HANDED_ON_THEN_REPLACED) == [19]


def _reads(source):
    """The reads of ``self.x`` in the method, each with the text of the value it sees (or None)."""
    method = extract_node(textwrap.dedent(source))
    method = method if isinstance(method, nodes.FunctionDef) else next(method.mymethods())
    found = dominating_stores(method)
    return [(read.lineno, found[id(read)].as_string() if id(read) in found else None)
            for read in method.nodes_of_class(nodes.Attribute)
            if isinstance(read.expr, nodes.Name) and read.expr.name == "self"]


@pytest.mark.parametrize(("source", "expected"), [
    ("""
    class A:
        def f(self, flag):
            self.x = 1
            if flag:
                use = self.x
            return self.x
    """, [(6, "1"), (7, "1")]),
    # a call may store anything: the read after it sees the field
    ("""
    class A:
        def f(self):
            self.x = 1
            helper(self)
            return self.x
    """, [(6, None)]),
    # stored in one arm only: the read after the `if` sees the field
    ("""
    class A:
        def f(self, flag):
            if flag:
                self.x = 1
            else:
                pass
            return self.x
    """, [(8, None)]),
    # stored in both arms with the same value only when it is the same store
    ("""
    class A:
        def f(self, flag):
            self.x = 2
            if flag:
                self.x = 1
            return self.x
    """, [(7, None)]),
    # a loop body runs after itself: a store later in the loop reaches the read at its top
    ("""
    class A:
        def f(self, items):
            self.x = 1
            for item in items:
                use = self.x
                self.x = item
            return self.x
    """, [(6, None), (8, None)]),
    # through another name, the store may be to this object
    ("""
    class A:
        def f(self, other):
            self.x = 1
            other.x = 2
            return self.x
    """, [(6, None)]),
    # `self` rebound: not the receiver any more
    ("""
    class A:
        def f(self):
            self.x = 1
            self = make()
            return self.x
    """, [(6, None)]),
])
def test_a_read_sees_the_store_only_when_every_path_reaches_it_through_that_store(source, expected):
    assert _reads(source) == expected
