"""``flow.class_definitions``: the classes a name may be bound to, without a lookup for most names.

The short cut (no scope in reach binds the name to a class, no builtin has it: no lookup) must
never change an answer. Each test compares it with astroid's own lookup on every name read in
a module built to hit the edges: a class shadowed later, a class of an enclosing scope read
from a nested function, a builtin class, a class body's name (invisible from its methods),
a name bound both ways, comprehension and lambda scopes.
"""
from __future__ import annotations

import textwrap

import astroid
from astroid import nodes

from nnx_lint.analysis.flow import class_definitions, lookup

EDGES = textwrap.dedent("""
    import functools

    class Model:
        Inner = int
        def step(self):
            return Inner, Model.step, str.join, self

    def outer():
        class Local:
            pass
        def inner():
            return Local, [Local for _ in range(3)], (lambda: Local)()
        Local = 3
        return inner, Local

    def shadowed():
        print(Model)
        Model = None
        return Model

    def maybe(flag):
        Thing = functools.partial if flag else None
        if flag:
            class Thing:
                pass
        return Thing, dict, list.append, object, Exception, undefined_name

    Later = Model
    class Later:
        pass
    value = Later, Model
""")


def _names(module: nodes.Module) -> list[nodes.Name]:
    return list(module.nodes_of_class(nodes.Name))


def test_the_short_cut_gives_the_lookups_answer_for_every_name():
    module = astroid.parse(EDGES)
    checked = 0
    for name in _names(module):
        expected = [binding for binding in lookup(name)[1] if isinstance(binding, nodes.ClassDef)]
        assert class_definitions(name) == expected, f"{name.name} at line {name.lineno}"
        checked += 1
    assert checked > 25


def test_the_edges_are_really_there():
    # What the comparison above covers: classes found, classes not found, and builtins.
    module = astroid.parse(EDGES)
    found = {(name.name, name.lineno): [c.name for c in class_definitions(name)] for name in _names(module)}
    assert found[("Model", 7)] == ["Model"]
    assert found[("Inner", 7)] == []  # a class body's names are not visible from its methods
    assert found[("str", 7)] == ["str"]  # a builtin class
    assert found[("Model", 18)] == ["Model"]  # read before the function's own `Model = None`
    assert found[("Model", 20)] == []
    assert found[("Thing", 27)] == ["Thing"]  # bound both ways: the class is among the answers
    assert found[("functools", 23)] == []
    assert found[("undefined_name", 27)] == []
