"""``nnx-lint gate`` on a real flax project: ``tests/fixtures_gate/project``.

One gate run (module-scoped: each flax import costs seconds) on a copy of the fixture
project, whose tests each show one thing the gate must tell apart:

- ``test_predicted_break``: breaks in Tree Mode (StateAxes prefix filter), predicted by NNX201;
- ``test_unpredicted_break``: breaks in Tree Mode (a shared Variable under a name known only at
  run time), no static finding; it also leaves ``models.double`` replaced when it breaks;
- ``test_passes``: passes in both modes (and holds a silent NNX304 finding);
- ``test_fails_in_both_modes``;
- ``test_polluted``: fails only in the full Tree Mode run, after ``test_unpredicted_break``;
- ``test_tied_weights``: breaks in Tree Mode inside ``nnx.jit`` (a tied kernel), explained by NNX101
  through the attribute paths flax's error names.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the gate on a flax project: two pytest runs importing flax, and re-runs

pytest.importorskip("flax")

PROJECT = Path(__file__).resolve().parent / "fixtures_gate" / "project"


def _snapshot(root: Path) -> dict[str, str]:
    """Every file and directory under ``root`` with the digest of its bytes."""
    return {str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
            for path in sorted(root.rglob("*"))}


@pytest.fixture(scope="module")
def gate_run(tmp_path_factory):
    project = tmp_path_factory.mktemp("gate") / "project"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))
    before = _snapshot(project)
    done = subprocess.run([sys.executable, "-m", "nnx_lint.cli", "gate", ".", "--output-format", "json"],
                          cwd=project, capture_output=True, text=True, timeout=900)
    return done, json.loads(done.stdout), before, _snapshot(project)


def _break(report: dict, name: str) -> dict:
    """The Tree Mode break of the fixture test ``name``."""
    return next(item for item in report["tree_breaks"] if item["nodeid"].endswith("::" + name))


def _ids(items: list[dict]) -> list[str]:
    return [item["nodeid"].rpartition("::")[2] for item in items]


def test_each_test_is_classified(gate_run):
    done, report, _before, _after = gate_run
    assert report["problems"] == [], report["problems"]
    assert _ids(report["tree_breaks"]) == ["test_predicted_break", "test_tied_weights",
                                              "test_unpredicted_break"]
    assert _ids(report["order_dependent"]) == ["test_polluted"]
    assert _ids(report["fails_in_both_modes"]) == ["test_fails_in_both_modes"]
    assert report["not_isolated"] == [] and report["graph_only"] == []
    assert report["summary"]["tests"] == 6
    assert done.returncode == 1  # three breaks, no baseline


def test_the_modes_really_took_effect(gate_run):
    _done, report, _before, _after = gate_run
    assert report["runs"]["graph"]["flax_config"] == {"nnx_graph_mode": True, "nnx_graph_updates": True}
    assert report["runs"]["tree"]["flax_config"] == {"nnx_graph_mode": False, "nnx_graph_updates": False}


def test_predicted_break_is_explained_by_nnx201(gate_run):
    _done, report, _before, _after = gate_run
    item = _break(report, "test_predicted_break")
    attribution = item["attribution"]
    assert attribution["exception"]["category"] == "prefix-filter"
    assert attribution["deepest_frame"]["file"] == "models.py"
    assert attribution["deepest_frame"]["function"] == "vmapped_forward"
    assert attribution["explained"]
    assert attribution["summary"].startswith("explained by NNX201 at models.py:21")
    assert item["alone_graph"]["outcome"] == "passed" and item["alone_tree"]["outcome"] == "failed"


def test_unpredicted_break_is_unexplained(gate_run):
    _done, report, _before, _after = gate_run
    attribution = _break(report, "test_unpredicted_break")["attribution"]
    assert attribution["exception"]["category"] == "aliasing"
    assert attribution["deepest_frame"]["file"] == "check_gate.py"
    assert attribution["summary"] == "unexplained"
    assert report["summary"]["explained"] == 2 and report["summary"]["unexplained"] == 1


def test_tied_weight_break_is_explained_by_nnx101_through_the_paths_in_flaxs_error(gate_run):
    _done, report, _before, _after = gate_run
    attribution = _break(report, "test_tied_weights")["attribution"]
    assert attribution["exception"]["category"] == "aliasing"
    assert attribution["deepest_frame"]["file"] == "check_gate.py"  # the tie is in models.py, far from here
    assert attribution["summary"] == (
        "explained by NNX101 at models.py:45 (its paths `a.kernel`, `b.kernel` are inside the paths the error "
        "names: .args[0].a.kernel, .args[0].b.kernel)")
    assert attribution["matches"][0]["how"] == "alias-paths"
    assert attribution["matches"][0]["paths"] == ["a.kernel", "b.kernel"]


def test_the_text_report_keeps_the_whole_error(gate_run):
    from nnx_lint.gate.report import render_text

    _done, report, _before, _after = gate_run
    message = _break(report, "test_tied_weights")["alone_tree"]["exception"]["message"]
    assert "found at paths:" in message and "- .args[0].b.kernel" in message
    text = render_text(report)
    assert "found at paths:" in text and "- .args[0].b.kernel" in text and "nnx.compat.jit(...)" in text


def test_silent_finding_in_a_passing_test_is_listed(gate_run):
    _done, report, _before, _after = gate_run
    assert [(item["code"], item["path"], item["tests"]) for item in report["findings_in_passing_tests"]] == [
        ("NNX304", "check_gate.py", ["check_gate.py::test_passes"])]


def test_the_working_tree_is_byte_identical_after_the_gate(gate_run):
    _done, _report, before, after = gate_run
    assert after == before
