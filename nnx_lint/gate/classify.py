"""The gate's runs and verdicts: both full runs, then every Tree-Mode-only failure alone.

Verdicts (``Verdict.kind``):

- ``tree-break``: fails alone in Tree Mode and passes alone in graph mode;
- ``order-dependent``: fails only in the full Tree Mode run; passes alone in Tree Mode
  (an earlier test's pollution). Its graph-mode re-run is skipped: it cannot change the verdict;
- ``both``: fails in both full runs, or fails alone in both modes;
- ``not-isolated``: failed only in the full Tree Mode run, but its re-runs were skipped
  (time budget) or could not produce a result. Counted like a break for the exit status;
- ``graph-only``: fails in graph mode only (listed for completeness).
"""
from __future__ import annotations

import os
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from nnx_lint.gate.bytecode import start_seeding
from nnx_lint.gate.modes import GRAPH, TREE, Mode
from nnx_lint.gate.results import Failure, RunResults, TestResult, frames_from_text
from nnx_lint.gate.runner import (PYTEST_OPTIONS, GateInterrupted, Progress, RunRecord, WarmServer, is_pytest_command,
                                  rerun_command, run_once, uses_junit, warm_python)
from nnx_lint.gate.shard import PYTEST_OPTION as SHARD_OPTION
from nnx_lint.gate.shard import in_shard
from nnx_lint.gate.trust import cross_run_problems
from nnx_lint.gate.untested import no_report_reason
from nnx_lint.gate.warm import write_preload
from nnx_lint.confirmation.sandbox import OrphanSweeper

VERDICT_KINDS = ("tree-break", "order-dependent", "not-isolated", "both", "graph-only")


@dataclass
class Verdict:
    """What the gate concluded about one test."""

    nodeid: str
    kind: str
    graph: TestResult | None = None
    tree: TestResult | None = None
    alone_tree: TestResult | None = None
    alone_graph: TestResult | None = None
    note: str = ""

    @property
    def failure(self) -> Failure | None:
        """The Tree Mode failure to attribute: from the isolated run when there is one."""
        for result in (self.alone_tree, self.tree):
            if result is not None and result.failure is not None:
                return result.failure
        return None


@dataclass
class GateOutcome:
    """Everything a gate run produced, before attribution."""

    runs: dict[str, RunRecord] = field(default_factory=dict)
    reruns: list[RunRecord] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    tests_total: int = 0
    reruns_skipped: int = 0
    interrupted: bool = False
    problems: list[str] = field(default_factory=list)
    elapsed: float = 0.0

    def of_kind(self, kind: str) -> list[Verdict]:
        return [verdict for verdict in self.verdicts if verdict.kind == kind]


def results_with_collect_errors(results: RunResults, base: Path) -> dict[str, TestResult]:
    """The run's tests, plus one failing pseudo-test per module that could not be collected."""
    tests = dict(results.tests)
    for nodeid, message in results.collect_errors.items():
        tests[nodeid] = TestResult(nodeid, outcome="error", failure=Failure(
            type="CollectionError", message=message, phase="collect", frames=frames_from_text(message, base)))
    return tests


def classify_full_runs(graph: dict[str, TestResult], tree: dict[str, TestResult]) -> tuple[list[Verdict], list[str]]:
    """Verdicts that need no re-run, and the node ids that fail only in the Tree Mode run."""
    verdicts: list[Verdict] = []
    candidates: list[str] = []
    for nodeid in sorted(set(graph) | set(tree)):
        in_graph, in_tree = graph.get(nodeid), tree.get(nodeid)
        graph_fails = in_graph is not None and in_graph.failing
        tree_fails = in_tree is not None and in_tree.failing
        if graph_fails and tree_fails:
            verdicts.append(Verdict(nodeid, "both", in_graph, in_tree))
        elif tree_fails:
            candidates.append(nodeid)
        elif graph_fails and in_tree is not None:
            verdicts.append(Verdict(nodeid, "graph-only", in_graph, in_tree))
    return verdicts, candidates


