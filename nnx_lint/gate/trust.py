"""Whether a run's records can be believed: the channel, the mode at every test, and agreement.

The gate runs the project's tests, so the test process is the project's code. The plugin
reports from inside it; these checks make the practical ways of turning a Tree Mode break
into a pass fail loudly (the run becomes ``untrusted``, the gate exits 2):

- a record that is not signed with the run's key, or arrives out of order (``channel``);
- a test during which flax was not in the run's mode: ``flax.config`` or the current
  ``nnx.set_graph_mode`` / ``nnx.set_graph_updates`` value, seen by the plugin at the start
  and end of every setup, call (and the test function itself) and teardown, and at the end
  of the run. A conftest that switches to graph mode for the Tree Mode run and switches back
  before the session ends, a fixture that enters ``nnx.set_graph_mode(True)`` around each
  test, or a mode switched only in the isolated re-runs are all seen;
- records that disagree with what pytest itself says: the process's exit status against the
  exit status the plugin recorded, tests that were collected but never reported, a summary
  line that counts failures the records do not have.

Code in the test process that reaches into the plugin (or into pytest's own reports) can
still lie consistently; ``docs/security.md`` ("The gate") says what is and is not guaranteed.
"""
from __future__ import annotations

import re
from typing import Any

from nnx_lint.gate.modes import Mode
from nnx_lint.gate.results import RunResults

#: How many offending tests a problem names.
_NAMED = 3
# pytest's last summary line: "=== 1 failed, 2 passed in 0.12s ===" (or without the bars, -q).
_SUMMARY = re.compile(r"^=*\s*(?P<counts>(?:\d+ \w+(?:, )?)+)(?: in [\d.]+s)", re.MULTILINE)
_COUNT = re.compile(r"(\d+) (failed|errors?)\b")


def expected_observation(mode: Mode) -> list[bool]:
    """The plugin's observation (see ``pytest_plugin.observed_mode``) when flax is in ``mode``."""
    graph_mode, graph_updates = mode.expected_config["nnx_graph_mode"], mode.expected_config["nnx_graph_updates"]
    return [graph_mode, graph_updates, graph_mode, graph_updates]


def _describe(observation: Any) -> str:
    if not isinstance(observation, list) or len(observation) != 4:
        return f"an unreadable observation {observation!r:.80}"
    config = f"flax.config graph_mode={observation[0]}, graph_updates={observation[1]}"
    if observation[2:] == observation[:2]:
        return config
    return f"{config}; nnx.set_graph_mode/set_graph_updates in force: {observation[2]}, {observation[3]}"


def mode_problems(results: RunResults, mode: Mode) -> list[str]:
    """Where flax was not in ``mode`` while the run's tests ran (None observations: flax not imported yet)."""
    expected = expected_observation(mode)
    wrong = [(nodeid, phase, observation) for nodeid, phase, observation in results.modes_seen
             if observation is not None and observation != expected]
    if not wrong:
        return []
    tests = sorted({nodeid for nodeid, _phase, _observation in wrong if nodeid})
    nodeid, phase, observation = wrong[0]
    where = "at the end of the run" if phase == "end" else f"in the {phase} of {nodeid}"
    named = ", ".join(tests[:_NAMED]) + (f" and {len(tests) - _NAMED} more" if len(tests) > _NAMED else "")
    return [f"flax was not in {mode.label} {where} ({_describe(observation)})"
            + (f"; tests affected: {named}" if tests else "")
            + ": the tests, a fixture or a conftest switched the mode (NNX_GRAPH_MODE / NNX_GRAPH_UPDATES, "
              "flax.config.update, nnx.set_graph_mode)"]


def summary_failures(output_tail: str) -> int | None:
    """The failures and errors pytest's last summary line counts; None without such a line."""
    matches = list(_SUMMARY.finditer(output_tail))
    if not matches:
        return None
    return sum(int(count) for count, _kind in _COUNT.findall(matches[-1]["counts"]))


def agreement_problems(results: RunResults, returncode: int | None, output_tail: str) -> list[str]:
    """Where the records disagree with pytest's exit status, its collection or its summary line."""
    if not results.finished:
        return []
    problems = []
    recorded = results.pytest_status
    if returncode is not None and recorded is not None and returncode != recorded:
        problems.append(f"pytest recorded exit status {recorded} but the process exited with {returncode}")
    failing = results.failing_count()
    reported = sum(1 for test in results.tests.values())
    if not failing and recorded == 0 and results.collected is not None and reported < results.collected:
        problems.append(f"{results.collected} tests were collected but only {reported} have results")
    counted = summary_failures(output_tail)
    if counted is not None and counted > failing:
        problems.append(f"pytest's summary counts {counted} failure(s) or error(s) but only {failing} were recorded")
    return problems


def cross_run_problems(graph: RunResults, tree: RunResults) -> list[str]:
    """pytest says tests failed in the Tree Mode run only, yet no failure was recorded there.

    (Both runs exiting 1 without a failure is a project setting such as ``--cov-fail-under``.)
    """
    if graph.pytest_status == 0 and tree.pytest_status == 1 and tree.failing_count() == 0:
        return ["pytest exited with 'tests failed' in the Tree Mode run only, but no failure was recorded there"]
    return []


def run_trust_problems(results: RunResults, mode: Mode, returncode: int | None, output_tail: str) -> list[str]:
    """Everything that makes one run's records untrustworthy; empty when they can be used."""
    return list(results.channel_problems) + mode_problems(results, mode) + agreement_problems(
        results, returncode, output_tail)
