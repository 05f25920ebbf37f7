"""``may_leave``: could a value reach other code, or is it only read where it is made (issue 26)."""
from __future__ import annotations

import doctest
import textwrap

import astroid
import pytest
from astroid import nodes

from nnx_lint.analysis import value_uses
from nnx_lint.analysis.value_uses import may_leave


def _made(source: str) -> nodes.Call:
    """The one ``make(...)`` call of ``source``."""
    module = astroid.parse(textwrap.dedent(source))
    (call,) = [c for c in module.nodes_of_class(nodes.Call) if c.func.as_string() == "make"]
    return call


@pytest.mark.parametrize("source", [
    "def f():\n    x = make()\n",
    "def f(p):\n    x = make()\n    return x.lookup(p)\n",
    "def f(p):\n    x = p if p else make()\n    for k in p:\n        print(x[k])\n",
    "def f(p):\n    x = make()\n    if x == p:\n        return 1\n",
    "def f(p):\n    x = make()\n    y = x\n    return y.attr\n",
    "def f(p):\n    x = make()\n    def g():\n        return x.attr\n    return g\n",
], ids=["dead", "method", "subscript-in-loop", "compared", "through-a-name", "read-in-closure"])
def test_values_only_read_stay(source):
    assert not may_leave(_made(source))


@pytest.mark.parametrize("source", [
    "def f():\n    return make()\n",
    "def f():\n    yield make()\n",
    "def f(g):\n    return g(make())\n",
    "def f(g):\n    return g(key=make())\n",
    "def f(self):\n    self.x = make()\n",
    "def f():\n    x = make()\n    return (x, 1)\n",
    "def f(g):\n    x = {'a': make()}\n    g(x)\n",
    "def f():\n    x = make()\n    y = x\n    return y\n",
    "x = make()\n",
    "def f():\n    global x\n    x = make()\n",
    "class C:\n    x = make()\n",
    "def f(p):\n    a, b = make(), p\n",
    "def f(d):\n    d['k'] = make()\n",
    "def f(x=make()):\n    pass\n",
    "def f():\n    x = make()\n    return lambda: x\n",
    "def f(g):\n    x = make()\n    g(*[x])\n",
], ids=["returned", "yielded", "argument", "keyword", "stored-on-self", "in-returned-tuple", "in-passed-dict",
        "through-a-name", "module-global", "declared-global", "class-attribute", "unpacked", "stored-in-item",
        "default", "closure-returns-it", "starred-argument"])
def test_values_that_may_reach_other_code_leave(source):
    assert may_leave(_made(source))


def test_doctests():
    failures, tried = doctest.testmod(value_uses)
    assert tried and not failures


@pytest.mark.parametrize("source", [
    "def f(scan, n):\n    axes = make()\n    in_axes = (axes,) + (axes,) * n + (0,)\n    return scan(in_axes=in_axes)\n",
    "def f(g):\n    axes = [make()]\n    g(axes[0])\n",
    "def f(g):\n    axes = {'a': make()}\n    g(axes.get('a'))\n",
    "def f(g):\n    for a in [make()]:\n        g(a)\n",
], ids=["tuple-sum-passed-on", "element-passed-on", "method-of-container", "iterated"])
def test_a_container_holding_the_value_hands_it_on(source):
    """datarax's pipeline.py builds ``in_axes = (state_axes,) + ...`` for ``nnx.scan``."""
    assert may_leave(_made(source))