def verdict_from_reruns(nodeid: str, graph: TestResult | None, tree: TestResult, alone_tree: TestResult | None,
                        alone_graph: TestResult | None) -> Verdict:
    """The verdict on a Tree-Mode-only failure once it has been re-run alone."""
    if alone_tree is None:
        return Verdict(nodeid, "not-isolated", graph, tree, note="the Tree Mode re-run produced no result")
    if not alone_tree.failing:
        return Verdict(nodeid, "order-dependent", graph, tree, alone_tree,
                       note=f"{alone_tree.outcome} alone in Tree Mode")
    if alone_graph is None:
        return Verdict(nodeid, "not-isolated", graph, tree, alone_tree, note="the graph-mode re-run produced no result")
    if alone_graph.failing:
        return Verdict(nodeid, "both", graph, tree, alone_tree, alone_graph,
                       note="passes in the full graph-mode run but fails alone in graph mode too")
    return Verdict(nodeid, "tree-break", graph, tree, alone_tree, alone_graph)


@dataclass
class GateOptions:
    """How to run the tests."""

    command: list[str]
    cwd: Path
    workdir: Path
    jobs: int | None = None
    timeout: float | None = None
    progress: Progress | None = None
    #: Fork re-runs from a server that imported flax once (``<python> -m pytest`` commands only).
    warm: bool = True
    #: ``(K, N)``: run only shard K of N of the tests (``nnx_lint.gate.shard``).
    shard: tuple[int, int] | None = None
    #: Overlap a test's graph-mode re-run with the next test's Tree Mode re-run; None: when
    #: this process may run on 2 or more cores.
    concurrent_reruns: bool | None = None


def _concurrent(options: GateOptions) -> bool:
    """Whether two re-runs may overlap: as asked, else when this process may run on 2+ cores."""
    if options.concurrent_reruns is not None:
        return options.concurrent_reruns
    try:
        return len(os.sched_getaffinity(0)) >= 2
    except (AttributeError, OSError):
        return (os.cpu_count() or 1) >= 2


def _with_jobs(command: list[str], jobs: int | None) -> list[str]:
    return command + ["-n", str(jobs)] if jobs and is_pytest_command(command) else command


def _with_shard(command: list[str], shard: tuple[int, int] | None) -> list[str]:
    return command + [SHARD_OPTION, f"{shard[0]}/{shard[1]}"] if shard else command


def _find(results: RunResults, nodeid: str) -> TestResult | None:
    if nodeid in results.tests:
        return results.tests[nodeid]
    tests = list(results.tests.values())
    return tests[0] if len(tests) == 1 else None


def _rerun_target(nodeid: str, rootdir: str | None, cwd: Path) -> list[str]:
    """The arguments that select exactly ``nodeid``: an absolute path under the same rootdir."""
    base = Path(rootdir) if rootdir else cwd
    path, separator, rest = nodeid.partition("::")
    target = str((base / path).resolve()) + separator + rest
    return (["--rootdir", str(base)] if rootdir else []) + [target]


