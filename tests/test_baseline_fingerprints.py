"""Baseline fingerprints name the finding's own code only, as a user meets them: the CLI
run as a subprocess, on one interpreter and across Python 3.10-3.13.

A new use of a class elsewhere changes facts of its findings (which transform it is used
with, which uses a pin must cover, the class of a traced argument): the fingerprint must
not notice. The pre-commit side of this (a commit with an unrelated edit passes the hook)
is in ``test_pre_commit.py``.
"""
from __future__ import annotations

import doctest
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _interpreters import environment_for, find_interpreters
from _support import NEW_FINDING, NEW_USE, REPO, TIED

def _cli(root: Path, *args: str, executable: str = sys.executable) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([executable, "-m", "nnx_lint.cli", "check", "--no-cache", *args], cwd=root,
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture
def tied_project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    (tmp_path / "model.py").write_text(TIED)
    written = _cli(tmp_path, ".", "--write-baseline", "base.json")
    assert written.returncode == 0, written.stderr
    assert [f["code"] for f in json.loads((tmp_path / "base.json").read_text())["findings"]] == ["NNX101", "NNX301"]
    return tmp_path


@pytest.mark.slow
def test_a_new_use_elsewhere_keeps_every_baselined_finding(tied_project):
    (tied_project / "model.py").write_text(TIED + NEW_USE)
    # The new use does change the findings' facts: the test would not see a fingerprint built from them.
    facts = {d["code"]: d["facts"] for d in json.loads(_cli(tied_project, ".", "--output-format", "json").stdout)}
    assert facts["NNX101"]["used_with"] == "jit" and facts["NNX301"]["object_class"] == "Tied"
    result = _cli(tied_project, ".", "--baseline", "base.json", "-v")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "All checks passed!" in result.stdout
    assert "2 of 2 baselined findings remain." in result.stdout
    assert "fixed" not in result.stdout


def test_a_new_finding_next_to_them_is_still_new(tied_project):
    (tied_project / "model.py").write_text(TIED + NEW_USE + NEW_FINDING)
    result = _cli(tied_project, ".", "--baseline", "base.json")
    assert result.returncode == 1
    assert [line.split()[1] for line in result.stdout.splitlines() if line.startswith("model.py:")] == ["NNX201"]
    assert "2 of 2 baselined findings remain." in result.stdout


@pytest.mark.slow
def test_identical_lines_in_two_functions_are_told_apart_by_their_scope(tied_project):
    # Removing the first of two identical lines leaves the second matched as itself, not as the first.
    twice = TIED + "\n\n@nnx.jit\ndef other(model, x):\n    model.count += 1\n    return x\n"
    (tied_project / "model.py").write_text(twice)
    assert _cli(tied_project, ".", "--write-baseline", "base.json").returncode == 0
    (tied_project / "model.py").write_text(twice.replace("    model.count += 1\n    return x\n", "    return x\n", 1))
    result = _cli(tied_project, ".", "--baseline", "base.json", "-v")
    assert result.returncode == 0, result.stdout
    assert "1 baselined finding is fixed" in result.stdout
    fixed = json.loads((tied_project / "base.json").read_text())["findings"]
    assert len({f["fingerprint"] for f in fixed if f["code"] == "NNX301"}) == 2, "one fingerprint per scope"


@pytest.mark.slow
def test_a_version_1_baseline_is_still_read_and_a_rewrite_is_suggested(tied_project):
    from nnx_lint.frontends.baseline import entries_for, write_baseline
    from nnx_lint.base.confined_writes import WriteScope
    from nnx_lint.engine.walk import lint_bytes
    from nnx_lint.engine.registry import select_rules

    path = tied_project / "model.py"
    diagnostics = lint_bytes(path.read_bytes(), str(path), select_rules())
    old = [entry for entry, _ in entries_for(diagnostics, tied_project, version=1)]
    write_baseline(tied_project / "old.json", old, WriteScope.of(tied_project))
    document = json.loads((tied_project / "old.json").read_text())
    document["version"] = 1
    (tied_project / "old.json").write_text(json.dumps(document))
    result = _cli(tied_project, ".", "--baseline", "old.json")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 of 2 baselined findings remain." in result.stdout
    (note,) = result.stderr.splitlines()
    assert "old.json is in the version 1 format" in note and "--write-baseline old.json" in note


def test_fingerprint_doctests():
    from nnx_lint.frontends import baseline
    from nnx_lint.analysis import context
    from nnx_lint.engine import source_lines

    for module in (baseline, context, source_lines):
        failures, tried = doctest.testmod(module)
        assert tried and not failures, module.__name__


@pytest.mark.slow
def test_a_baseline_written_on_one_python_matches_on_every_other(tmp_path, request):
    interpreters = find_interpreters()
    if len(interpreters) < 2:
        pytest.skip(f"needs two of Python 3.10-3.13, found {sorted(interpreters)}")
    # pytest's cache keeps the venvs between runs; without the cache plugin (-p no:cacheprovider) a
    # temporary directory does.
    cache = (request.config.cache.mkdir("nnx-lint-interpreters") if getattr(request.config, "cache", None) is not None
             else request.getfixturevalue("tmp_path_factory").mktemp("nnx-lint-interpreters"))
    binaries = {version: environment_for(executable, cache) for version, executable in interpreters.items()}
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    (project / "pkg" / "model.py").write_text(TIED + NEW_USE)
    (project / "pkg" / "train.py").write_text((REPO / "docs" / "example" / "train.py").read_text())

    def run(version, *args):
        done = subprocess.run([str(binaries[version] / "nnx-lint"), "check", "pkg", "--no-cache", *args],
                              cwd=project, capture_output=True, text=True, timeout=300,
                              env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        return done

    written = {}
    for version in binaries:
        name = f"base-{version[0]}.{version[1]}.json"
        done = run(version, "--write-baseline", name)
        assert done.returncode == 0, done.stderr
        written[version] = (project / name).read_bytes()
    first, *others = binaries
    assert len(json.loads(written[first])["findings"]) == 7
    assert all(written[version] == written[first] for version in others), "byte-identical baselines"
    # And each interpreter accepts the baseline the next one wrote.
    for writer, checker in zip(binaries, [*others, first]):
        done = run(checker, "--baseline", f"base-{writer[0]}.{writer[1]}.json")
        assert done.returncode == 0, f"{writer} -> {checker}: {done.stdout}{done.stderr}"
        assert "7 of 7 baselined findings remain." in done.stdout
