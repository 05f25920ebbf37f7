"""The language server's warm state without a client: what a long-lived project forgets and re-reads."""
from __future__ import annotations

from pathlib import Path

from nnx_lint.analysis.callers import CallerIndex
from nnx_lint.analysis.project import read_from_disk


def test_a_warm_caller_index_answers_as_a_fresh_one_after_an_edit(tmp_path: Path):
    (tmp_path / "train.py").write_text("def update(model, x):\n    return model\n")
    main = tmp_path / "main.py"
    main.write_text("import os\n")
    buffers: dict[str, bytes] = {}

    def read(path: Path) -> bytes:
        return buffers[str(path)] if str(path) in buffers else read_from_disk(path)

    warm = CallerIndex((str(tmp_path),), read)
    assert warm.candidates("train", "update") == []
    buffers[str(main)] = b"from train import update\nupdate(1, 2)\n"  # an unsaved edit adds a caller
    warm.forget(str(main))
    fresh = CallerIndex((str(tmp_path),), read)
    assert warm.candidates("train", "update") == fresh.candidates("train", "update")
    assert [path for path, _ in warm.candidates("train", "update")] == [str(main)]
    del buffers[str(main)]  # the buffer is closed: the disk's text counts again
    warm.forget(str(main))
    assert warm.candidates("train", "update") == []


def test_opening_a_file_as_it_is_on_disk_re_analyses_only_that_file(tmp_path: Path, monkeypatch):
    from nnx_lint.frontends.server.workspace import Workspace, canonical

    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    models = tmp_path / "models.py"
    models.write_text("from flax import nnx\n\n\nclass Counter(nnx.Module):\n    def __init__(self):\n"
                      "        self.steps = 0\n")
    train = tmp_path / "train.py"
    train.write_text("from flax import nnx\nfrom models import Counter\n\n\n@nnx.jit\ndef step(model: Counter):\n"
                     "    model.steps += 1\n")
    state = Workspace()
    state.open(train, train.read_text())
    assert [d.code for d in state.analyse(train).diagnostics] == ["NNX301"]
    assert str(canonical(models)) in state.results[canonical(train)].dependencies
    assert state.open(models, models.read_text()) == {canonical(models)}, "same text as on disk: nothing else"
    edited = models.read_text().replace("self.steps = 0", "self.steps = nnx.Variable(0)")
    assert state.open(models, edited) == {canonical(models), canonical(train)}
    assert "rebinding Variable" in state.analyse(train).diagnostics[0].message  # read from the buffer
    assert state.close(models) == {canonical(train)}
    assert "non-Variable" in state.analyse(train).diagnostics[0].message  # the disk again


def test_without_pygls_the_server_says_what_to_install(monkeypatch, capsys):
    import importlib.util

    from nnx_lint.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pygls" else real(name, *a))
    assert main(["server"]) == 2
    from nnx_lint.base.install_hints import pip_install

    assert pip_install("server") in capsys.readouterr().err
