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


@pytest.mark.slow
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


@pytest.mark.slow
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


def _longest_common_subsequence(old: list[str], new: list[str]) -> int:
    table = [[0] * (len(new) + 1) for _ in range(len(old) + 1)]
    for i, line in enumerate(old):
        for j, other in enumerate(new):
            table[i + 1][j + 1] = table[i][j] + 1 if line == other else max(table[i][j + 1], table[i + 1][j])
    return table[len(old)][len(new)]


def test_line_map_is_a_shortest_line_diff():
    """Small texts with repeated lines, edited at the ends, in the middle and everywhere: every
    line maps in order, a line kept maps to one equal line, and as many lines are kept as
    can be (the longest common subsequence)."""
    import random

    from nnx_lint.fixes.tracking import line_map

    rng = random.Random(5)
    alphabet = ["", "x = 1", "pass", "# c", "f(m)", "nnx.jit(f)"]
    for _ in range(600):
        old = [rng.choice(alphabet) for _ in range(rng.randrange(0, 25))]
        new = list(old) if rng.random() < 0.8 else [rng.choice(alphabet) for _ in range(rng.randrange(0, 25))]
        for _ in range(rng.randrange(0, 4)):
            at = rng.randrange(0, len(new) + 1)
            new[at:at + rng.randrange(0, 2)] = [rng.choice(alphabet) for _ in range(rng.randrange(0, 3))]
        mapping = line_map("".join(f"{line}\n" for line in old), "".join(f"{line}\n" for line in new))
        assert len(mapping) == len(old)
        kept = [(i, lines.start) for i, lines in enumerate(mapping)
                if len(lines) == 1 and old[i] == new[lines.start]
                and not any(other is not lines and lines.start in other for other in mapping)]
        starts = [lines.start for lines in mapping]
        assert starts == sorted(starts) and all(lines.stop <= len(new) for lines in mapping), (old, new)
        assert len(kept) == _longest_common_subsequence(old, new), (old, new, mapping)


def test_line_map_of_a_long_repetitive_file_keeps_the_lines_between_two_edits(monkeypatch):
    """27,000 identical comment lines between two edits: matched by difflib without junk, this
    took minutes (the `[*]` check of such a file timed out), and with difflib's junk heuristic
    none of them matched. The lines between the edits map one to one, difflib's matching is not
    asked, and `--diff` shows two small hunks."""
    import difflib

    from nnx_lint.fixes import tracking

    def refused(*args):
        raise AssertionError("difflib's quadratic matching was asked")

    monkeypatch.setattr(difflib.SequenceMatcher, "find_longest_match", refused)
    filler = "# padding\n" * 27_000
    before = "f = nnx.vmap(g)\n" + filler + "h = nnx.jit(k)\n"
    after = "f = nnx.vmap(\n    g, graph=True)\n" + filler + "h = nnx.jit(\n    k, graph=True)\n"
    mapping = tracking.line_map(before, after)
    assert mapping[0] == range(0, 2) and mapping[-1] == range(27_002, 27_004)
    assert all(mapping[i] == range(i + 1, i + 2) for i in range(1, 27_001))
    diff = tracking.unified_diff(before, after, "a/x.py", "b/x.py")
    assert diff.count("@@ -") == 2 and len(diff.splitlines()) == 2 + 2 * 7


def test_a_text_changed_past_the_edit_bound_is_matched_by_difflib(monkeypatch):
    from nnx_lint.fixes import tracking

    monkeypatch.setattr(tracking, "MOST_EDITS_FOLLOWED", 2)
    before = "a\nb\nc\nd\ne\nf\n"
    after = "a\nB\nc\nD\ne\nF\n"  # six line edits
    assert tracking._shortest_edit(before.split(), after.split(), 2) is None
    assert tracking.line_map(before, after) == [range(0, 1), range(1, 2), range(2, 3), range(3, 4),
                                                range(4, 5), range(5, 6)]


def _patched(before: str, diff: str) -> str:
    """``before`` with a unified diff applied (what `patch` does; no fuzz)."""
    import re

    old, out, at = before.splitlines(keepends=True), [], 0
    lines = diff.splitlines(keepends=True)[2:]
    for line in lines:
        hunk = re.match(r"@@ -(\d+)(?:,(\d+))? ", line)
        if hunk:
            start = int(hunk.group(1)) - (0 if hunk.group(2) == "0" else 1)
            out += old[at:start]
            at = start
        elif line[0] in " -":
            assert old[at] == line[1:], (old[at], line)
            at += 1
            if line[0] == " ":
                out.append(line[1:])
        else:
            out.append(line[1:])
    return "".join(out + old[at:])


def test_unified_diff_applies_and_reads_as_difflib_s():
    import difflib
    import random

    from nnx_lint.fixes.tracking import unified_diff

    pin = ("import jax\n\n\ndef f(m):\n    return m\n\n\ng = nnx.jit(f)\n\n\nh = 1\n",
           "import jax\n\n\ndef f(m):\n    return m\n\n\ng = nnx.jit(\n    f, graph=True)\n\n\nh = 1\n")
    assert unified_diff(*pin, "a/x.py", "b/x.py") == "".join(difflib.unified_diff(
        pin[0].splitlines(keepends=True), pin[1].splitlines(keepends=True), "a/x.py", "b/x.py"))
    rng = random.Random(7)
    alphabet = ["\n", "x = 1\n", "pass\n", "# c\n", "f(m)\n"]
    for _ in range(300):
        old = [rng.choice(alphabet) for _ in range(rng.randrange(0, 30))]
        new = list(old)
        for _ in range(rng.randrange(0, 5)):
            at = rng.randrange(0, len(new) + 1)
            new[at:at + rng.randrange(0, 2)] = [rng.choice(alphabet) for _ in range(rng.randrange(0, 3))]
        before, after = "".join(old), "".join(new)
        diff = unified_diff(before, after, "a/x.py", "b/x.py")
        assert (diff == "") == (before == after)
        assert _patched(before, diff) == after, (old, new, diff)
