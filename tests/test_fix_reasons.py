"""Issue 45: why findings have no fix, on one summary line, through the installed console script."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

NNX_LINT = str(Path(sys.executable).with_name("nnx-lint"))
PREFIX_FILTER = "from flax import nnx\nf = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"
OLD_FLAX = '[project]\nname = "demo"\ndependencies = ["flax>=0.12.5"]\n'
NOTE = ("No fix for 1 finding: its pin fix needs flax>=0.12.6, and this project's flax is 0.12.5 (`flax>=0.12.5` in "
        "pyproject.toml [project] dependencies); require flax>=0.12.6, or set `flax-version` under `[tool.nnx-lint]` "
        "to the flax the project runs on.")


def _check(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([NNX_LINT, "check", "--no-cache", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_a_flax_floor_too_low_for_the_pin_is_said_in_check_diff_and_show_help(tmp_path):
    (tmp_path / "pyproject.toml").write_text(OLD_FLAX)
    (tmp_path / "bad.py").write_text(PREFIX_FILTER)
    done = _check(tmp_path, "bad.py")
    assert done.returncode == 1 and done.stdout.rstrip("\n").split("\n")[-1] == NOTE, done.stdout
    assert "[*]" not in done.stdout
    # `--diff` no longer says only "No fixes available.": the next line says why.
    diff = _check(tmp_path, "--diff", "bad.py")
    assert diff.stdout == "" and diff.stderr.split("\n")[:2] == ["No fixes available.", NOTE], diff.stderr
    # The rule's help ends without a full stop: the note is its own sentence.
    shown = _check(tmp_path, "--show-help", "bad.py").stdout
    assert "`nnx.compat.vmap`. No pin fix: `nnx.vmap` takes `graph_updates=`" in shown, shown
    # -q drops it with the other summary lines; the setting it names gives the fix back.
    assert NOTE not in _check(tmp_path, "-q", "bad.py").stdout
    (tmp_path / "pyproject.toml").write_text(OLD_FLAX + '[tool.nnx-lint]\nflax-version = "0.12.6"\n')
    fixed = _check(tmp_path, "bad.py").stdout
    assert "No fix for" not in fixed and "[*] 1 fixable" in fixed, fixed
