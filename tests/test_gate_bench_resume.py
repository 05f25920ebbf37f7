"""``bench/flax_tests_recall.py --per-file --reuse-runs``: a stopped full run resumes at its first unfinished file.

The full runs of flax's tests take most of an hour on a shared machine. A measurement stopped
half-way left one finished report per file behind; the next one reads those back and runs only
the rest. A report stands in for a run only if it is complete and of the same mode, copy and
selection: anything else runs again.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("libcst")

_PATH = Path(__file__).resolve().parent.parent / "bench" / "flax_tests_recall.py"
_SPEC = importlib.util.spec_from_file_location("flax_tests_recall", _PATH)
flax_tests_recall = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(flax_tests_recall)

from nnx_lint.gate.modes import GRAPH, TREE  # noqa: E402

FIRST, SECOND = "tests/nnx/a_test.py", "tests/nnx/b_test.py"
#: A command that cannot start: a file that is really run shows up as ``failed-to-start``.
NOT_RUNNABLE = ["/nonexistent/python", "-m", "pytest"]


def write_report(path: Path, rootdir: Path, mode, outcomes: dict[str, str], *, finished: bool = True,
                 exception: str = "AssertionError") -> None:
    """A report in the plugin's JSON-lines format: ``outcomes`` maps node ids to passed / failed."""
    records = [{"event": "session", "flax": "0.12.8", "rootdir": str(rootdir), "args": []},
               {"event": "collected", "count": len(outcomes)}]
    for nodeid, outcome in outcomes.items():
        record = {"event": "report", "nodeid": nodeid, "phase": "call", "outcome": outcome}
        if outcome == "failed":
            record["exception"] = {"type": exception, "message": "boom", "frames": []}
        records.append(record)
    if finished:
        failed = any(outcome == "failed" for outcome in outcomes.values())
        records.append({"event": "finished", "exitstatus": int(failed), "flax_config": mode.expected_config})
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")


@pytest.fixture
def copy(tmp_path):
    root = tmp_path / "copy"
    root.mkdir()
    return root


def test_a_finished_report_of_the_same_mode_copy_and_file_stands_in(copy, tmp_path):
    report = tmp_path / "file-0-tree.jsonl"
    write_report(report, copy, TREE, {f"{FIRST}::T::test_x": "passed", f"{FIRST}::T::test_y": "failed"})
    record = flax_tests_recall.saved_file_run(report, TREE, copy, [FIRST])
    assert record is not None and record.complete and record.mode == "tree"
    assert {nodeid: test.outcome for nodeid, test in record.results.tests.items()} == {
        f"{FIRST}::T::test_x": "passed", f"{FIRST}::T::test_y": "failed"}


@pytest.mark.parametrize("mismatch", ["killed", "other mode", "other copy", "other file", "outside the restart"])
def test_any_other_report_runs_again(copy, tmp_path, mismatch):
    report = tmp_path / "report.jsonl"
    mode, rootdir, selection = TREE, copy, [FIRST]
    outcomes = {f"{FIRST}::T::test_x": "passed"}
    if mismatch == "other copy":
        rootdir = tmp_path / "another-copy"
        rootdir.mkdir()
    if mismatch == "other file":
        outcomes = {f"{SECOND}::T::test_x": "passed"}
    if mismatch == "outside the restart":
        selection = [f"{FIRST}::T::test_y"]
    write_report(report, rootdir, GRAPH if mismatch == "other mode" else mode, outcomes,
                 finished=mismatch != "killed")
    assert flax_tests_recall.saved_file_run(report, TREE, copy, selection) is None


def test_per_file_runs_read_finished_files_back_and_run_only_the_others(copy, tmp_path):
    saved = tmp_path / "saved"
    saved.mkdir()
    workdir = tmp_path / "work"
    workdir.mkdir()
    # The first file's run ended in a RecursionError and its restart ran the tests after it.
    write_report(saved / "file-0-tree.jsonl", copy, TREE,
                 {f"{FIRST}::T::test_deep": "failed", f"{FIRST}::T::test_after": "failed"}, exception="RecursionError")
    write_report(saved / "file-0-tree-restart-1.jsonl", copy, TREE, {f"{FIRST}::T::test_after": "passed"})

    resumed = flax_tests_recall.per_file_runs(NOT_RUNNABLE, [FIRST], [TREE], cwd=copy, workdir=workdir,
                                              deadline=None, saved=saved)["tree"]
    assert resumed.complete  # nothing was run
    assert {nodeid: test.outcome for nodeid, test in resumed.results.tests.items()} == {
        f"{FIRST}::T::test_deep": "failed", f"{FIRST}::T::test_after": "passed"}

    # The second file was never finished: it is run (and here cannot start), the first is not.
    partly = flax_tests_recall.per_file_runs(NOT_RUNNABLE, [FIRST, SECOND], [TREE], cwd=copy, workdir=workdir,
                                             deadline=None, saved=saved)["tree"]
    assert partly.status == "failed-to-start" and partly.output_tail.startswith(f"{SECOND}:")
    assert set(partly.results.tests) == {f"{FIRST}::T::test_deep", f"{FIRST}::T::test_after"}

    # Without ``saved`` every file runs.
    fresh = flax_tests_recall.per_file_runs(NOT_RUNNABLE, [FIRST], [TREE], cwd=copy, workdir=workdir, deadline=None)
    assert fresh.get("tree").status == "failed-to-start"
