"""File selection follows git: ``.gitignore`` never hides a file git tracks (issue 44, c1).

A pull request can commit a ``.gitignore`` that ignores ``*.py``; git still tracks (and
runs) the code, so a run that skipped it would give a false "All checks passed". Each test
builds a real git repository and runs the real ``nnx-lint`` console script, as on CI, and
checks both halves: the tracked file is linted, and an untracked file the patterns ignore
is still skipped (the ``respect-gitignore`` semantics for untracked files are unchanged).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nnx_lint.engine.discovery.tracked import TrackedFiles, git_listing

FINDING = "from flax import nnx\nx = nnx.StateAxes({nnx.Param: 0})\nf = nnx.vmap(lambda m: m, in_axes=(x,))\n"
NNX_LINT = str(Path(sys.executable).parent / "nnx-lint")

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", "-c", "protocol.file.allow=always",
                    *args], cwd=cwd, check=True, capture_output=True)


def commit(repo: Path, *paths: str) -> None:
    """``git add -f`` (past the ignore files, as a pull request's author can) and commit."""
    git("add", "-f", *paths, cwd=repo)
    git("commit", "-qm", "pr", cwd=repo)


def checked_files(repo: Path, *options: str, env: dict | None = None) -> tuple[int, str]:
    """The exit status and output of ``nnx-lint check --isolated .`` (the untrusted-PR command):
    one line per finding, so a file holding :data:`FINDING` is named when it was checked."""
    result = subprocess.run([NNX_LINT, "check", "--isolated", ".", "--no-cache", "-j1", "--output-format", "concise",
                             *options],
                            cwd=repo, capture_output=True, text=True, timeout=300, env=env)
    return result.returncode, result.stdout + result.stderr


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "repo").mkdir()
    git("init", "-q", ".", cwd=tmp_path / "repo")
    return tmp_path / "repo"


def test_a_committed_gitignore_does_not_hide_a_tracked_file(repo):
    """The round-three reproducer: `*.py` in the pull request's own .gitignore."""
    (repo / "model.py").write_text(FINDING)
    (repo / ".gitignore").write_text("*.py\n")
    commit(repo, "model.py", ".gitignore")
    (repo / "scratch.py").write_text(FINDING)  # untracked and ignored: still skipped
    status, output = checked_files(repo)
    assert status == 1 and "NNX201" in output, output
    assert "model.py" in output and "scratch.py" not in output, output


def test_nested_gitignore_and_negation_do_not_hide_tracked_files(repo):
    (repo / "pkg" / "deep").mkdir(parents=True)
    (repo / "pkg" / "deep" / "model.py").write_text(FINDING)
    (repo / "pkg" / ".gitignore").write_text("*\n!keep.py\n")
    (repo / "pkg" / "keep.py").write_text(FINDING)
    (repo / "pkg" / "untracked.py").write_text(FINDING)
    commit(repo, "pkg/deep/model.py", "pkg/.gitignore")
    status, output = checked_files(repo)
    assert status == 1, output
    assert "deep/model.py" in output, "a tracked file inside an ignored directory was skipped"
    assert "keep.py" in output, "a `!` pattern no longer re-includes an untracked file"
    assert "untracked.py" not in output, output


def test_an_ignored_directory_is_entered_for_its_tracked_files_only(repo):
    """git: an untracked file below an ignored directory stays ignored (no `!` can re-include
    it), while a tracked one there is tracked."""
    (repo / "models").mkdir()
    (repo / "models" / "tracked.py").write_text(FINDING)
    (repo / "models" / "untracked.py").write_text(FINDING)
    (repo / ".gitignore").write_text("models/\n!models/untracked.py\n")
    commit(repo, "models/tracked.py", ".gitignore")
    status, output = checked_files(repo)
    assert status == 1 and "tracked.py" in output, output
    assert "untracked.py" not in output, output


def test_info_exclude_does_not_hide_a_tracked_file(repo):
    (repo / "model.py").write_text(FINDING)
    commit(repo, "model.py")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("*.py\n")
    status, output = checked_files(repo)
    assert status == 1 and "model.py" in output, output


def test_a_nested_repository_is_judged_by_its_own_index(repo):
    (repo / "vendored").mkdir()
    git("init", "-q", ".", cwd=repo / "vendored")
    (repo / "vendored" / "model.py").write_text(FINDING)
    (repo / "vendored" / ".gitignore").write_text("*.py\n")
    commit(repo / "vendored", "model.py", ".gitignore")
    (repo / "top.py").write_text("x = 1\n")  # the outer repository tracks something too
    commit(repo, "top.py")
    status, output = checked_files(repo)
    assert status == 1 and "vendored/model.py" in output, output


def test_a_submodule_is_judged_by_its_own_index(repo, tmp_path):
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git("init", "-q", ".", cwd=upstream)
    (upstream / "model.py").write_text(FINDING)
    (upstream / ".gitignore").write_text("*.py\n")
    commit(upstream, "model.py", ".gitignore")
    (repo / ".gitignore").write_text("lib/\n")
    commit(repo, ".gitignore")
    git("submodule", "add", "-f", "-q", str(upstream), "lib", cwd=repo)
    git("commit", "-qm", "submodule", cwd=repo)
    assert (repo / "lib" / ".git").is_file()  # a `gitdir:` file, as git leaves a submodule
    status, output = checked_files(repo)
    assert status == 1 and "lib/model.py" in output, output


