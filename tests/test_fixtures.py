"""Fixtures: each file runs with only its family's rules; expectations are inline markers."""
from __future__ import annotations

import pytest
from _support import fixture_expectations, fixture_files, lint_fixture

from nnx_lint.diagnostic import KINDS


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