def run_gate(options: GateOptions, full_runs: dict[str, RunRecord] | None = None) -> GateOutcome:
    """Both full runs, then the isolated re-runs within the time budget.

    ``full_runs`` (``{"graph": ..., "tree": ...}``) supplies full runs made earlier, e.g. by a
    measurement script that resumes from saved plugin reports; they are then not run again.
    """
    started = time.monotonic()
    deadline = started + options.timeout if options.timeout else None
    outcome = GateOutcome()
    progress = options.progress or Progress(enabled=False, log=False)
    # Made before the first run: a process the tests leave behind, even in a new session, is
    # killed when its run ends (on Linux; see nnx_lint.confirmation.sandbox.OrphanSweeper).
    sweeper = OrphanSweeper()

    servers: dict[str, WarmServer | None] = {}
    seeding: threading.Thread | None = None
    try:
        for mode in (GRAPH, TREE):
            # The warm servers import while the Tree Mode run's tests run, once its own imports are done.
            start_servers = (lambda: _start_warm_servers(options, servers, sweeper)) if mode is TREE else None
            record = (full_runs or {}).get(mode.name) or run_once(
                _with_shard(_with_jobs(options.command, options.jobs), options.shard),
                mode, cwd=options.cwd, workdir=options.workdir,
                label=f"full-{mode.name}", deadline=deadline, progress=progress, phase=f"{mode.label} run",
                sweeper=sweeper, on_collected=start_servers)
            outcome.runs[mode.name] = record
            if mode is GRAPH:  # the later runs load the installed bytecode the first one read
                seeding = start_seeding(options.workdir, record.results.loaded_modules,
                                        record.results.cache_tag or sys.implementation.cache_tag)
                write_preload(options.workdir, record.results.startup_modules, options.cwd)
            if record.status in ("failed-to-start", "no-report", "usage-error", "no-tests"):
                break  # the same command will not do better in the other mode
            if record.results.saw_session and record.results.flax_version is None:
                break  # no flax: the other mode would run the very same code
        if options.shard is not None:
            for record in outcome.runs.values():  # a module that cannot be collected belongs to one shard
                record.results.collect_errors = {nodeid: message for nodeid, message in
                                                 record.results.collect_errors.items()
                                                 if in_shard(nodeid, options.shard)}
        _check_runs(outcome)
        graph_run, tree_run = outcome.runs.get("graph"), outcome.runs.get("tree")
        if graph_run is None or tree_run is None:
            return outcome
        if not (graph_run.results.tests or tree_run.results.tests or graph_run.results.collect_errors):
            return outcome
        rootdir = tree_run.results.rootdir or graph_run.results.rootdir
        base = Path(rootdir) if rootdir else options.cwd
        graph = results_with_collect_errors(graph_run.results, base)
        tree = results_with_collect_errors(tree_run.results, base)
        outcome.tests_total = len(set(graph) | set(tree))
        verdicts, candidates = classify_full_runs(graph, tree)
        outcome.verdicts.extend(verdicts)
        _isolate(candidates, graph, tree, rootdir, options, deadline, progress, outcome, sweeper, servers)
    except (GateInterrupted, KeyboardInterrupt) as interrupted:
        # Ctrl-C while a test command ran (GateInterrupted: that run was stopped) or in between.
        outcome.interrupted = True
        record = getattr(interrupted, "record", None)
        if record is not None and record.mode not in outcome.runs and not outcome.verdicts:
            outcome.runs[record.mode] = record
        outcome.problems.append("interrupted (Ctrl-C): the report is partial")
    finally:
        for server in servers.values():
            if server is not None:
                server.close()
        sweeper.close()
        if seeding is not None:
            seeding.join()  # before the caller removes the directory it writes to
        progress.clear()
        outcome.elapsed = time.monotonic() - started
    outcome.verdicts.sort(key=lambda verdict: (VERDICT_KINDS.index(verdict.kind), verdict.nodeid))
    return outcome


def _warm_rerun_python(options: GateOptions) -> str | None:
    """The interpreter whose warm servers fork the re-runs, or None when re-runs start fresh."""
    if not options.warm or not is_pytest_command(options.command) or uses_junit(options.command):
        return None
    return warm_python(rerun_command(options.command, options.cwd))


def _start_warm_servers(options: GateOptions, servers: dict[str, WarmServer | None], sweeper: OrphanSweeper) -> None:
    """Start both modes' warm servers while the Tree Mode run's tests run: their imports (seconds of
    flax and jax each) then overlap the run instead of delaying the first re-run, and do not compete
    with the run's own imports. A run that never reports its collection leaves them to the first
    re-run. Unused servers are closed."""
    python = _warm_rerun_python(options)
    if python is not None:
        for mode in (TREE, GRAPH):
            servers[mode.name] = WarmServer(python, mode, cwd=options.cwd, workdir=options.workdir, sweeper=sweeper)


