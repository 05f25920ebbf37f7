"""Value questions that rules and services used to answer each on their own now have one answer
in ``nnx_lint/analysis/`` (issue 43, "remove the rule-local answers"): each test asks that one
place and, where two callers used to disagree, shows both callers get the same answer."""
from __future__ import annotations

import textwrap

import astroid
from astroid import nodes

from nnx_lint.analysis.flow import bound_values, bound_values_of


def _module(source: str) -> nodes.Module:
    return astroid.parse(textwrap.dedent(source), module_name="m")


def _name_in(module: nodes.Module, name: str, line: int) -> nodes.Name:
    return next(n for n in module.nodes_of_class(nodes.Name) if n.name == name and n.lineno == line)


def test_bound_values_reads_every_plain_binding_form_through_one_reader():
    module = _module("""
        a = 1
        b: int = 2
        c, d = 3, 4
        if (e := 5):
            pass
        print(a, b, c, d, e)
        """)
    use = {name: _name_in(module, name, 7) for name in "abcde"}
    assert {name: [v.value for v in bound_values(n)] for name, n in use.items()} == \
        {"a": [1], "b": [2], "c": [3], "d": [4], "e": [5]}
    walrus = next(module.nodes_of_class(nodes.NamedExpr)).target
    assert [v.value for v in bound_values_of(walrus)] == [5]
