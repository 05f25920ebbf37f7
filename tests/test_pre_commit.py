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
from _support import NEW_FINDING, NEW_USE, REPO, TIED

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
@pytest.mark.slow
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


def _snapshot_of_this_checkout(destination):
    """A git repository holding this checkout's files as they are now (committed or not),
    as ``pre-commit try-repo`` builds one: ``(path, commit)`` for a ``repo:``/``rev:`` pair."""
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=REPO, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=destination, check=True)
    subprocess.run([*git, "add", "-A"], cwd=destination, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "snapshot"], cwd=destination, check=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=destination, check=True, capture_output=True, text=True)
    return destination, commit.stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.slow
def test_a_commit_with_an_unrelated_edit_passes_the_hook_with_a_baseline(tmp_path):
    """The README's hook with ``args: [--baseline, ...]``, installed with ``pre-commit install``
    and run by ``git commit``: a new use of a class elsewhere in the file must not re-report
    its baselined findings; a new finding is still rejected."""
    hook_repo, commit = _snapshot_of_this_checkout(tmp_path / "hook-repo")
    target = tmp_path / "project"
    target.mkdir()
    (target / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    (target / "model.py").write_text(TIED)
    (target / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{
        "repo": str(hook_repo), "rev": commit,
        "hooks": [{"id": "nnx-lint", "args": ["--baseline", "nnx-lint-baseline.json"]}],
    }]}))
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "PRE_COMMIT_COLOR": "never"}
    env.pop("PYTHONPATH", None)
    written = subprocess.run([sys.executable, "-m", "nnx_lint.cli", "check", ".", "--write-baseline",
                              "nnx-lint-baseline.json"], cwd=target, capture_output=True, text=True,
                             env={**env, "PYTHONPATH": str(REPO)})
    assert written.returncode == 0 and "wrote 2 findings" in written.stderr, written.stderr
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=target, check=True)
    subprocess.run([*git, "add", "."], cwd=target, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "baseline"], cwd=target, check=True)
    subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=target, check=True, env=env,
                   capture_output=True)

    def commit_edit(text):
        (target / "model.py").write_text(text)
        return subprocess.run([*git, "commit", "-am", "edit"], cwd=target, capture_output=True, text=True,
                              env=env, timeout=900)

    unrelated = commit_edit(TIED + NEW_USE)
    assert unrelated.returncode == 0, unrelated.stdout + unrelated.stderr
    assert "nnx-lint" in unrelated.stdout + unrelated.stderr and "Passed" in unrelated.stdout + unrelated.stderr
    new = commit_edit(TIED + NEW_USE + NEW_FINDING)
    output = new.stdout + new.stderr
    assert new.returncode != 0 and "Failed" in output, output
    assert "model.py:22:29: NNX201" in output and "NNX101" not in output and "NNX301" not in output, output


def _documented_configs() -> list[tuple[str, str]]:
    """The ``.pre-commit-config.yaml`` blocks the documents give (marked ``<!-- pre-commit-config -->``)."""
    import re

    found = []
    for name in ("README.md", "docs/migration.md"):
        text = (REPO / name).read_text()
        found += [(name, block) for block in re.findall(r"<!-- pre-commit-config -->\n```yaml\n(.*?)```", text,
                                                          flags=re.DOTALL)]
    return found


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize("document", ["README.md", "docs/migration.md"])
def test_the_documented_local_hook_works_as_written(tmp_path, document):
    """Issue 45: the documents' configuration runs when copied as written, with nnx-lint installed in
    the environment pre-commit runs in (this one): a ``repo: local`` hook, no unpublished address."""
    (config,) = [block for name, block in _documented_configs() if name == document]
    assert "github.com" not in config and yaml.safe_load(config)["repos"][0]["repo"] == "local"
    target = tmp_path / "project"
    target.mkdir()
    (target / "bad.py").write_text(BAD)
    (target / "good.py").write_text(GOOD)
    (target / ".pre-commit-config.yaml").write_text(config)
    if "nnx-lint-baseline.json" in config:  # README's: only new findings block a commit
        (target / "nnx-lint-baseline.json").write_text('{"version": 2, "findings": []}')
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=target, check=True)
    subprocess.run([*git, "add", "."], cwd=target, check=True)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "PRE_COMMIT_COLOR": "never",
           "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    result = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files", "--verbose"], cwd=target,
                            capture_output=True, text=True, env=env, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "bad.py:2:26: NNX201" in output and "good.py:" not in output, output