def _isolate(candidates: list[str], graph: dict[str, TestResult], tree: dict[str, TestResult], rootdir: str | None,
             options: GateOptions, deadline: float | None, progress: Progress, outcome: GateOutcome,
             sweeper: OrphanSweeper, servers: dict[str, WarmServer | None]) -> None:
    """Re-run each candidate alone; ``servers`` holds the warm servers started so far (closed by the caller).

    With concurrent re-runs (:attr:`GateOptions.concurrent_reruns`), a candidate's graph-mode
    re-run goes to a second lane (a thread driving the graph-mode server) while the next
    candidate's Tree Mode re-run goes: each re-run still runs alone in its own process, the two
    modes only overlap in time. Orphans are then swept only while the graph-mode lane is idle (a
    sweep kills every process the gate did not start on purpose, including the other lane's).
    """
    can_rerun = is_pytest_command(options.command) and not uses_junit(options.command)
    rerun = _Rerunner(options, rootdir, servers, sweeper)
    lane = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gate-graph-lane") if (
        can_rerun and _concurrent(options) and len(candidates) > 1) else None
    rerun.shared = lane is not None
    pending: list[_Pending] = []
    try:
        for index, nodeid in enumerate(candidates):
            reason = "" if can_rerun else "re-runs need a pytest command"
            if reason == "" and deadline is not None and time.monotonic() + 2 * rerun.slowest > deadline:
                reason = "skipped: the time budget would be exceeded"
            if reason:
                outcome.verdicts.append(Verdict(nodeid, "not-isolated", graph.get(nodeid), tree[nodeid], note=reason))
                outcome.reruns_skipped += 1
                continue
            progress.show("isolated re-runs", index, len(candidates), unit="Tree-Mode-only failures")
            tree_record = rerun.run(nodeid, TREE, f"alone-{index}-{TREE.name}", deadline)
            alone_tree = _alone_result(tree_record, nodeid)
            graph_run: Future[RunRecord] | RunRecord | None = None
            # Passed alone in Tree Mode: order-dependent whatever graph mode does alone.
            if alone_tree is not None and alone_tree.failing and tree_record.status != "timeout":
                label = f"alone-{index}-{GRAPH.name}"
                graph_run = (lane.submit(rerun.run, nodeid, GRAPH, label, deadline) if lane is not None
                             else rerun.run(nodeid, GRAPH, label, deadline))
            pending.append((nodeid, tree_record, alone_tree, graph_run))
            if lane is not None and all(not isinstance(item[3], Future) or item[3].done() for item in pending):
                sweeper.sweep()
        for item in pending:
            _record_reruns(item, graph, tree, outcome)
    except BaseException:
        rerun.stop.set()  # the graph-mode lane's re-run ends within a poll and kills its test process
        if lane is not None:
            lane.shutdown(wait=True)
        # A partial report keeps the verdicts of the candidates whose re-runs all ended.
        recorded = {verdict.nodeid for verdict in outcome.verdicts}
        for item in pending:
            graph_run = item[3]
            if isinstance(graph_run, Future):
                graph_run = graph_run.result() if graph_run.done() and graph_run.exception() is None else None
                if graph_run is None:
                    continue
            stopped = any(record is not None and record.status == "interrupted" for record in (item[1], graph_run))
            if item[0] not in recorded and not stopped:
                _record_reruns(item, graph, tree, outcome)
        raise
    finally:
        if lane is not None:
            lane.shutdown(wait=True)
            sweeper.sweep()
    if candidates:
        progress.phase(f"isolated re-runs: ended, {len(outcome.reruns)} re-run(s) of {len(candidates)} "
                       f"Tree-Mode-only failure(s)")


_Pending = tuple[str, RunRecord, "TestResult | None", "Future[RunRecord] | RunRecord | None"]


def _record_reruns(item: _Pending, graph: dict[str, TestResult], tree: dict[str, TestResult],
                   outcome: GateOutcome) -> None:
    """Add one candidate's re-runs (in the order they were started) and its verdict to ``outcome``."""
    nodeid, tree_record, alone_tree, graph_run = item
    graph_record = graph_run.result() if isinstance(graph_run, Future) else graph_run
    for record in (tree_record, graph_record):
        if record is None:
            continue
        outcome.reruns.append(record)
        if record.status == "untrusted":  # no verdict from it: the test stays "not isolated"
            label = TREE.label if record.mode == TREE.name else GRAPH.label
            outcome.problems.append(f"the re-run of {nodeid} alone in {label} cannot be trusted: "
                                    + "; ".join(record.trust_problems))
    alone_graph = _alone_result(graph_record, nodeid) if graph_record is not None else None
    outcome.verdicts.append(verdict_from_reruns(nodeid, graph.get(nodeid), tree[nodeid], alone_tree, alone_graph))


def _alone_result(record: RunRecord, nodeid: str) -> TestResult | None:
    return _find(record.results, nodeid) if record.status == "finished" else None


