"""Ruff's command-line conventions (issue 27, item 8), run as a user runs them: the real
``nnx-lint`` console script, and real flake8 and pylint for the file-level exemption."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
STATE_AXES = "f = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"  # NNX201
METADATA = "h = nnx.vmap(g, transform_metadata={nnx.PARTITION_NAME: 'l'})\n"  # NNX601
BOTH = "from flax import nnx\n" + STATE_AXES + METADATA


def nnx_lint_executable() -> str:
    """The installed console script, next to the interpreter running the tests."""
    beside = Path(sys.executable).parent / ("nnx-lint.exe" if os.name == "nt" else "nnx-lint")
    found = str(beside) if beside.exists() else shutil.which("nnx-lint")
    assert found, "the nnx-lint console script is not installed"
    return found


def _run(*command: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("NO_COLOR", None)
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=300, input=stdin)


def check(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """``nnx-lint check --no-cache ARGS`` in ``cwd``."""
    return _run(nnx_lint_executable(), "check", "--no-cache", *args, cwd=cwd, stdin=stdin)


def codes_in(output: str) -> set[tuple[str, str]]:
    """``(path, code)`` of each diagnostic line of the text output."""
    found = set()
    for line in output.splitlines():
        parts = line.split(": ", 1)
        if len(parts) == 2 and parts[1].startswith("NNX"):
            found.add((parts[0].split(":")[0], parts[1].split()[0]))
    return found


@pytest.fixture
def project(tmp_path):
    """A project with a pyproject.toml and one file with an NNX201 and an NNX601."""
    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    (tmp_path / "model.py").write_text(BOTH)
    return tmp_path


# -- file-level exemption: `# nnx-lint: noqa` ------------------------------------------------

EXEMPT_ALL = "# nnx-lint: noqa\n" + BOTH
EXEMPT_201 = "from flax import nnx  # nnx-lint: noqa: NNX201\n" + STATE_AXES + METADATA
EXEMPT_LOWER = "# nnx-lint: noqa: nnx201\n" + BOTH
IN_A_STRING = BOTH + "s = '# nnx-lint: noqa'\n"
#: flake8's own file-level comment: flake8 applies it alone on its line and without codes only.
FLAKE8_ALL = BOTH + "# flake8: noqa (generated)\n"
FLAKE8_TRAILING = BOTH + "x = 1  # flake8: noqa\n"


@pytest.fixture
def exemptions(tmp_path):
    files = {"all.py": EXEMPT_ALL, "only201.py": EXEMPT_201, "lower.py": EXEMPT_LOWER, "quoted.py": IN_A_STRING,
             "f8.py": FLAKE8_ALL, "f8_trailing.py": FLAKE8_TRAILING}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    return tmp_path


#: What every front-end must report on the ``exemptions`` files.
EXPECTED_EXEMPTIONS = {
    ("only201.py", "NNX601"),
    ("lower.py", "NNX201"), ("lower.py", "NNX601"),  # codes are case-sensitive: nothing exempted
    ("quoted.py", "NNX201"), ("quoted.py", "NNX601"),  # text in a string is no comment
    ("f8_trailing.py", "NNX201"), ("f8_trailing.py", "NNX601"),  # flake8 needs it alone on its line
}
FILES = ("all.py", "only201.py", "lower.py", "quoted.py", "f8.py", "f8_trailing.py")


@pytest.mark.slow
def test_file_exemption_in_the_cli(exemptions):
    result = check(exemptions, *FILES)
    assert codes_in(result.stdout) == EXPECTED_EXEMPTIONS, result.stdout + result.stderr


def test_file_exemption_in_flake8(exemptions):
    result = _run(sys.executable, "-m", "flake8", "--select", "NNX", "--format", "%(path)s:%(code)s",
                  *FILES, cwd=exemptions)
    found = {(Path(path).name, code) for path, code in (line.rsplit(":", 1) for line in result.stdout.split())}
    assert found == EXPECTED_EXEMPTIONS, result.stdout + result.stderr
    unexempted = _run(sys.executable, "-m", "flake8", "--select", "NNX", "--disable-noqa", "--format",
                      "%(path)s:%(code)s", "all.py", cwd=exemptions)
    assert set(unexempted.stdout.split()) == {"all.py:NNX201", "all.py:NNX601"}, "--disable-noqa: every comment"


def test_file_exemption_in_pylint(exemptions):
    result = _run(sys.executable, "-m", "pylint", "--load-plugins=nnx_lint.pylint", "--persistent=n",
                  "--output-format=json", "--disable=all", "--enable=nnx",
                  *FILES, cwd=exemptions)
    messages = json.loads(result.stdout)
    symbols = {"state-axes-prefix": "NNX201", "transform-metadata-keyword": "NNX601"}
    found = {(Path(m["path"]).name, symbols.get(m["symbol"], m["symbol"])) for m in messages}
    assert found == EXPECTED_EXEMPTIONS, result.stdout + result.stderr


# -- -q, -o ------------------------------------------------------------------------------------

@pytest.mark.slow
def test_quiet_prints_the_diagnostics_and_nothing_else(project):
    loud = check(project)
    quiet = check(project, "-q")
    assert loud.returncode == quiet.returncode == 1
    assert "Found 2 diagnostics" in loud.stdout
    # The summary and the fixable hint go (Ruff's -q prints the diagnostics only).
    dropped = [line for line in loud.stdout.splitlines() if line.startswith(("Found ", "[*] "))]
    assert dropped and quiet.stdout == "".join(f"{line}\n" for line in loud.stdout.splitlines() if line not in dropped)
    assert codes_in(quiet.stdout) == {("model.py", "NNX201"), ("model.py", "NNX601")}
    clean = check(project, "-q", "--ignore", "NNX2,NNX6")
    assert (clean.returncode, clean.stdout) == (0, ""), "a clean quiet run prints nothing"


@pytest.mark.slow
def test_output_file_gets_the_report(project, tmp_path_factory):
    result = check(project, "-o", "report.json", "--output-format", "json")
    assert result.returncode == 1 and result.stdout == ""
    assert {d["code"] for d in json.loads((project / "report.json").read_text())} == {"NNX201", "NNX601"}
    outside = tmp_path_factory.mktemp("elsewhere") / "report.txt"
    assert check(project, "--output-file", str(outside)).returncode == 1
    assert "Found 2 diagnostics" in outside.read_text(), "a path the user names outside the project is written"


def test_output_file_is_never_written_through_a_symlink(project, tmp_path_factory):
    victim = tmp_path_factory.mktemp("victim") / "bashrc"
    victim.write_text("precious\n")
    (project / "report.txt").symlink_to(victim)
    result = check(project, "-o", "report.txt")
    assert result.returncode == 2 and "symlink" in result.stderr
    assert victim.read_text() == "precious\n"


# -- --exclude, --extend-exclude, --extend-ignore (and the configuration keys) ------------------

@pytest.fixture
def layout(project):
    """``model.py``, ``gen/made.py`` and ``legacy/old.py``, each with the same two findings."""
    for folder, name in (("gen", "made.py"), ("legacy", "old.py")):
        (project / folder).mkdir()
        (project / folder / name).write_text(BOTH)
    return project


def files_in(output: str) -> set[str]:
    return {path for path, _ in codes_in(output)}


@pytest.mark.slow
def test_exclude_replaces_and_extend_exclude_adds(layout):
    (layout / "pyproject.toml").write_text('[tool.nnx-lint]\nexclude = ["gen"]\nextend-exclude = ["legacy"]\n')
    assert files_in(check(layout).stdout) == {"model.py"}
    # --exclude replaces `exclude` (gen is back) but keeps `extend-exclude` (as in Ruff).
    assert files_in(check(layout, "--exclude", "model.py").stdout) == {"gen/made.py"}
    assert files_in(check(layout, "--extend-exclude", "gen/*.py,model.py").stdout) == set()


@pytest.mark.slow
def test_extend_ignore_adds_to_the_ignored_codes(project):
    (project / "pyproject.toml").write_text('[tool.nnx-lint]\nignore = ["NNX2"]\n')
    assert codes_in(check(project).stdout) == {("model.py", "NNX601")}
    result = check(project, "--extend-ignore", "NNX6")
    assert (result.returncode, codes_in(result.stdout)) == (0, set())
    (project / "pyproject.toml").write_text('[tool.nnx-lint]\nextend-ignore = ["NNX601"]\n')
    assert codes_in(check(project).stdout) == {("model.py", "NNX201")}
    (project / "pyproject.toml").write_text('[tool.nnx-lint]\nextend-ignore = ["NNX999"]\n')
    assert check(project).returncode == 2, "an unknown code is a usage error, as in `ignore`"


def test_show_settings_prints_the_resolved_settings(layout):
    (layout / "pyproject.toml").write_text('[tool.nnx-lint]\nextend-exclude = ["legacy"]\nignore = ["NNX6"]\n')
    result = check(layout, "--show-settings", "--extend-ignore", "NNX3", "--no-respect-gitignore")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Resolved settings for: model.py"  # the first file the walk finds
    assert lines[1] == "Settings path: pyproject.toml"
    assert 'ignore = ["NNX6", "NNX3"]' in lines
    assert 'extend-exclude = ["legacy"]' in lines
    assert "respect-gitignore = false" in lines
    rules = next(line for line in lines if line.startswith("rules for this file = ")).split(" = ")[1].split(", ")
    assert "NNX201" in rules and "NNX601" not in rules and not any(r.startswith("NNX3") for r in rules)
    assert "NNX201" not in result.stdout.split("rules for this file")[0], "no lint run"


# -- respect-gitignore ---------------------------------------------------------------------------

@pytest.mark.slow
def test_gitignored_folders_are_not_linted(layout):
    (layout / ".gitignore").write_text("# generated\ngen/\n/legacy/*\n!/legacy/old.py\n")
    assert files_in(check(layout).stdout) == {"model.py", "legacy/old.py"}
    assert files_in(check(layout, "--no-respect-gitignore").stdout) == {"model.py", "gen/made.py", "legacy/old.py"}
    (layout / "pyproject.toml").write_text("[tool.nnx-lint]\nrespect-gitignore = false\n")
    assert files_in(check(layout).stdout) == {"model.py", "gen/made.py", "legacy/old.py"}
    assert files_in(check(layout, "--respect-gitignore").stdout) == {"model.py", "legacy/old.py"}
    # A file named on the command line is linted, as in Ruff.
    assert files_in(check(layout, "gen/made.py").stdout) == {"gen/made.py"}


@pytest.mark.slow
def test_nested_gitignore_and_walks_below_the_root(layout):
    (layout / ".gitignore").write_text("*.py\n")
    (layout / "legacy" / ".gitignore").write_text("!old.py\n")
    assert files_in(check(layout).stdout) == {"legacy/old.py"}
    # Walking a subdirectory still obeys the .gitignore files above it (up to the project root).
    assert files_in(check(layout, "gen", "legacy").stdout) == {"legacy/old.py"}


# -- --add-noqa ------------------------------------------------------------------------------------

def _notebook(source: str) -> str:
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": source.splitlines(keepends=True)}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


@pytest.mark.slow
def test_add_noqa_fails_when_findings_stay_unsuppressed(project):
    (project / "nb.ipynb").write_text(_notebook(BOTH))
    result = check(project, "--add-noqa")
    assert result.returncode == 1, result.stderr
    assert "notebooks are not edited" in result.stderr
    assert "2 findings left unsuppressed" in result.stderr
    assert "# noqa: NNX201" in (project / "model.py").read_text(), "the .py file is still edited"
    (project / "nb.ipynb").unlink()
    again = check(project, "--add-noqa")
    assert again.returncode == 0 and "Added 0 noqa directives" in again.stderr


@pytest.mark.slow
def test_plugins_read_extend_exclude_and_extend_ignore_as_the_cli_does(layout):
    (layout / "pyproject.toml").write_text('[tool.nnx-lint]\nextend-exclude = ["legacy"]\nextend-ignore = ["NNX6"]\n')
    expected = {("model.py", "NNX201"), ("gen/made.py", "NNX201")}
    assert codes_in(check(layout, "--no-respect-gitignore").stdout) == expected
    flake8 = _run(sys.executable, "-m", "flake8", "--select", "NNX", "--format", "%(path)s:%(code)s", ".", cwd=layout)
    found = {(Path(path).as_posix().removeprefix("./"), code)
             for path, code in (line.rsplit(":", 1) for line in flake8.stdout.split())}
    assert found == expected, flake8.stdout + flake8.stderr
    pylint = _run(sys.executable, "-m", "pylint", "--load-plugins=nnx_lint.pylint", "--persistent=n",
                  "--output-format=json", "--disable=all", "--enable=nnx", "model.py", "gen/made.py", "legacy/old.py",
                  cwd=layout)
    assert {(m["path"], m["symbol"]) for m in json.loads(pylint.stdout)} == {
        ("model.py", "state-axes-prefix"), ("gen/made.py", "state-axes-prefix")}, pylint.stdout + pylint.stderr


def test_respect_gitignore_must_be_a_boolean(project):
    (project / "pyproject.toml").write_text('[tool.nnx-lint]\nrespect-gitignore = "no"\n')
    result = check(project)
    assert result.returncode == 2 and "`respect-gitignore` must be true or false" in result.stderr
