"""The collector's thresholds are raised while files are analysed, and restored after."""
from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from nnx_lint.engine import collection, walk as engine, runner
from nnx_lint.analysis.project import forget_shared_projects


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
    list(runner._execute([("a.py", "a.py", (), [])], jobs=1))
    assert seen == [collection.ANALYSIS_THRESHOLDS]
    assert gc.get_threshold() == (700, 10, 10)


@pytest.fixture
def unfrozen(monkeypatch):
    gc.unfreeze()
    monkeypatch.setattr(collection, "_frozen_here", False)  # what a worker keeps between batches
    yield
    gc.unfreeze()


def _project(tmp_path: Path) -> list[tuple]:
    tied = (Path(__file__).parent / "fixtures" / "shared_references" / "NNX101_tied_variable_into_jit.py").read_text()
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.py").write_text(tied)
    selectors = (None, (), ())  # the default rules
    return [(str(tmp_path / f"{n}.py"), f"{n}.py", selectors, [str(tmp_path)]) for n in ("a", "b", "c")]


def _linted_trees(monkeypatch) -> list[weakref.ref]:
    trees: list[weakref.ref] = []
    original = engine.lint_module

    def lint_module(module, *args, **kwargs):
        trees.append(weakref.ref(module))
        return original(module, *args, **kwargs)

    monkeypatch.setattr(engine, "lint_module", lint_module)
    return trees


def test_each_file_is_settled_and_everything_is_handed_back_after_the_run(tmp_path, monkeypatch, unfrozen):
    jobs = _project(tmp_path)
    trees = _linted_trees(monkeypatch)
    frozen_after_each: list[int] = []
    settle = collection.settle_file
    # The runner imports it from the collection module when it analyses (a warm run does not).
    monkeypatch.setattr(collection, "settle_file", lambda: (settle(), frozen_after_each.append(gc.get_freeze_count())))
    outcomes = list(runner._execute(jobs, jobs=1))
    assert [[d["code"] for d in diagnostics] for diagnostics, _ in outcomes] == [["NNX101"]] * 3
    assert len(frozen_after_each) == 3 and all(count > 0 for count in frozen_after_each)
    assert gc.get_freeze_count() == 0, "handed back to the collector"
    forget_shared_projects()
    gc.collect()
    assert len(trees) == 3 and all(tree() is None for tree in trees), "no linted tree outlives the run"


def test_a_worker_keeps_its_survivors_aside_from_batch_to_batch(tmp_path, unfrozen):
    jobs = _project(tmp_path)
    list(runner._analyse_batch(jobs[:1], in_worker=True))
    after_first = gc.get_freeze_count()
    assert after_first > 0
    list(runner._analyse_batch(jobs[1:], in_worker=True))
    assert gc.get_freeze_count() > after_first  # the second batch is settled too


def test_a_process_that_froze_objects_itself_is_left_as_it_is(tmp_path, unfrozen):
    jobs = _project(tmp_path)
    gc.collect()  # the earlier tests' garbage is not frozen with the process's objects
    gc.freeze()
    frozen = gc.get_freeze_count()
    list(runner._execute(jobs, jobs=1))
    # Neither unfrozen (0) nor settled (the run's trees frozen on top). A frozen object the run
    # lets go of (a cache entry an earlier test left) leaves the count, so it may only drop a little.
    assert 0 < gc.get_freeze_count() <= frozen