class _Rerunner:
    """Runs one test alone in one mode: forked from the mode's warm server, else as a fresh command."""

    def __init__(self, options: GateOptions, rootdir: str | None, servers: dict[str, WarmServer | None],
                 sweeper: OrphanSweeper):
        self.options, self.rootdir, self.servers, self.sweeper = options, rootdir, servers, sweeper
        self.base_command = rerun_command(options.command, options.cwd)
        self.python = _warm_rerun_python(options)
        #: True when two re-runs may overlap: each run then leaves sweeping to the caller.
        self.shared = False
        #: Set to end the re-runs still going (Ctrl-C in the main thread).
        self.stop = threading.Event()
        self.slowest = 0.0

    def run(self, nodeid: str, mode: Mode, label: str, deadline: float | None) -> RunRecord:
        """The record of ``nodeid`` run alone in ``mode`` (only one caller per mode at a time)."""
        if self.stop.is_set():
            return RunRecord(mode=mode.name, command=[], status="interrupted")
        target = _rerun_target(nodeid, self.rootdir, self.options.cwd)
        sweeper = None if self.shared else self.sweeper
        record = None
        if self.python is not None:
            if mode.name not in self.servers:
                self.servers[mode.name] = WarmServer(self.python, mode, cwd=self.options.cwd,
                                                     workdir=self.options.workdir, sweeper=self.sweeper)
            server = self.servers[mode.name]
            if server is not None:
                record = server.run(self.base_command[3:] + list(PYTEST_OPTIONS) + target, label=label,
                                    deadline=deadline, sweeper=sweeper, stop=self.stop)
                if record is None or record.status in ("no-report", "usage-error"):
                    self.servers[mode.name] = None  # a broken server: the rest run cold
                    server.close()
                    record = None
        if record is None and self.stop.is_set():
            record = RunRecord(mode=mode.name, command=[], status="interrupted")
        if record is None:
            record = run_once(self.base_command + target, mode, cwd=self.options.cwd, workdir=self.options.workdir,
                              label=label, deadline=deadline, sweeper=sweeper, stop=self.stop)
        self.slowest = max(self.slowest, record.elapsed)
        return record


def _check_runs(outcome: GateOutcome) -> None:
    """Record what went wrong with the full runs, in words a user can act on."""
    graph_run, tree_run = outcome.runs.get(GRAPH.name), outcome.runs.get(TREE.name)
    if graph_run is not None and tree_run is not None and tree_run.status == "finished":
        outcome.problems.extend(f"the Tree Mode run cannot be trusted: {problem}"
                                for problem in cross_run_problems(graph_run.results, tree_run.results))
    for mode in (GRAPH, TREE):
        record = outcome.runs.get(mode.name)
        if record is None:
            continue
        what = f"the {mode.label} run"
        if record.status == "failed-to-start":
            outcome.problems.append(f"the test command could not start: {record.output_tail}")
        elif record.status == "timeout":
            outcome.problems.append(f"{what} was stopped at the time budget: its results are incomplete")
        elif record.status == "crashed":
            outcome.problems.append(f"{what} crashed (exit status {record.returncode}) before pytest finished: "
                                    f"results after the last reported test are missing")
        elif record.status == "no-report":
            outcome.problems.append(no_report_reason(record, mode.label))
        elif record.status == "usage-error":
            outcome.problems.append(f"{what}: pytest reported a usage or internal error (exit status "
                                    f"{record.results.pytest_status}):\n{record.output_tail}")
        elif record.status == "no-tests":
            outcome.problems.append(f"{what} collected no tests")
        elif record.status == "interrupted":
            outcome.problems.append(f"{what} was interrupted")
        elif record.status == "untrusted":
            outcome.problems.append(f"{what} cannot be trusted: " + "; ".join(record.trust_problems))
        results = record.results
        if results.saw_session and results.flax_version is None:
            outcome.problems.append("flax is not installed in the test command's Python: the modes mean nothing "
                                    "without it")
        if (results.flax_config is not None and results.flax_config != mode.expected_config
                and record.status != "untrusted"):  # an untrusted run has said where the mode was wrong
            outcome.problems.append(f"{what} did not run in {mode.label}: flax.config was {results.flax_config} "
                                    f"(the tests or a conftest override NNX_GRAPH_MODE / NNX_GRAPH_UPDATES)")
        if mode is GRAPH and results.collect_errors:
            outcome.problems.append(f"{len(results.collect_errors)} module(s) could not be collected in graph mode: "
                                    + ", ".join(sorted(results.collect_errors)[:10]))
