"""The pre-commit hook, run as a user would: ``pre-commit try-repo <this repo> nnx-lint``.

try-repo installs the hook into a fresh virtualenv (nnx-lint from this repository, its
dependencies from the package index), so this runs once, on a throw-away git repository
holding one file with a finding, one clean file and one configured exclude.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from _support import REPO

pre_commit = pytest.importorskip("pre_commit", reason="pre-commit is not installed (pip install -e '.[test]')")
import yaml  # noqa: E402 - a dependency of pre-commit

BAD = "from flax import nnx\nf = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"
GOOD = "from flax import nnx\nf = nnx.vmap(g, in_axes=(0,))\n"


def test_hook_definition():
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    (hook,) = hooks
    assert hook["id"] == "nnx-lint" and hook["language"] == "python"
    assert {"python", "jupyter"} <= set(hook["types_or"])
    assert hook["entry"].split()[:3] == ["nnx-lint", "check", "--force-exclude"]
    assert hook["require_serial"] is True


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_try_repo_reports_the_finding_and_fails(tmp_path):
    target = tmp_path / "project"
    target.mkdir()
    (target / "bad.py").write_text(BAD)
    (target / "good.py").write_text(GOOD)
    (target / "vendored").mkdir()
    (target / "vendored" / "bad_too.py").write_text(BAD)
    (target / "pyproject.toml").write_text('[tool.nnx-lint]\nexclude = ["vendored"]\n')
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=target, check=True)
    subprocess.run([*git, "add", "."], cwd=target, check=True)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "PRE_COMMIT_COLOR": "never"}
    env.pop("PYTHONPATH", None)
    result = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(REPO), "nnx-lint", "--all-files", "--verbose"],
        cwd=target, capture_output=True, text=True, env=env, timeout=900,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "bad.py:2:26: NNX201" in output, output
    assert "good.py:" not in output, output
    assert "vendored/bad_too.py" not in output, "--force-exclude applies the configured exclude"
    assert "Found 1 diagnostic in 1 file" in output, output
