"""Whether a gate run tested anything at all, and if not, why, in one line.

A run that compared nothing must never read like a clean one ("0 tests: 0 break(s)"): the test
command's Python may lack nnx-lint or pytest (``python`` on PATH is another environment), pytest
may collect no test, every module may fail to import, or one of the two modes may not have run.
:func:`untested_reason` names the first of these that applies; the gate then exits 2 with
``nothing was tested: <reason>`` as its last line.
"""
from __future__ import annotations

import shutil
import sys
from typing import TYPE_CHECKING

from nnx_lint.gate.modes import MODES

if TYPE_CHECKING:
    from nnx_lint.gate.classify import GateOutcome
    from nnx_lint.gate.runner import RunRecord


def gate_extra() -> str:
    """How to install the ``gate`` extra (what the gate needs besides nnx-lint itself), in the
    form that matches this installation (:func:`nnx_lint.base.install_hints.pip_install`)."""
    from nnx_lint.base.install_hints import pip_install

    return pip_install("gate")


_MISSING_MODULE = "No module named"


def _python_of(command: list[str]) -> str:
    """The interpreter a test command runs, resolved on PATH when it is a bare name."""
    first = command[0] if command else "?"
    return shutil.which(first) or first


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def no_report_reason(record: RunRecord, label: str = "", other_mode_reported: bool = False) -> str:
    """Why a run produced no per-test report, from what it printed, in one line.

    ``label`` names the run's mode; ``other_mode_reported``: the other mode's run did report, so
    the plugin is installed and the cause is this mode's.
    """
    tail = record.output_tail
    python = _python_of(record.command)
    if f"{_MISSING_MODULE} pytest" in tail or f"{_MISSING_MODULE} 'pytest'" in tail:
        return (f"the test command's Python ({python}) has no pytest: it is not the environment nnx-lint runs in; "
                f"{gate_extra()} there, or pass the gate's own Python: -- {sys.executable} -m pytest")
    if "nnx_lint" in tail and (_MISSING_MODULE in tail or "ImportError" in tail):
        return (f"the test command's Python ({python}) cannot import nnx-lint's pytest plugin: it is not the "
                f"environment nnx-lint is installed in; {gate_extra()} there, or pass the gate's own Python: "
                f"-- {sys.executable} -m pytest")
    last = _last_line(tail)
    return (f"the {label or 'test'} run produced no report (exit status {record.returncode})"
            + (f"; its last output line: {last}" if last else "")
            + ("" if other_mode_reported else f"; is nnx-lint installed in the test command's Python ({python})?"))


def _run_reason(record: RunRecord, label: str, other_mode_reported: bool) -> str | None:
    """Why one full run tested nothing, or None when it ran tests."""
    results = record.results
    if record.status == "failed-to-start":
        return f"the test command could not start: {record.output_tail}"
    if record.status == "no-report":
        return no_report_reason(record, label, other_mode_reported)
    if record.status == "usage-error":
        last = _last_line(record.output_tail)
        return (f"pytest stopped with a usage or internal error (exit status {results.pytest_status})"
                + (f": {last}" if last else ""))
    if results.saw_session and results.flax_version is None:
        return f"flax is not installed in the test command's Python ({_python_of(record.command)}); {gate_extra()}"
    if record.status == "no-tests" or (record.status == "finished" and not results.tests
                                       and not results.collect_errors):
        return "pytest collected no tests (check the test paths, python_files and -k of the test command)"
    if not results.tests and not results.collect_errors:
        return f"the {label} run ended ({record.status}) before any test ran"
    return None


def untested_reason(outcome: GateOutcome) -> str | None:
    """Why the gate compared nothing (one line), or None when at least one test ran in both modes."""
    if not outcome.runs and outcome.verdicts:
        return None  # verdicts from runs made elsewhere (a measurement script resuming saved reports)
    for mode in MODES:
        record = outcome.runs.get(mode.name)
        if record is None:
            continue
        reported = any(other.name != mode.name and outcome.runs[other.name].results.saw_session
                       for other in MODES if other.name in outcome.runs)
        reason = _run_reason(record, mode.label, reported)
        if reason is not None:
            return reason
    for mode in MODES:
        if mode.name not in outcome.runs:
            return f"the {mode.label} run did not run" + (" (interrupted)" if outcome.interrupted else "")
    graph, tree = outcome.runs["graph"].results, outcome.runs["tree"].results
    if not graph.tests and not tree.tests:
        errors = sorted(set(graph.collect_errors) | set(tree.collect_errors))
        shown = ", ".join(errors[:5]) + (", ..." if len(errors) > 5 else "")
        return f"no module could be collected ({len(errors)} collection error(s): {shown})"
    if not graph.tests or not tree.tests:
        empty = "graph mode" if not graph.tests else "Tree Mode"
        return f"no test ran in the {empty} run"
    return None
