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


@pytest.fixture
def exemptions(tmp_path):
    files = {"all.py": EXEMPT_ALL, "only201.py": EXEMPT_201, "lower.py": EXEMPT_LOWER, "quoted.py": IN_A_STRING}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    return tmp_path


#: What every front-end must report on the ``exemptions`` files.
EXPECTED_EXEMPTIONS = {
    ("only201.py", "NNX601"),
    ("lower.py", "NNX201"), ("lower.py", "NNX601"),  # codes are case-sensitive: nothing exempted
    ("quoted.py", "NNX201"), ("quoted.py", "NNX601"),  # text in a string is no comment
}


def test_file_exemption_in_the_cli(exemptions):
    result = check(exemptions, "all.py", "only201.py", "lower.py", "quoted.py")
    assert codes_in(result.stdout) == EXPECTED_EXEMPTIONS, result.stdout + result.stderr


def test_file_exemption_in_flake8(exemptions):
    result = _run(sys.executable, "-m", "flake8", "--select", "NNX", "--format", "%(path)s:%(code)s",
                  "all.py", "only201.py", "lower.py", "quoted.py", cwd=exemptions)
    found = {(Path(path).name, code) for path, code in (line.rsplit(":", 1) for line in result.stdout.split())}
    assert found == EXPECTED_EXEMPTIONS, result.stdout + result.stderr


def test_file_exemption_in_pylint(exemptions):
    result = _run(sys.executable, "-m", "pylint", "--load-plugins=nnx_lint.pylint", "--persistent=n",
                  "--output-format=json", "--disable=all", "--enable=nnx",
                  "all.py", "only201.py", "lower.py", "quoted.py", cwd=exemptions)
    messages = json.loads(result.stdout)
    symbols = {"state-axes-prefix": "NNX201", "transform-metadata-keyword": "NNX601"}
    found = {(Path(m["path"]).name, symbols.get(m["symbol"], m["symbol"])) for m in messages}
    assert found == EXPECTED_EXEMPTIONS, result.stdout + result.stderr