def test_the_repository_configuration_runs_no_command(repo):
    """`core.fsmonitor` names a command git runs when it reads the index: nnx-lint turns it off."""
    marker = repo.parent / "PWNED"
    (repo / "model.py").write_text(FINDING)
    (repo / ".gitignore").write_text("*.py\n")
    commit(repo, "model.py", ".gitignore")
    git("config", "core.fsmonitor", f"touch {marker}; false", cwd=repo)
    subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, check=False)
    assert marker.exists(), "this git does not run core.fsmonitor: the test shows nothing"
    marker.unlink()
    status, output = checked_files(repo)
    assert not marker.exists(), "git ran the repository's core.fsmonitor command"
    assert status == 1 and "model.py" in output, output


def test_the_callers_git_environment_does_not_redirect_the_listing(repo, tmp_path):
    """A hook that runs nnx-lint has GIT_DIR / GIT_INDEX_FILE set: they describe the caller's
    repository, not the one walked."""
    other = tmp_path / "other"
    other.mkdir()
    git("init", "-q", ".", cwd=other)
    (repo / "model.py").write_text(FINDING)
    (repo / ".gitignore").write_text("*.py\n")
    commit(repo, "model.py", ".gitignore")
    env = {**os.environ, "GIT_DIR": str(other / ".git"), "GIT_INDEX_FILE": str(other / ".git" / "index")}
    status, output = checked_files(repo, env=env)
    assert status == 1 and "model.py" in output, output


def test_without_git_the_patterns_hide_nothing_in_a_repository(repo, tmp_path):
    """When git cannot say what is tracked, a file is never dropped on a guess."""
    (repo / "model.py").write_text(FINDING)
    (repo / ".gitignore").write_text("*.py\n")
    commit(repo, "model.py", ".gitignore")
    (repo / "untracked.py").write_text(FINDING)
    bin_without_git = tmp_path / "bin"
    bin_without_git.mkdir()
    status, output = checked_files(repo, env={**os.environ, "PATH": str(bin_without_git)})
    assert status == 1 and "model.py" in output and "untracked.py" in output, output


def test_outside_a_repository_the_patterns_apply_as_before(tmp_path):
    (tmp_path / "model.py").write_text(FINDING)
    (tmp_path / "kept.py").write_text(FINDING)
    (tmp_path / ".gitignore").write_text("model.py\n")
    status, output = checked_files(tmp_path)
    assert status == 1 and "kept.py" in output and "model.py" not in output, output


def test_tracked_files_answers_from_the_index(repo):
    (repo / "a").mkdir()
    (repo / "a" / "b.py").write_text("x = 1\n")
    (repo / "c.py").write_text("x = 1\n")
    commit(repo, "a/b.py")
    assert git_listing(str(repo)) == frozenset({"a", "a/b.py"})
    tracked = TrackedFiles()
    assert tracked.holds_tracked(str(repo / "a"), is_dir=True)
    assert tracked.holds_tracked(str(repo / "a" / "b.py"), is_dir=False)
    assert not tracked.holds_tracked(str(repo / "c.py"), is_dir=False)
    assert git_listing(str(repo.parent)) is None  # not a repository


#: Directory names a default exclude or a committed ``pyvenv.cfg`` would hide, were they untracked.
HIDDEN_WHEN_UNTRACKED = ["build", "dist", "env", "models"]


@pytest.fixture(scope="module")
def committed_lookalikes(tmp_path_factory) -> dict[str, tuple[int, str]]:
    """A repository that commits a ``model.py`` and a ``pyvenv.cfg`` in each directory of
    :data:`HIDDEN_WHEN_UNTRACKED`, beside an untracked virtualenv; each front-end run once over
    it, as a user runs it: ``{"nnx-lint" | "flake8" | "pylint": (status, output)}``. One run of
    each answers for every directory (a run per directory and front-end would be twelve)."""
    repo = tmp_path_factory.mktemp("lookalikes")
    git("init", "-q", ".", cwd=repo)
    for directory in HIDDEN_WHEN_UNTRACKED:
        (repo / directory).mkdir()
        (repo / directory / "model.py").write_text(FINDING)
        (repo / directory / "pyvenv.cfg").write_text("home = /usr/bin\n")
    commit(repo, *(f"{directory}/{name}" for directory in HIDDEN_WHEN_UNTRACKED for name in ("model.py", "pyvenv.cfg")))
    (repo / ".venv").mkdir()  # an untracked virtualenv: still skipped
    (repo / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (repo / ".venv" / "lib.py").write_text(FINDING)
    scripts = Path(sys.executable).parent
    runs = {"nnx-lint": checked_files(repo)}
    for name, command in (("flake8", [str(scripts / "flake8"), "--isolated", "--select", "NNX", "."]),
                          ("pylint", [str(scripts / "pylint"), "--rcfile=/dev/null", "--disable=all", "--enable=nnx",
                                      "--load-plugins=nnx_lint.pylint",
                                      *(f"{directory}/model.py" for directory in HIDDEN_WHEN_UNTRACKED)])):
        result = subprocess.run(command, cwd=repo, capture_output=True, text=True, timeout=300)
        runs[name] = (result.returncode, result.stdout)
    return runs


@pytest.mark.parametrize("directory", HIDDEN_WHEN_UNTRACKED)
def test_a_default_exclude_or_a_committed_pyvenv_cfg_does_not_hide_tracked_code(committed_lookalikes, directory):
    """The default excludes and the virtualenv marker are for untracked trees: a pull request can
    name its directory `build` or commit a `pyvenv.cfg` beside its code, in the CLI and the plugins."""
    status, output = committed_lookalikes["nnx-lint"]
    assert status == 1 and f"{directory}/model.py" in output, output
    assert ".venv" not in output, output
    for front_end in ("flake8", "pylint"):
        status, output = committed_lookalikes[front_end]
        assert status != 0 and f"{directory}/model.py" in output, (front_end, output)
