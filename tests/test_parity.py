"""The CLI, flake8 and pylint report the same (file, line, column, code) set on every fixture.

Each front-end runs once, as a user would run it, over all fixture folders with every
rule selected. Unparsable or undecodable files are each tool's own business (flake8:
E902/E999, pylint: E0001/F0010; flake8 7 itself crashes on the deeply nested file), so
``linter_errors`` is compared for the CLI only, against its inline markers.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from _support import FIXTURES, REPO, fixture_expectations

from nnx_lint.registry import rule_by_symbol

FOLDERS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name != "linter_errors")
Finding = tuple[str, int, int, str]


def _run(*command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env, timeout=600)


def _targets() -> list[str]:
    return [str(Path("tests/fixtures") / folder) for folder in FOLDERS]


@pytest.fixture(scope="module")
def cli_findings() -> set[Finding]:
    result = _run(sys.executable, "-m", "nnx_lint.cli", "check", *_targets(), "--select", "NNX",
                  "--no-cache", "--output-format", "json")
    assert result.returncode == 1, result.stderr
    return {
        (os.path.normpath(d["filename"]), d["location"]["row"], d["location"]["column"], d["code"])
        for d in json.loads(result.stdout)
    }


@pytest.fixture(scope="module")
def flake8_findings() -> set[Finding]:
    result = _run(sys.executable, "-m", "flake8", "--select", "NNX",
                  "--format", "%(path)s|%(row)d|%(col)d|%(code)s", *_targets())
    assert result.returncode == 1, result.stderr
    findings = set()
    for line in result.stdout.splitlines():
        path, row, col, code = line.split("|")
        findings.add((os.path.normpath(path), int(row), int(col), code))
    return findings


@pytest.fixture(scope="module")
def pylint_findings() -> set[Finding]:
    result = _run(sys.executable, "-m", "pylint", "--load-plugins=nnx_lint.pylint", "--disable=all",
                  "--enable=nnx", "--output-format=json", "--persistent=n", *_targets())
    messages = json.loads(result.stdout)
    findings = set()
    for message in messages:
        rule = rule_by_symbol(message["symbol"])
        assert rule is not None, f"pylint reported a non-NNX message: {message}"
        findings.add((os.path.normpath(message["path"]), message["line"], message["column"] + 1, rule.code))
    return findings


def _by_file(findings: set[Finding]) -> dict[str, set]:
    grouped: dict[str, set] = defaultdict(set)
    for path, line, column, code in findings:
        grouped[path].add((line, column, code))
    return grouped


def test_front_ends_find_something(cli_findings):
    assert len(cli_findings) >= 30


def test_flake8_matches_cli(cli_findings, flake8_findings):
    assert _by_file(flake8_findings) == _by_file(cli_findings)


def test_pylint_matches_cli(cli_findings, pylint_findings):
    assert _by_file(pylint_findings) == _by_file(cli_findings)


def test_cli_covers_every_fixture_marker(cli_findings):
    lines = {(path, line, code) for path, line, _column, code in cli_findings}
    for fixture in FIXTURES.rglob("NNX*.py"):
        if "linter_errors" in fixture.parts:
            continue
        relative = os.path.normpath(fixture.relative_to(REPO))
        for line, code in fixture_expectations(fixture):
            assert (relative, line, code) in lines, f"{relative}:{line} {code}"


def test_cli_reports_bad_files_and_still_lints_the_rest():
    folder = "tests/fixtures/linter_errors"
    result = _run(sys.executable, "-m", "nnx_lint.cli", "check", folder, "tests/fixtures/prefix_filters",
                  "--no-cache", "--output-format", "json")
    assert result.returncode == 1, result.stderr
    found = {(os.path.normpath(d["filename"]), d["location"]["row"], d["code"]) for d in json.loads(result.stdout)}
    for fixture in (REPO / folder).glob("NNX*.py"):
        if "requires-python<3.12" in fixture.read_text("utf-8", "replace")[:200] and sys.version_info >= (3, 12):
            continue
        for line, code in fixture_expectations(fixture):
            assert (os.path.normpath(fixture.relative_to(REPO)), line, code) in found
    assert any(code == "NNX201" for _, _, code in found), "the good files were still linted"
