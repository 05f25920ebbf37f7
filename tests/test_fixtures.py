"""Fixtures: each file runs with only its family's rules; expectations are inline markers."""
from __future__ import annotations

import ast
import re
import sys

import pytest
from _support import FIXTURES, fixture_expectations, fixture_files, lint_fixture

from nnx_lint.base.diagnostic import KINDS


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.name)
def test_fixture(path):
    diagnostics = lint_fixture(path)
    found = {(d.line, d.code) for d in diagnostics}
    expected = fixture_expectations(path)
    missing, unexpected = expected - found, found - expected
    assert not missing and not unexpected, (
        f"missing {sorted(missing)}, unexpected "
        + "; ".join(f"{d.line}: {d.code} {d.message}" for d in diagnostics if (d.line, d.code) in unexpected)
    )
    for diagnostic in diagnostics:
        assert diagnostic.kind in KINDS
        assert diagnostic.message and "{" not in diagnostic.message.replace("{...", "")


_RUNTIME_PACKAGES = {"flax", "jax", "numpy", "optax"}
#: What once tied fixtures to files beside the repository: the specification's reproductions and their
#: helper module (written as a pattern so that a search of the repository for them finds none).
_OUTSIDE_THE_REPOSITORY = re.compile(r"\.\./shared|shared[/]spec|\b_harnes[s]\b|/work/")


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.py")), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_is_self_contained(path):
    """A fixture runs with only flax installed (`python <fixture> tree`): it imports the standard library,
    flax/jax/numpy/optax or its own package, and names nothing outside the repository."""
    source = path.read_bytes().decode("utf-8", "replace")
    assert not _OUTSIDE_THE_REPOSITORY.search(source), _OUTSIDE_THE_REPOSITORY.search(source).group(0)
    try:
        tree = ast.parse(source)
    except (SyntaxError, RecursionError):
        return  # the NNX0xx fixtures that are not Python, or nest deeper than `ast` can
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    assert imported <= _RUNTIME_PACKAGES | set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)


def test_fixture_names_say_what_they_show():
    """Named for the pattern, not for a row or reproduction number (`NNX101_repro_r01.py`)."""
    numbered = [p.name for p in fixture_files() if re.search(r"_(repro|r\d+)(_|\.py$)|_fix\.py$", p.name)]
    assert not numbered, numbered
