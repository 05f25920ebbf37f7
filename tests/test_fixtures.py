"""Fixtures: each file runs with only its family's rules; expectations are inline markers."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest
from _support import FIXTURES, REPO, fixture_expectations, fixture_files, lint_fixture, not_self_contained
from conftest import collect_ignore_glob

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


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.py")), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_is_self_contained(path):
    """A fixture runs with only flax installed (`python <fixture> tree`): it imports the standard library,
    flax/jax/numpy/optax or its own package, and names nothing outside the repository."""
    assert not_self_contained(path) is None, not_self_contained(path)


def test_fixture_names_say_what_they_show():
    """Named for the pattern, not for a row or reproduction number (`NNX101_repro_r01.py`)."""
    numbered = [p.name for p in fixture_files() if re.search(r"_(repro|r\d+)(_|\.py$)|_fix\.py$", p.name)]
    assert not numbered, numbered


@pytest.mark.slow
def test_pytest_never_collects_analysed_code():
    """The fixtures are linted, never run: pytest collects nothing under the directories of
    analysed code, even a fixture named like a test module (``..._in_a_test.py``), whose
    functions pytest would otherwise import and call (``collect_ignore_glob`` in conftest.py)."""
    analysed = [pattern.split("/")[0] for pattern in collect_ignore_glob]
    assert FIXTURES.name in analysed
    assert any(p.name.endswith("_test.py") for p in FIXTURES.rglob("*.py")), "no fixture is named like a test module"
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider",
                             *analysed], cwd=REPO / "tests", capture_output=True, text=True)
    assert result.returncode == 5 and "no tests collected" in result.stdout, result.stdout[-2000:]
