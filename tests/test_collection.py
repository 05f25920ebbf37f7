"""The collector's thresholds are raised while files are analysed, and restored after."""
from __future__ import annotations

import gc

import pytest

from nnx_lint import collection, runner


@pytest.fixture
def thresholds():
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


def test_thresholds_are_raised_inside_and_restored_after(thresholds):
    gc.set_threshold(700, 10, 10)
    with collection.fewer_collections():
        assert gc.get_threshold() == collection.ANALYSIS_THRESHOLDS
    assert gc.get_threshold() == (700, 10, 10)


def test_a_callers_higher_thresholds_are_kept_and_restored_after_an_error(thresholds):
    gc.set_threshold(100_000, 5, 50)
    with pytest.raises(RuntimeError):
        with collection.fewer_collections():
            assert gc.get_threshold() == (100_000, 20, 50)
            raise RuntimeError("a failing analysis")
    assert gc.get_threshold() == (100_000, 5, 50)


def test_files_are_analysed_with_the_raised_thresholds(thresholds, monkeypatch):
    gc.set_threshold(700, 10, 10)
    seen = []
    monkeypatch.setattr(runner, "analyse_file", lambda *job: seen.append(gc.get_threshold()) or ([], {}))
    runner._execute([("a.py", "a.py", (), [])], jobs=1)
    assert seen == [collection.ANALYSIS_THRESHOLDS]
    assert gc.get_threshold() == (700, 10, 10)
