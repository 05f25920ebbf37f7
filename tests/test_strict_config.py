"""Issue 45: configuration is as strict as the README says, through the installed console script and
the real flake8: a wrong type is an error, every error names the file and the key, and the case rules
of selectors and ``# noqa`` are the documented ones."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

NNX_LINT = str(Path(sys.executable).with_name("nnx-lint"))
SHARED = "from flax import nnx\n\n\n@nnx.jit\ndef bump(c):\n    c.n += 1{noqa}\n"


def _run(cwd: Path, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(command), cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(("setting", "message"), [
    ('select = "NNX3"', "[tool.nnx-lint]: `select` must be a list of strings, got 'NNX3'"),
    ('extend-exclude = "legacy"', "[tool.nnx-lint]: `extend-exclude` must be a list of strings, got 'legacy'"),
    ('per-file-ignores = { "tests/*" = "NNX2" }', "[tool.nnx-lint] per-file-ignores: `tests/*` must be a list"),
    ('ignore = ["NNX999"]', "[tool.nnx-lint]: `ignore`: unknown rule selector 'NNX999' (no rule code starts with it)"),
    ('per-file-ignores = { "tests/*" = ["NNX999"] }',
     "[tool.nnx-lint] per-file-ignores: `tests/*`: unknown rule selector 'NNX999'"),
])
def test_a_wrong_type_or_an_unknown_code_is_an_error_naming_the_file_and_the_key(tmp_path, setting, message):
    (tmp_path / "pyproject.toml").write_text(f"[tool.nnx-lint]\n{setting}\n")
    (tmp_path / "m.py").write_text(SHARED.format(noqa=""))
    done = _run(tmp_path, NNX_LINT, "check", "--no-cache", "m.py")
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr == f"nnx-lint: error: {tmp_path / 'pyproject.toml'} {message}" + done.stderr.split(message, 1)[1]
    flake8 = _run(tmp_path, sys.executable, "-m", "flake8", "--select", "NNX", "m.py")
    assert flake8.returncode != 0 and f"{tmp_path / 'pyproject.toml'} {message}" in flake8.stdout + flake8.stderr


@pytest.mark.slow
def test_selectors_ignore_case_and_noqa_codes_do_not(tmp_path):
    """As documented in README.md: ``--select nnx301`` and ``select = ["nnx3"]`` select NNX301, and
    ``# noqa: nnx301`` suppresses nothing, in the CLI and flake8 alike."""
    (tmp_path / "m.py").write_text(SHARED.format(noqa="  # noqa: nnx301"))
    cli = _run(tmp_path, NNX_LINT, "check", "--no-cache", "--select", "nnx301", "m.py")
    assert cli.returncode == 1 and "m.py:6:5: NNX301" in cli.stdout, cli
    (tmp_path / "pyproject.toml").write_text('[tool.nnx-lint]\nselect = ["nnx3"]\n')
    configured = _run(tmp_path, NNX_LINT, "check", "--no-cache", "m.py")
    assert configured.returncode == 1 and "m.py:6:5: NNX301" in configured.stdout, configured
    flake8 = _run(tmp_path, sys.executable, "-m", "flake8", "--select", "NNX", "m.py")
    assert "m.py:6:5: NNX301" in flake8.stdout, flake8
    (tmp_path / "m.py").write_text(SHARED.format(noqa="  # noqa: NNX301"))
    assert _run(tmp_path, NNX_LINT, "check", "--no-cache", "m.py").returncode == 0
