"""``nnx-lint check -`` with ``--stdin-filename``, and ``--force-exclude``."""
from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from _support import REPO

from nnx_lint.cli import main

AXES = "from flax import nnx\nf = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"
CONFIG = """\
[tool.nnx-lint]
exclude = ["vendored"]
per-file-ignores = { "tests/*" = ["NNX2"] }
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    for folder in ("src", "tests", "vendored/lib", "build"):
        (tmp_path / folder).mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def from_stdin(monkeypatch, capsys, data: str, *args: str):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.encode())))
    code = main(["check", "-", "--no-cache", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_stdin_reports_the_given_path(project, monkeypatch, capsys):
    code, out, _ = from_stdin(monkeypatch, capsys, AXES, "--stdin-filename", "src/model.py")
    assert code == 1
    assert out.startswith("src/model.py:2:26: NNX201 ")
    assert "1 file checked" in out
    assert not (project / "src" / "model.py").exists()


def test_stdin_without_a_filename_is_reported_as_dash(project, monkeypatch, capsys):
    code, out, _ = from_stdin(monkeypatch, capsys, AXES)
    assert code == 1 and out.startswith("-:2:26: NNX201 ")


def test_stdin_filename_drives_per_file_ignores_and_config(project, monkeypatch, capsys):
    code, out, _ = from_stdin(monkeypatch, capsys, AXES, "--stdin-filename", "tests/test_model.py")
    assert code == 0 and "All checks passed!" in out
    # A file in another project (no pyproject.toml): its own config, so NNX201 shows again.
    other = project / "other"
    other.mkdir()
    (other / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    code, out, _ = from_stdin(monkeypatch, capsys, AXES, "--stdin-filename", "other/tests/test_model.py")
    assert code == 1


def test_stdin_excluded_path_is_skipped_only_with_force_exclude(project, monkeypatch, capsys):
    assert from_stdin(monkeypatch, capsys, AXES, "--stdin-filename", "vendored/lib/x.py")[0] == 1
    code, out, _ = from_stdin(monkeypatch, capsys, AXES, "--stdin-filename", "vendored/lib/x.py", "--force-exclude")
    assert code == 0 and "NNX201" not in out


def test_stdin_resolves_imports_relative_to_the_filename(project, monkeypatch, capsys):
    fixture = REPO / "tests" / "fixtures" / "grad_semantics" / "grad_pkg"
    (project / "src" / "__init__.py").write_text("")
    (project / "src" / "models.py").write_text((fixture / "models.py").read_text())
    user = (fixture / "NNX401_cross_file.py").read_text()  # `from .models import Classifier`
    code, out, _ = from_stdin(monkeypatch, capsys, user, "--stdin-filename", "src/train.py", "--output-format", "json")
    assert code == 1
    assert [(d["filename"], d["code"]) for d in json.loads(out)] == [("src/train.py", "NNX401")]
    # Elsewhere, `.models` is not there to say what the model holds: no finding.
    code, out, _ = from_stdin(monkeypatch, capsys, user, "--stdin-filename", "tests/train.py", "--output-format", "json")
    assert json.loads(out) == []


def test_stdin_notebook(project, monkeypatch, capsys):
    notebook = {"cells": [{"cell_type": "markdown", "source": ["# title"]},
                          {"cell_type": "code", "source": ["from flax import nnx\n"]},
                          {"cell_type": "code", "source": ["f = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"]}]}
    code, out, _ = from_stdin(monkeypatch, capsys, json.dumps(notebook), "--stdin-filename", "src/nb.ipynb",
                              "--output-format", "json")
    assert code == 1
    (found,) = json.loads(out)
    assert (found["filename"], found["cell"], found["location"]["row"], found["code"]) == ("src/nb.ipynb", 3, 1, "NNX201")  # cells counted as Ruff does: all of them


def test_stdin_usage_errors(project, capsys):
    assert main(["check", "-", "src"]) == 2
    assert "cannot be combined" in capsys.readouterr().err
    assert main(["check", "src", "--stdin-filename", "x.py"]) == 2
    assert "pass `-`" in capsys.readouterr().err


def test_stdin_through_the_console_script(project):
    result = subprocess.run(
        [sys.executable, "-m", "nnx_lint.cli", "check", "-", "--stdin-filename", "src/m.py", "--no-cache"],
        input=AXES, capture_output=True, text=True, cwd=project, env={"PYTHONPATH": str(REPO), "PATH": ""},
        timeout=300,
    )
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("src/m.py:2:26: NNX201")


def test_force_exclude_applies_excludes_to_named_paths(project, capsys):
    for path in ("src/a.py", "vendored/lib/b.py", "build/c.py"):
        (project / path).write_text(AXES)
    named = ["src/a.py", "vendored/lib/b.py", "build/c.py", "vendored"]
    assert main(["check", "--no-cache", *named]) == 1
    out = capsys.readouterr().out
    assert {"src/a.py", "vendored/lib/b.py", "build/c.py"} <= {line.split(":")[0] for line in out.splitlines()}
    assert main(["check", "--no-cache", "--force-exclude", *named]) == 1
    out = capsys.readouterr().out
    reported = {line.split(":")[0] for line in out.splitlines() if ": NNX" in line}
    assert reported == {"src/a.py"}, "configured excludes, their sub-directories and default excludes apply"
    assert main(["check", "--no-cache", "--force-exclude", "vendored/lib/b.py"]) == 0
    assert "All checks passed! (0 files checked)" in capsys.readouterr().out


def test_force_exclude_never_excludes_the_project_itself(tmp_path, monkeypatch, capsys):
    root = tmp_path / "build"  # a default-excluded name, as the checkout's own folder
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    (root / "a.py").write_text(AXES)
    monkeypatch.chdir(root)
    assert main(["check", "--no-cache", "--force-exclude", "."]) == 1
    assert "a.py:2:26: NNX201" in capsys.readouterr().out
