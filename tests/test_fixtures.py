"""Fixtures: each file runs with only its family's rules; expectations are inline markers."""
from __future__ import annotations

import sys

import pytest
from _support import fixture_expectations, fixture_files, lint_fixture

from nnx_lint.diagnostic import KINDS


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.name)
def test_fixture(path):
    if "requires-python<3.12" in path.read_bytes()[:200].decode("utf-8", "replace") and sys.version_info >= (3, 12):
        pytest.skip("the fixture's syntax is valid on Python >= 3.12")
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
