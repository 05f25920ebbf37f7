"""Newer syntax read on any Python, and target-version, on the running Python (no subprocess).

``test_python_versions.py`` runs the same as a user does, and across interpreters.
"""
from __future__ import annotations

import ast
import textwrap

import pytest
from test_python_versions import NEWER

from nnx_lint.engine.walk import lint_source
from nnx_lint.engine.registry import all_rules
from nnx_lint.base.syntax.constructs import find_newer_syntax, lowered
from nnx_lint.base.syntax.target import requires_python_lower_bound

NEWER_CONSTRUCTS = {(4, "`type` alias statements"), (7, "generic functions `def f[T](...)`"),
                    (18, "PEP 701 f-strings"), (20, "PEP 701 f-strings"), (23, "`except*` clauses")}


def _codes(diagnostics):
    return sorted((d.line, d.code) for d in diagnostics)


def test_every_construct_is_found_with_its_version():
    found = {(c.line, c.feature.split(" (")[0]) for c in find_newer_syntax(NEWER)}
    assert found == NEWER_CONSTRUCTS


@pytest.mark.parametrize("source", [
    NEWER,
    'x = f"{f"{d["k"]}"}"\n',  # three levels of one quote: no older f-string, the tuple of its fields
    'y = ("a" f"{d["k"]!r:>{w}}"\n     "b")\n',
    'z = f"{\n    d  # a comment in a field\n}"\n',
    "class Box[T = int](Base):\n    pass\n",
    "type Pair[A, B] = tuple[A, B]\nv = m[*shape]\ndef g(*args: *Ts): pass\n",
])
def test_older_spelling_keeps_every_position_and_parses_on_310(source):
    spelled = lowered(source, find_newer_syntax(source), (3, 10))
    assert len(spelled) == len(source)
    assert [len(line) for line in spelled.splitlines()] == [len(line) for line in source.splitlines()]
    ast.parse(spelled, feature_version=(3, 10))


def test_look_alikes_are_not_newer_syntax():
    source = textwrap.dedent('''\
        type = "str"  # a name called type
        doc = "type X = int; def f[T](): pass"
        # except* ValueError
        values = [*a, *b]
        call(x, *args)
        match point:
            case [*rest]:
                pass
        label = f'{d["k"]}' + f"{x!r:>10}"
    ''')
    assert find_newer_syntax(source) == ()


def test_lowered_file_gives_the_findings_of_the_native_parse():
    """The older spelling is analysed as the original: on 3.12+ the original parses natively."""
    rules = [rule for rule in all_rules() if not rule.engine_reported]
    spelled = lowered(NEWER, find_newer_syntax(NEWER), (3, 10))
    native = lint_source(NEWER, "m.py", rules)
    assert _codes(native) == _codes(lint_source(spelled, "m.py", rules)) == [(14, "NNX104")]


def test_newer_than_target_is_nnx002_at_each_use_and_the_file_is_still_analysed():
    found = lint_source(NEWER, "m.py", all_rules(), target_version=(3, 11))
    assert _codes(found) == [(4, "NNX002"), (7, "NNX002"), (14, "NNX104"), (18, "NNX002"), (20, "NNX002")]
    assert "need Python >= 3.12, newer than the target version 3.11" in found[0].message
    assert _codes(lint_source(NEWER, "m.py", all_rules(), target_version=(3, 10)))[-1] == (23, "NNX002")
    assert _codes(lint_source(NEWER, "m.py", all_rules(), target_version=(3, 12))) == [(14, "NNX104")]


def test_a_real_syntax_error_is_still_reported_at_its_place():
    found = lint_source('from flax import nnx\nx = f"{d["k"]}"\ny = (\n', "m.py", all_rules())
    assert [(d.line, d.code) for d in found] == [(3, "NNX002")]


@pytest.mark.parametrize(("specifier", "bound"), [
    (">=3.11", (3, 11)), (">=3.10,<3.14", (3, 10)), ("~=3.12.1", (3, 12)), (">3.10", (3, 10)),
    ("==3.13.*", (3, 13)), ("<4", None), (">=3.9, >=3.11", (3, 11)),
])
def test_requires_python_lower_bound(specifier, bound):
    assert requires_python_lower_bound(specifier) == bound
