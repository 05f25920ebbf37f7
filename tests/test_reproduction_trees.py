"""Reproductions are built on syntax trees: the analysed code's names reach them intact.

Builders fill their templates with :func:`nnx_lint.base.program_syntax.filled`, which replaces
placeholder *names* on the :mod:`ast` tree, never substrings of the text. A rename done on
text turned NNX301's attribute ``OBJECTS`` into ``m.mECTS`` (the placeholder ``OBJ`` is a
prefix of it), and the finding ended as a confirmation error.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap

import pytest

from nnx_lint.confirmation.oracle import reproduction_for
from nnx_lint.engine.walk import lint_bytes
from nnx_lint.base.program_syntax import UnsafeFact, filled
from nnx_lint.engine.registry import rule_by_code
from nnx_lint.analysis.rule import Reproduction

#: Names that hold a builder's placeholder (``OBJ``, ``ATTR``, ``G``) or one of its own
#: names (``self``, ``m``) as a substring, or are one.
TRICKY = ["OBJECTS", "OBJ", "ATTR", "ATTRS", "selfish", "myself", "mm", "m_self", "Gate", "GG"]


def _programs(source: str, code: str) -> list[tuple[str, list[str]]]:
    """``(the flagged attribute, [program, control])`` of every ``code`` finding in ``source``."""
    found = []
    for diagnostic in lint_bytes(textwrap.dedent(source).encode(), "case.py", [rule_by_code(code)]):
        reproduction = reproduction_for(diagnostic)
        assert isinstance(reproduction, Reproduction), reproduction
        programs = [reproduction.program(), reproduction.program(reproduction.control)]
        found.append((diagnostic.facts.get("attribute") or diagnostic.facts.get("key"), programs))
    return found


def _attributes(program: str) -> set[str]:
    return {node.attr for node in ast.walk(ast.parse(program)) if isinstance(node, ast.Attribute)}


def test_filled_renames_whole_names_only():
    template = "def FN(OBJ, ATTR=1):\n    OBJ.ATTR += OBJ.ATTRS\n    return hasattr(OBJ, 'ATTR'), 'OBJ.ATTR'\n"
    program = filled(template, {"FN": "change", "OBJ": "m", "ATTR": "OBJECTS"})
    assert program == ("def change(m, OBJECTS=1):\n    m.OBJECTS += m.ATTRS\n"
                       "    return (hasattr(m, 'OBJECTS'), 'OBJ.ATTR')\n")


def test_filled_places_expressions_and_statements_as_trees():
    assert filled("return type(G['Gate']).__name__", expressions={"G": "grads"}) == \
        "return type(grads['Gate']).__name__\n"
    assert filled("class M:\n    BODY\n    OTHER", statements={"BODY": "x = 1\ny = 2", "OTHER": ""}) == \
        "class M:\n    x = 1\n    y = 2\n"


@pytest.mark.parametrize("name", ["x; import os", "a.b", "import", "é", "", None])
def test_filled_takes_only_plain_names(name):
    with pytest.raises(UnsafeFact):
        filled("m.ATTR", {"ATTR": name})


def _nnx301_source(name: str, in_method: bool) -> str:
    lines = ["from flax import nnx", "", "class Counter(nnx.Module):", "    def __init__(self):",
             f"        self.{name} = 0", "        self.w = nnx.Param(jnp.ones(2))"]
    if in_method:  # the change in a method the transformed function calls
        lines += ["", "    def bump(self):", f"        self.{name} += 1", "",
                  "@nnx.jit", "def step(model):", "    model.bump()"]
    else:
        lines += ["", "@nnx.jit", "def step(self):", f"    self.{name} += 1"]
    return "import jax.numpy as jnp\n" + "\n".join(lines) + "\n"


#: A name no builder text contains: the programs for it are the reference.
PLAIN = "plain_counter"


@pytest.mark.parametrize("in_method", [False, True], ids=["in-function", "in-method"])
@pytest.mark.parametrize("name", TRICKY)
def test_nnx301_keeps_tricky_attribute_names(name, in_method):
    ((flagged, programs),) = _programs(_nnx301_source(name, in_method), "NNX301")
    ((_, reference),) = _programs(_nnx301_source(PLAIN, in_method), "NNX301")
    assert flagged == name
    for program, expected in zip(programs, reference):
        # the same program as for a plain name, with the name in its place, and nothing else changed
        assert program == expected.replace(PLAIN, name)
        assert name in _attributes(program)


def test_nnx403_keeps_a_key_holding_the_gradient_placeholder():
    source = """
        import jax.numpy as jnp
        from flax import nnx

        class Net(nnx.Module):
            def __init__(self, rngs):
                self.Gate = nnx.Linear(2, 2, rngs=rngs)
            def __call__(self, x):
                return self.Gate(x)

        model = Net(nnx.Rngs(0))
        grads = nnx.grad(lambda m: jnp.sum(m(jnp.ones((1, 2)))))(model)
        kernel = grads['Gate']['kernel']  # NNX403
        """
    (found,) = _programs(source, "NNX403")
    program, control = found[1]
    assert "type(grads['Gate'])" in program and "self.Gate = nnx.Linear" in program
    assert "type(nnx.state(grads, nnx.Param)['Gate'])" in control
    assert "grads['gradsate']" not in program


@pytest.mark.slow
def test_show_repro_keeps_an_attribute_named_objects(tmp_path):
    pytest.importorskip("jax")
    (tmp_path / "counter.py").write_text(textwrap.dedent("""
        from flax import nnx

        class Counter(nnx.Module):
            def __init__(self):
                self.OBJECTS = 0

        @nnx.jit
        def step(counter):
            counter.OBJECTS += 1
        """))
    environment = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    result = subprocess.run(
        [sys.executable, "-m", "nnx_lint.cli", "check", "counter.py", "--no-cache", "--show-repro"],
        cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    assert "m.OBJECTS += 2" in result.stdout and "return m.OBJECTS" in result.stdout, result.stdout
    assert "mECTS" not in result.stdout
    assert "NNX301" in result.stdout and "[confirmed]" in result.stdout, result.stdout
