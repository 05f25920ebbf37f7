"""The CLI, flake8 and pylint report the same (file, line, column, code) set on every fixture,
and on a configured project.

Each front-end runs once, as a user would run it, over all fixture folders with every
rule selected (``select = ["NNX"]`` in a pyproject.toml the three are pointed at:
``--config``, ``--nnx-config``). Unparsable or undecodable files are each tool's own
business (flake8: E902/E999, pylint: E0001/F0010; flake8 7 itself crashes on the deeply
nested file), so ``linter_errors`` is compared for the CLI only, against its inline markers.

The configured project uses every ``[tool.nnx-lint]`` key: the three front-ends find its
pyproject.toml themselves and must agree.
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

from nnx_lint.engine.registry import rule_by_symbol

FOLDERS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name != "linter_errors")
Finding = tuple[str, int, int, str]


def _run(*command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env, timeout=600)


def _targets() -> list[str]:
    return [str(Path("tests/fixtures") / folder) for folder in FOLDERS]


@pytest.fixture(scope="module")
def every_rule_config(tmp_path_factory) -> str:
    """A pyproject.toml that selects every rule, for all three front-ends."""
    path = tmp_path_factory.mktemp("config") / "pyproject.toml"
    path.write_text('[tool.nnx-lint]\nselect = ["NNX"]\n')
    return str(path)


@pytest.fixture(scope="module")
def cli_findings(every_rule_config) -> set[Finding]:
    result = _run(sys.executable, "-m", "nnx_lint.cli", "check", *_targets(), "--config", every_rule_config,
                  "--no-cache", "--output-format", "json")
    assert result.returncode == 1, result.stderr
    return {
        (os.path.normpath(d["filename"]), d["location"]["row"], d["location"]["column"], d["code"])
        for d in json.loads(result.stdout)
    }


@pytest.fixture(scope="module")
def flake8_findings(every_rule_config) -> set[Finding]:
    result = _run(sys.executable, "-m", "flake8", "--select", "NNX", "--nnx-config", every_rule_config,
                  "--format", "%(path)s|%(row)d|%(col)d|%(code)s", *_targets())
    assert result.returncode == 1, result.stderr
    findings = set()
    for line in result.stdout.splitlines():
        path, row, col, code = line.split("|")
        findings.add((os.path.normpath(path), int(row), int(col), code))
    return findings


@pytest.fixture(scope="module")
def pylint_findings(every_rule_config) -> set[Finding]:
    result = _run(sys.executable, "-m", "pylint", "--load-plugins=nnx_lint.pylint", "--disable=all",
                  "--enable=nnx", "--output-format=json", "--persistent=n", f"--nnx-config={every_rule_config}",
                  *_targets())
    return _pylint_set(result)


def _pylint_set(result: subprocess.CompletedProcess) -> set[Finding]:
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
    # The target version of the fixtures that use syntax added in 3.12 (on every Python).
    result = _run(sys.executable, "-m", "nnx_lint.cli", "check", folder, "tests/fixtures/prefix_filters",
                  "--extend-select", "NNX009", "--no-cache", "--output-format", "json", "--target-version", "py311")
    assert result.returncode == 1, result.stderr
    found = {(os.path.normpath(d["filename"]), d["location"]["row"], d["code"]) for d in json.loads(result.stdout)}
    for fixture in (REPO / folder).glob("NNX*.py"):
        for line, code in fixture_expectations(fixture):
            assert (os.path.normpath(fixture.relative_to(REPO)), line, code) in found
    assert any(code == "NNX201" for _, _, code in found), "the good files were still linted"


# --- A configured project: every [tool.nnx-lint] key, found by each front-end itself -------

CONFIG = """\
[tool.nnx-lint]
select = ["NNX2", "NNX3", "NNX6"]
ignore = ["NNX202"]
extend-select = ["NNX901", "NNX009"]
exclude = ["generated"]
per-file-ignores = { "tests/*" = ["NNX3"] }
"""


def _case(code: str) -> str:
    from nnx_lint.engine.registry import rule_by_code

    return rule_by_code(code).INVALID[0].source


@pytest.fixture(scope="module")
def configured_project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("configured")
    (root / "pyproject.toml").write_text(CONFIG)
    files = {
        "src/axes.py": _case("NNX201"),                 # selected
        "src/diff.py": _case("NNX202"),                 # ignored
        "src/steps.py": _case("NNX301"),                # selected
        "tests/test_steps.py": _case("NNX301"),         # per-file-ignores
        "src/meta.py": _case("NNX601"),                 # selected
        "src/tied.py": _case("NNX101"),                 # not selected
        "src/compat.py": _case("NNX901"),               # extend-select (an advisory)
        "src/stale.py": "from flax import nnx\nx = 1  # noqa: NNX201\n",  # NNX009, extend-select
        "generated/axes.py": _case("NNX201"),           # exclude
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _configured_run(root: Path, *command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(command, cwd=root, capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture(scope="module")
def configured_cli(configured_project) -> set[Finding]:
    result = _configured_run(configured_project, sys.executable, "-m", "nnx_lint.cli", "check", "--no-cache",
                             "--output-format", "json")
    assert result.returncode == 1, result.stderr
    return {(os.path.normpath(d["filename"]), d["location"]["row"], d["location"]["column"], d["code"])
            for d in json.loads(result.stdout)}


def test_configured_project_cli_applies_every_key(configured_cli):
    found = {(path, code) for path, _line, _column, code in configured_cli}
    expected = {
        ("src/axes.py", "NNX201"), ("src/steps.py", "NNX301"), ("src/meta.py", "NNX601"),
        ("src/compat.py", "NNX901"), ("src/stale.py", "NNX009"),
    }
    assert {(os.path.normpath(p), c) for p, c in expected} == found


def test_configured_project_flake8_matches_cli(configured_project, configured_cli):
    result = _configured_run(configured_project, sys.executable, "-m", "flake8", "--select", "NNX",
                             "--format", "%(path)s|%(row)d|%(col)d|%(code)s", ".")
    assert result.returncode == 1, result.stderr
    found = set()
    for line in result.stdout.splitlines():
        path, row, col, code = line.split("|")
        found.add((os.path.normpath(path), int(row), int(col), code))
    assert found == configured_cli


@pytest.mark.slow
def test_configured_project_pylint_matches_cli(configured_project, configured_cli):
    result = _configured_run(configured_project, sys.executable, "-m", "pylint", "--load-plugins=nnx_lint.pylint",
                             "--disable=all", "--enable=nnx", "--output-format=json", "--persistent=n",
                             "--recursive=y", ".")
    assert _pylint_set(result) == configured_cli


def test_flake8_options_narrow_the_configured_selection(configured_project):
    result = _configured_run(configured_project, sys.executable, "-m", "flake8", "--select", "NNX2",
                             "--format", "%(path)s|%(code)s", ".")
    assert {line.split("|")[1] for line in result.stdout.splitlines()} == {"NNX201"}
    # Selecting a code the file does not select does not turn it on: the file decides.
    result = _configured_run(configured_project, sys.executable, "-m", "flake8", "--select", "NNX1",
                             "--format", "%(path)s|%(code)s", ".")
    assert result.stdout.strip() == "" and result.returncode == 0, result.stdout + result.stderr


# --- pylint on a real layout: the README's command, folders without __init__.py -------------

def _readme_pylint_command() -> str:
    """The pylint command the README documents for a project (the line that runs on its files)."""
    lines = [line[2:] for line in (REPO / "README.md").read_text().splitlines()
             if line.startswith("$ ") and "--load-plugins=nnx_lint.pylint" in line]
    (command,) = [line for line in lines if "xargs" in line]
    return command


@pytest.fixture(scope="module")
def layout_project(tmp_path_factory) -> Path:
    """Folders as real repositories have them: a package with a subfolder that lacks
    ``__init__.py`` (pylint's ``--recursive=y`` never enters it), a top-level folder without
    one that holds a package, and a script folder nested two levels deep."""
    root = tmp_path_factory.mktemp("layout")
    files = {
        "pkg/__init__.py": "",
        "pkg/model.py": _case("NNX201"),
        "pkg/experimental/train.py": _case("NNX301"),          # no __init__.py in pkg/experimental
        "pkg/experimental/deep/steps.py": _case("NNX601"),
        "examples/__init__.py": "",
        "examples/toy/run.py": _case("NNX202"),                # a package folder holding a loose one
        "tests/common/__init__.py": "",
        "tests/common/helpers.py": _case("NNX101"),            # a package inside a folder without one
        "tests/test_model.py": _case("NNX403"),
        "scripts/tools/convert.py": _case("NNX704"),
        "pyproject.toml": "[tool.nnx-lint]\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "."], cwd=root, check=True)
    return root


@pytest.mark.skipif(sys.platform == "win32", reason="the README's command is a POSIX shell pipeline")
@pytest.mark.slow
def test_the_readme_pylint_command_has_full_parity_on_folders_without_init(layout_project):
    cli = _configured_run(layout_project, sys.executable, "-m", "nnx_lint.cli", "check", "--no-cache",
                          "--output-format", "json")
    expected = {(os.path.normpath(d["filename"]), d["location"]["row"], d["location"]["column"], d["code"])
                for d in json.loads(cli.stdout)}
    assert len({path for path, *_ in expected}) == 7, expected
    # As a user runs it: the console script on PATH, the documented shell pipeline.
    env = {**os.environ, "PYTHONPATH": str(REPO),
           "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])}
    readme = subprocess.run(["sh", "-c", _readme_pylint_command() + " --output-format=json --persistent=n"],
                            cwd=layout_project, capture_output=True, text=True, env=env, timeout=600)
    assert _pylint_set(readme) == expected, readme.stderr
    # What the command is for: pylint's own recursion misses the folders without __init__.py.
    recursive = _configured_run(layout_project, sys.executable, "-m", "pylint", "--load-plugins=nnx_lint.pylint",
                                "--disable=all", "--enable=nnx", "--output-format=json", "--persistent=n",
                                "--recursive=y", ".")
    missed = {path for path, *_ in expected - _pylint_set(recursive)}
    assert missed == {"pkg/experimental/train.py", "pkg/experimental/deep/steps.py", "examples/toy/run.py"}
