"""How the gate runs its isolated re-runs (issue 27: overhead at most 2x the two plain runs), as a
user runs it: ``nnx-lint gate`` in a subprocess on a tiny flax-free project.

- A test's graph-mode re-run overlaps the next test's Tree Mode re-run (two lanes, 2+ cores);
  ``--serial-reruns`` runs them one at a time; the verdicts are the same either way, and every
  re-run still runs alone in its own process.
- The runs' bytecode goes to the gate's private directory (``PYTHONPYCACHEPREFIX``), never to the
  project's tree, and is gone after the run; only the first full run may instead read the
  installation's bytecode and write none (``docs/gate.md``, "Bytecode").
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the gate's re-runs, each a pytest process that sleeps

#: Three tests that fail only in Tree Mode; each logs its pid, mode and interval to ``$RERUN_LOG``,
#: and the interpreter's bytecode prefix, then sleeps long enough for two of them to overlap.
PROJECT = {
    "pytest.ini": "[pytest]\npython_files = check_*.py\n",
    "helpers.py": textwrap.dedent("""\
        import os
        import sys
        import time


        def logged(name):
            started = time.time()
            time.sleep(0.8)
            with open(os.environ["RERUN_LOG"], "a") as log:
                log.write(f"{os.getpid()} {os.environ['NNX_GRAPH_MODE']} {name} {started} {time.time()} "
                          f"{sys.pycache_prefix or '-'} {int(sys.flags.dont_write_bytecode)}\\n")
            if os.environ["NNX_GRAPH_MODE"] == "false":
                raise ValueError("does not support Variable aliasing")
        """),
    "check_three.py": textwrap.dedent("""\
        from helpers import logged


        def test_one():
            logged("one")


        def test_two():
            logged("two")


        def test_three():
            logged("three")
        """),
}


def _gate(root: Path, log: Path, *options: str) -> tuple[dict, list[tuple[int, str, str, float, float, str, str]]]:
    log.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-m", "nnx_lint.cli", "gate", ".", "--output-format", "json", *options],
                          cwd=root, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "RERUN_LOG": str(log)})
    assert done.stdout, done.stderr
    entries = []
    for line in log.read_text().splitlines():
        pid, mode, name, started, ended, prefix, no_writing = line.split(" ")
        entries.append((int(pid), mode, name, float(started), float(ended), prefix, no_writing))
    return json.loads(done.stdout), entries


def _reruns(entries):
    """The entries of processes that ran one test: the isolated re-runs (a full run runs three)."""
    per_pid: dict[int, list] = {}
    for entry in entries:
        per_pid.setdefault(entry[0], []).append(entry)
    return [runs[0] for runs in per_pid.values() if len(runs) == 1]


def _overlapping(reruns) -> list[tuple[str, str]]:
    """Pairs of re-runs of different tests whose intervals overlap."""
    return [(f"{a[2]}/{a[1]}", f"{b[2]}/{b[1]}") for i, a in enumerate(reruns) for b in reruns[i + 1:]
            if a[2] != b[2] and a[3] < b[4] and b[3] < a[4]]


def _verdicts(report: dict) -> dict[str, list[str]]:
    return {kind: sorted(item["nodeid"] for item in report[kind])
            for kind in ("tree_breaks", "not_isolated", "order_dependent", "fails_in_both_modes", "graph_only")}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("reruns")
    for name, text in PROJECT.items():
        (root / name).write_text(text)
    return root


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def test_graph_mode_reruns_overlap_the_next_tree_mode_rerun_with_the_same_verdicts(project, tmp_path):
    before = sorted(path.relative_to(project) for path in project.rglob("*"))
    concurrent, entries = _gate(project, tmp_path / "log")
    reruns = _reruns(entries)
    assert len(reruns) == 6 and concurrent["summary"]["reruns"] == 6  # each test alone in both modes
    serial, serial_entries = _gate(project, tmp_path / "log", "--serial-reruns")
    assert _verdicts(concurrent) == _verdicts(serial)
    assert _verdicts(serial)["tree_breaks"] == ["check_three.py::test_one", "check_three.py::test_three",
                                                "check_three.py::test_two"]
    assert _overlapping(_reruns(serial_entries)) == [], "--serial-reruns: one re-run at a time"
    if _cores() >= 2:
        overlaps = _overlapping(reruns)
        assert overlaps, "the graph-mode re-run of one test runs while the next test's Tree Mode re-run does"
        modes = {frozenset(part.split("/")[1] for part in pair) for pair in overlaps}
        assert modes == {frozenset({"true", "false"})}, "only the two lanes overlap, never two re-runs of one mode"
    # Bytecode went to the gate's private directory (the same one for every run), never the tree;
    # a run without it (the first full run, where the installation has bytecode) wrote none.
    prefixes = {entry[5] for entry in entries if entry[5] != "-"}
    assert len(prefixes) == 1 and not Path(prefixes.pop()).exists()
    assert all(entry[6] == "1" for entry in entries if entry[5] == "-")
    assert all(entry[5] != "-" for entry in reruns), "every re-run loads what an earlier run compiled"
    assert sorted(path.relative_to(project) for path in project.rglob("*")) == before
