"""Warm runs do not read unchanged files (issue 25: warm at or below 0.24x ``ast.parse``), and never
trust a stamp that could hide an edit (``nnx_lint.engine.stamps``)."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from nnx_lint.base import bounds
from nnx_lint.engine import runner, stamps
from nnx_lint.engine.config import load_settings
from nnx_lint.engine.stamps import FileStamps

STATE_AXES = "from flax import nnx\nf = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"
#: The same size as STATE_AXES, and no finding.
PLAIN_DICT = "from flax import nnx\nf = nnx.vmap(g, in_axes=(dict(         {...: 0}),))\n"
NO_NNX = "import numpy as np\nx = np.zeros(3)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "project"
    root.mkdir()
    (root / "axes.py").write_text(STATE_AXES)
    (root / "plain.py").write_text(NO_NNX)
    monkeypatch.chdir(root)
    return root


def _run(cache_dir: Path | None) -> tuple[list[str], list[str]]:
    """The codes found, and the files the run read (a file analysed is read twice: to pre-filter
    and key it, and by the analysis)."""
    read: list[str] = []
    original = bounds.read_bounded

    def counting(path, cap=None):
        read.append(os.path.basename(path))
        return original(path, cap)

    bounds.read_bounded = counting
    try:
        result = runner.run([Path(".")], load_settings(Path(".")), jobs=1, cache_dir=cache_dir)
    finally:
        bounds.read_bounded = original
    return [d.code for d in result.diagnostics], read


def test_an_unchanged_file_is_neither_read_nor_hashed_again(project, tmp_path, monkeypatch):
    monkeypatch.setattr(stamps, "RACY_SECONDS", 0.0)  # the files were just written
    cache = tmp_path / "cache"
    first, first_read = _run(cache)
    assert first == ["NNX201"] and set(first_read) == {"axes.py", "plain.py"}
    second, second_read = _run(cache)
    assert second == first and second_read == []


def test_a_rewrite_that_keeps_the_size_and_the_modification_time_is_read_again(project, tmp_path, monkeypatch):
    monkeypatch.setattr(stamps, "RACY_SECONDS", 0.0)
    cache = tmp_path / "cache"
    assert _run(cache)[0] == ["NNX201"]
    target = project / "axes.py"
    before = target.stat()
    time.sleep(0.05)  # past the file system's timestamp tick
    target.write_text(PLAIN_DICT)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # size and mtime as they were
    assert target.stat().st_size == before.st_size and target.stat().st_mtime_ns == before.st_mtime_ns
    codes, read = _run(cache)
    assert codes == [] and set(read) == {"axes.py"}, "the change time gave the edit away"


def test_a_file_modified_just_before_it_was_read_gets_no_stamp(project, tmp_path):
    cache = tmp_path / "cache"
    assert _run(cache)[0] == ["NNX201"]
    assert sorted(_run(cache)[1]) == ["axes.py", "plain.py"], "both files are younger than the racy window"
    assert FileStamps(cache, runner.code_fingerprint()).files == {}


def test_stamps_are_kept_only_with_the_cache_and_for_the_same_code(project, tmp_path, monkeypatch):
    monkeypatch.setattr(stamps, "RACY_SECONDS", 0.0)
    codes, read = _run(None)  # --no-cache
    assert codes == ["NNX201"] and set(read) == {"axes.py", "plain.py"}
    assert _run(None)[1] == read, "without a cache every file is read every time"
    cache = tmp_path / "cache"
    _run(cache)
    assert set(FileStamps(cache, runner.code_fingerprint()).files) == {str(project / "axes.py"),
                                                                       str(project / "plain.py")}
    assert FileStamps(cache, "another nnx-lint").files == {}, "another pre-filter reads every file again"
