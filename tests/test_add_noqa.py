"""``--add-noqa``: every current finding suppressed in place, idempotently, never inside a string."""
from __future__ import annotations

import json

import pytest

from nnx_lint.cli import main

AXES = "nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def add_noqa(capsys, *paths):
    code = main(["check", "--no-cache", "--add-noqa", *paths])
    return code, capsys.readouterr().err


def test_adds_merges_and_is_idempotent(project, capsys):
    source = (
        "from flax import nnx\n"
        f"a = {AXES}\n"
        f"b = {AXES}  # noqa: E501\n"
        f"c = {AXES}  # a remark\r\n"
        f"d = {AXES}; e = nnx.grad(fn, argnums=nnx.DiffState(0, nnx.Param))\n"
    )
    (project / "m.py").write_bytes(source.encode())
    code, err = add_noqa(capsys, "m.py")
    assert code == 0
    assert "Added 5 noqa directives to 1 file." in err
    assert (project / "m.py").read_bytes().decode() == (
        "from flax import nnx\n"
        f"a = {AXES}  # noqa: NNX201\n"
        f"b = {AXES}  # noqa: E501, NNX201\n"
        f"c = {AXES}  # a remark  # noqa: NNX201\r\n"
        f"d = {AXES}; e = nnx.grad(fn, argnums=nnx.DiffState(0, nnx.Param))  # noqa: NNX201, NNX202\n"
    )
    assert main(["check", "--no-cache", "m.py"]) == 0
    capsys.readouterr()
    before = (project / "m.py").read_bytes()
    code, err = add_noqa(capsys, "m.py")
    assert "Added 0 noqa directives to 0 files." in err
    assert (project / "m.py").read_bytes() == before


def test_never_writes_into_a_multi_line_string_or_after_a_backslash(project, capsys):
    source = (
        "from flax import nnx\n"
        f'f = {AXES[:-1]}, doc="""first\n'
        'second""")\n'
        f"g = {AXES[:-1]}, \\\n"
        "    name=1)\n"
    )
    (project / "m.py").write_text(source)
    code, err = add_noqa(capsys, "m.py")
    assert code == 0
    after = (project / "m.py").read_text()
    compile(after, "m.py", "exec")  # still valid Python
    # As in flake8, a `# noqa` covers every line of the token run it ends (a triple-quoted
    # string, backslash-joined lines): the comment goes on the last line, never inside.
    assert after == source.replace('second""")\n', 'second""")  # noqa: NNX201\n').replace(
        "    name=1)\n", "    name=1)  # noqa: NNX201\n")
    assert "Added 2 noqa directives to 1 file" in err
    capsys.readouterr()
    assert main(["check", "--no-cache", "m.py"]) == 0  # and they suppress the findings


def test_notebooks_are_named_not_edited(project, capsys):
    notebook = {"cells": [{"cell_type": "code", "source": ["from flax import nnx\n", f"f = {AXES}\n"]}]}
    (project / "nb.ipynb").write_text(json.dumps(notebook))
    before = (project / "nb.ipynb").read_text()
    code, err = add_noqa(capsys, "nb.ipynb")
    assert code == 1 and (project / "nb.ipynb").read_text() == before
    assert "left nb.ipynb: cell 1:2: notebooks are not edited by --add-noqa" in err
    assert "1 finding left unsuppressed" in err, "issue 27: a notebook finding still fails the next run"


def test_add_noqa_with_stdin_is_a_usage_error(project, capsys):
    assert main(["check", "-", "--add-noqa"]) == 2
    assert "--add-noqa" in capsys.readouterr().err
