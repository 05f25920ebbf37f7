"""Dotted flax / jax / optax names are written only in the flax table (issue 25).

Rules and the analysis name a constant of :mod:`nnx_lint.flax_table.names` (or another table
module) instead of spelling ``"jax.tree.map"`` themselves, so that one list answers "which
functions are tree maps?" and ``tests/test_flax_table.py`` can hold every name to the installed
libraries. The gate and the fixes are outside this rule (they write and read flax source text).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from nnx_lint.flax_table import names
from _support import resolve_dotted

_ROOT = Path(__file__).resolve().parents[1]
#: A whole string that is a dotted name of flax, jax or optax, or a prefix of one (``"flax.nnx."``).
_DOTTED = re.compile(r"^(flax|jax|optax)\.([A-Za-z_]\w*(\.[A-Za-z_]\w*)*\.?)?$")
#: Where such names may be written: the table, and the two packages that handle flax source text.
_EXEMPT = ("nnx_lint/flax_table/", "nnx_lint/gate/", "nnx_lint/fixes/")


def dotted_constants(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of each string constant of ``source`` that is a dotted library name
    (docstrings aside; an f-string's literal parts count, a message that mentions a name does not)."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
            and _DOTTED.match(node.value)]


def test_the_scan_finds_a_dotted_name():
    source = 'def f():\n    """Uses "jax.tree.map"."""\n    return name in ("jax.tree.map", "see jax.tree.map")\n'
    assert dotted_constants(source) == [(3, "jax.tree.map")]
    assert dotted_constants('x = f"flax.nnx.{name}"\n') == [(1, "flax.nnx.")]
    assert dotted_constants('x = "numpy.float32"\n') == []


def _checked_files() -> list[Path]:
    files = []
    for top in ("nnx_lint", "checkers"):
        for path in sorted((_ROOT / top).rglob("*.py")):
            if not path.relative_to(_ROOT).as_posix().startswith(_EXEMPT):
                files.append(path)
    return files


@pytest.mark.slow
def test_no_dotted_library_name_is_written_outside_the_table():
    found = [f"{path.relative_to(_ROOT).as_posix()}:{line}: {text!r}"
             for path in _checked_files() for line, text in dotted_constants(path.read_text())]
    assert not found, "write these as constants of nnx_lint/flax_table/names.py:\n" + "\n".join(found)


def _dotted_values() -> set[str]:
    """Every dotted name the names table holds, by value (computed sets included)."""
    found: set[str] = set()
    for key, value in vars(names).items():
        if not key.isupper():
            continue
        items = value if isinstance(value, (tuple, frozenset, set, dict)) else (value,)
        found |= {item for item in items if isinstance(item, str) and _DOTTED.match(item)}
    return found


@pytest.mark.parametrize("name", sorted(_dotted_values() - names.OLDER_RELEASE_NAMES))
def test_every_name_of_the_names_table_resolves(name):
    """Each name (a prefix without its dot) is a module or an attribute of one in the installed
    flax / jax / optax."""
    resolve_dotted(name)


def test_older_release_names_are_gone_from_todays_libraries():
    """The exemption is only for names today's releases dropped: one that resolves again must
    leave :data:`OLDER_RELEASE_NAMES`."""
    import importlib

    for name in names.OLDER_RELEASE_NAMES - {"flax.experimental.nnx"}:
        module, _, attribute = name.rpartition(".")
        try:
            present = hasattr(importlib.import_module(module), attribute)
        except ImportError:
            present = False
        assert not present, name
