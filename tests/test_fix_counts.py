"""What ``--fix`` / ``--diff`` report (issue 27, item 8): the count is the findings that are
gone, the ``[*]`` markers and the fixable hint agree with it, and ``--diff`` prints the diff
before ``Would fix N``, as Ruff does. Run as a user runs it: the console script."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from test_ruff_conventions import check, nnx_lint_executable

pytest.importorskip("libcst")

#: One NNX301 (``self.count += 1`` under ``nnx.grad``) whose fix takes edits at three calls, in
#: two passes: the grad and its enclosing ``@nnx.jit`` first, then the other ``@nnx.jit`` the
#: re-lint still reports. Counting edits (or per pass) says 2; one finding is gone.
SEVERAL_EDITS_ONE_FINDING = '''\
import jax.numpy as jnp
from flax import nnx


class Counter(nnx.Module):
    def __init__(self):
        self.count = jnp.array(0)
        self.w = nnx.Param(jnp.ones(3))

    def __call__(self, x):
        self.count += 1
        return x @ self.w


@nnx.jit
def train_step(model, x):
    grads = nnx.grad(lambda m: m(x))(model)
    return grads


@nnx.jit
def test_step(model, x):
    return model(x)
'''

#: Two findings (NNX201, NNX601), each fixed by one edit: the count stays 2.
TWO_FINDINGS = ("from flax import nnx\n"
                "f = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"
                "h = nnx.vmap(g, transform_metadata={nnx.PARTITION_NAME: 'l'})\n")


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    (tmp_path / "model.py").write_text(SEVERAL_EDITS_ONE_FINDING)
    return tmp_path


def _findings(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if re.match(r"model\.py:\d+:\d+: NNX", line)]


def test_the_count_is_the_findings_gone_not_the_edits(project):
    report = check(project, "model.py")
    findings = _findings(report.stdout)
    assert [line.split()[1] for line in findings] == ["NNX301"], report.stdout
    assert all(" [*] " in line for line in findings)
    assert "[*] 1 fixable with the `--fix` option." in report.stdout

    diff = check(project, "model.py", "--diff")
    assert diff.returncode == 1, diff.stderr
    assert diff.stdout.count("+@nnx.jit(graph=True, graph_updates=True)") == 2  # several edits ...
    assert "graph=True, graph_updates=True)(model)" in diff.stdout
    assert "Would fix 1 diagnostic (NNX301: 1)." in diff.stderr  # ... one finding

    fixed = check(project, "model.py", "--fix")
    assert "Fixed 1 diagnostic (NNX301: 1)." in fixed.stderr
    assert _findings(fixed.stdout) == []


def test_markers_hint_and_count_agree_on_several_findings(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    (tmp_path / "model.py").write_text(TWO_FINDINGS)
    report = check(tmp_path, "model.py")
    marked = [line for line in _findings(report.stdout) if " [*] " in line]
    assert len(marked) == 2, report.stdout
    assert "[*] 2 fixable with the `--fix` option." in report.stdout
    assert "Would fix 2 diagnostics (NNX201: 1, NNX601: 1)." in check(tmp_path, "model.py", "--diff").stderr


def test_diff_comes_before_would_fix(project):
    """Both streams into one pipe, as a terminal or a CI log shows them: the diff, then the count."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    merged = subprocess.run([nnx_lint_executable(), "check", "--no-cache", "--diff", "model.py"], cwd=project,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=300)
    lines = merged.stdout.splitlines()
    assert lines[0] == "--- a/model.py", merged.stdout
    assert lines[-1] == "Would fix 1 diagnostic (NNX301: 1).", merged.stdout
    assert all(not line.startswith("Would fix") for line in lines[:-1])
