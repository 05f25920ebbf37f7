"""Issue 45: the summary lines agree in number, through the installed console script."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

NNX_LINT = str(Path(sys.executable).with_name("nnx-lint"))
BAD = "from flax import nnx\nf = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"


def _check(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([NNX_LINT, "check", "--no-cache", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_one_finding_and_one_baselined_finding_are_singular(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    found = _check(tmp_path, "bad.py").stdout
    assert "Found 1 diagnostic in 1 file (1 raises in Tree Mode; 1 file checked)." in found, found
    assert _check(tmp_path, "--write-baseline", "base.json", "bad.py").returncode == 0
    baselined = _check(tmp_path, "--baseline", "base.json", "bad.py")
    assert baselined.returncode == 0 and "1 of 1 baselined finding remains." in baselined.stdout, baselined.stdout
    (tmp_path / "two.py").write_text(BAD + BAD.split("\n", 1)[1])
    two = _check(tmp_path, "two.py").stdout
    assert "(2 raise in Tree Mode; 1 file checked)." in two, two
