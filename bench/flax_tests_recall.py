"""Recall and false-alarm rate of nnx-lint on flax's own ``tests/nnx``, opt-ins removed.

    python bench/flax_tests_recall.py FLAX_CHECKOUT [--out DIR] [--json FILE] [--timeout S]
                                      [--reuse-runs DIR] [--keep-runs DIR]

``FLAX_CHECKOUT`` is a flax source tree whose ``tests/nnx`` matches the installed flax (e.g. the
tests of the 0.12.8 tag). The script:

1. copies ``tests/nnx`` to ``--out`` (default: a temporary directory, removed at the end) and
   removes the explicit graph-mode opt-ins there (``bench/remove_opt_ins.py`` says what, and why);
2. lints the copy in-process (``nnx_lint.gate.attribution.lint_project``: default rules, no cache);
3. runs the copy with the gate (``nnx_lint.gate.classify.run_gate``): full runs in graph mode and
   in Tree Mode, then every Tree-Mode-only failure alone in both modes;
4. counts per test id (absltest's parameterized instances are separate ids):
   *breaking* = the gate's ``tree-break`` verdict (fails alone in Tree Mode, passes alone in graph
   mode); *passing* = passed in both full runs. Order-dependent, not isolated, failing in both
   modes, failing in graph mode only and skipped tests are in neither (their counts are printed);
5. a test is *flagged* when a diagnostic (not of kind ``linter``) lies in the body of its test
   function (``Attributor.diagnostics_in_test``) and holds in the test's case, for one case of
   an absl-parameterised test (``nnx_lint/gate/case_join.py``: not in a branch the case never
   runs, not naming another case's value). Two other joins are printed beside it:
   ``+helpers`` (also the same file's functions, classes and test-class methods the test uses,
   transitively, and the class' ``setUp``) and, for breaks only, ``traceback`` (the gate's
   attribution: a diagnostic at, near or in the same function as a frame of the failure);
6. groups the misses (breaking, not flagged) by exception type and normalised first message line,
   and the false alarms (passing, flagged) by rule code.

This EXECUTES flax's tests (as the gate does). It is measurement tooling, not a test.
"""
from __future__ import annotations

import argparse
import json
import pickle
import re
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from nnx_lint.gate.attribution import Attributor, lint_project  # noqa: E402
from nnx_lint.gate.classify import (GateOptions, GateOutcome, Verdict, classify_full_runs,  # noqa: E402
                                    results_with_collect_errors, run_gate, verdict_from_reruns)
from nnx_lint.gate.modes import GRAPH, TREE  # noqa: E402
from nnx_lint.gate.results import read_plugin_report  # noqa: E402
from nnx_lint.gate.runner import Progress, RunRecord, run_once  # noqa: E402
from remove_opt_ins import remove_opt_ins_in_tree  # noqa: E402

TESTS = Path("tests") / "nnx"
JOINS = ("body", "helpers", "traceback")
#: The gate outcome kept by ``--keep-runs`` (this script's own file, read back by ``--reuse-runs``).
OUTCOME = "gate-outcome.pickle"


def nnx_names() -> frozenset[str]:
    """The public names of the installed ``flax.nnx`` (``nnx.compat.X`` is rewritten only when ``nnx.X`` exists)."""
    from flax import nnx

    return frozenset(name for name in dir(nnx) if not name.startswith("_"))


def prepare(checkout: Path, out: Path) -> dict[str, Counter[str]]:
    """Copy ``tests/nnx`` under ``out`` and remove its opt-ins; the changes per file.

    A copy already there that is exactly what the transform makes is left alone (no file is
    rewritten under tests that may still be running from it); any other is replaced.
    """
    target = out / TESTS
    if target.exists() and _copy_is_current(checkout / TESTS, target):
        with tempfile.TemporaryDirectory() as scratch:
            shutil.copytree(checkout / TESTS, Path(scratch) / "nnx", ignore=shutil.ignore_patterns("__pycache__"))
            return remove_opt_ins_in_tree(Path(scratch) / "nnx", nnx_names())
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(checkout / TESTS, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (out / "tests" / "__init__.py").touch()
    return remove_opt_ins_in_tree(target, nnx_names())


def _copy_is_current(source: Path, target: Path) -> bool:
    from remove_opt_ins import remove_opt_ins

    names = nnx_names()
    sources = sorted(path.relative_to(source) for path in source.rglob("*.py"))
    if sources != sorted(path.relative_to(target) for path in target.rglob("*.py")):
        return False
    for relative in sources:
        text = (source / relative).read_text(encoding="utf-8")
        try:
            text = remove_opt_ins(text, names)[0]
        except Exception:  # a file libcst cannot parse is copied unchanged
            pass
        if (target / relative).read_text(encoding="utf-8") != text:
            return False
    return True


def saved_runs(directory: Path) -> dict[str, RunRecord]:
    """The complete full runs saved by ``--keep-runs`` (the plugin's JSON lines); missing modes are run again."""
    runs = {}
    for mode in (GRAPH, TREE):
        merged = directory / f"full-{mode.name}.pickle"
        if merged.exists():  # made by per_file_runs
            runs[mode.name] = pickle.loads(merged.read_bytes())
            continue
        results = read_plugin_report(directory / f"full-{mode.name}.jsonl")
        if results.finished and results.pytest_status in (0, 1):
            runs[mode.name] = RunRecord(mode=mode.name, command=["(saved)"], status="finished", results=results)
    return runs


def per_file_runs(command: list[str], files: list[str], modes: list, *, cwd: Path, workdir: Path,
                  deadline: float | None, saved: Path | None = None) -> dict[str, RunRecord]:
    """Full runs made of one pytest process per test file, merged into one record per mode.

    flax's tests pollute later tests in the same process in Tree Mode (summary_test.py leaves
    ``RngStream`` patched for every later module), so one process for the whole directory counts
    hundreds of order effects as failures; the gate would then re-run each alone.

    With ``saved`` (the ``--reuse-runs`` directory), a file whose run a stopped measurement
    finished there is read back instead of run again (``saved_file_run``): an hour-long full run
    that was interrupted resumes at the first file it had not finished.
    """
    runs = {}
    for mode in modes:
        merged = RunRecord(mode=mode.name, command=command + ["<one file at a time>"], status="finished")
        merged.results.finished = True

        def run(selection: list[str], label: str, file: str) -> RunRecord:
            record = saved_file_run(saved / f"{label}.jsonl", mode, cwd, selection) if saved else None
            if record is None:
                record = run_once(command + selection, mode, cwd=cwd, workdir=workdir, label=label, deadline=deadline)
            _merge(merged, record, file)
            return record

        for index, file in enumerate(files):
            record = run([file], f"file-{index}-{mode.name}", file)
            for attempt in range(1, MAX_RESTARTS + 1):
                remaining = _after_first_recursion_error(record)
                if not remaining:
                    break
                # A RecursionError in Tree Mode leaves the process failing every later test with one:
                # run the tests after it again in a fresh process.
                record = run(remaining, f"file-{index}-{mode.name}-restart-{attempt}", file)
        (workdir / f"full-{mode.name}.pickle").write_bytes(pickle.dumps(merged))
        runs[mode.name] = merged
    return runs


#: How many times one file's run is restarted after a RecursionError.
MAX_RESTARTS = 40


def saved_file_run(report: Path, mode, cwd: Path, selection: list[str]) -> RunRecord | None:
    """The run of ``selection`` (one file, or the node ids a restart runs) that ``report`` kept, if it can stand in.

    Only a report that reached pytest's end with tests failing or not (exit status 0 or 1), in
    ``mode`` (flax's configuration as the tests saw it), from the copy at ``cwd`` (pytest's
    rootdir) and holding only tests of ``selection`` is used: a report of a killed run, of the
    other mode, of another copy or of another file list (the labels number the files) runs again.
    """
    results = read_plugin_report(report)
    if not (results.finished and results.pytest_status in (0, 1) and results.tests):
        return None
    if results.flax_config != mode.expected_config or results.rootdir is None:
        return None
    if Path(results.rootdir).resolve() != cwd.resolve():
        return None
    files = {item for item in selection if "::" not in item}
    wanted = set(selection) - files
    if not all(nodeid in wanted or nodeid.partition("::")[0] in files for nodeid in results.tests):
        return None
    return RunRecord(mode=mode.name, command=["(saved)", str(report.name)], status="finished", results=results)


def _after_first_recursion_error(record: RunRecord) -> list[str]:
    """The node ids reported after the first test that failed with a RecursionError, if any did."""
    order = list(record.results.tests)
    for position, nodeid in enumerate(order):
        failure = record.results.tests[nodeid].failure
        if failure is not None and failure.short_type == "RecursionError":
            return order[position + 1:]
    return []


def _merge(merged: RunRecord, record: RunRecord, file: str) -> None:
    results = merged.results
    results.tests.update(record.results.tests)
    results.collect_errors.update(record.results.collect_errors)
    results.collected = (results.collected or 0) + (record.results.collected or 0)
    results.saw_session = results.saw_session or record.results.saw_session
    results.flax_version = results.flax_version or record.results.flax_version
    results.rootdir = results.rootdir or record.results.rootdir
    results.flax_config = results.flax_config or record.results.flax_config
    results.pytest_status = max(results.pytest_status or 0, record.results.pytest_status or 0)
    merged.elapsed += record.elapsed
    if record.status not in ("finished", "no-tests"):
        merged.status = record.status
        merged.output_tail = f"{file}: {record.output_tail}"


def outcome_from_saved_reruns(directory: Path, runs: dict[str, RunRecord]) -> GateOutcome:
    """The gate's outcome rebuilt from the reports a run (finished, stopped or still going) left in ``directory``.

    The gate re-runs the Tree-Mode-only failures in the order ``classify_full_runs`` lists them and
    names the reports ``alone-<index>-<mode>.jsonl``; a candidate whose re-runs are not all there
    gets no verdict (``measure`` then counts it from the full runs).
    """
    outcome = GateOutcome(runs=runs)
    rootdir = runs["tree"].results.rootdir or runs["graph"].results.rootdir
    base = Path(rootdir) if rootdir else directory
    graph = results_with_collect_errors(runs["graph"].results, base)
    tree = results_with_collect_errors(runs["tree"].results, base)
    verdicts, candidates = classify_full_runs(graph, tree)
    outcome.verdicts.extend(verdicts)
    for index, nodeid in enumerate(candidates):
        alone = {}
        for mode in (TREE, GRAPH):
            results = read_plugin_report(directory / f"alone-{index}-{mode.name}.jsonl")
            alone[mode.name] = results.tests.get(nodeid) if results.finished else None
        if alone["tree"] is None or (alone["tree"].failing and alone["graph"] is None):
            continue  # not re-run (yet)
        outcome.verdicts.append(verdict_from_reruns(nodeid, graph.get(nodeid), tree[nodeid], alone["tree"],
                                                    alone["graph"]))
    return outcome


def attributor_for(diagnostics: list, out: Path) -> Attributor:
    """The join of ``diagnostics`` (of the copy under ``out``, linted by this process) with its tests.

    Their paths are relative to this process' working directory, where ``lint_project`` ran, not
    to the copy: resolved against the copy, no diagnostic would lie in any test and every recall
    would read 0. A diagnostic naming no file is an error, not a silent miss.
    """
    lost = [d for d in diagnostics if not (Path.cwd() / d.path).resolve().is_file()]
    if lost:
        raise ValueError(f"{len(lost)} diagnostics name no file (e.g. {lost[0].path})")
    return Attributor(diagnostics, out, cwd=Path.cwd())


_NUMBER = re.compile(r"-?\d+(\.\d+)?(e-?\d+)?")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_ADDRESS = re.compile(r"0x[0-9a-f]+")


def message_pattern(type_name: str, message: str) -> str:
    """``Type: first line`` with numbers, quoted text and addresses replaced: failures that differ only there group."""
    first = next((line.strip() for line in message.splitlines() if line.strip()), "")
    first = _ADDRESS.sub("0x…", first)
    first = _QUOTED.sub("'…'", first)
    first = _NUMBER.sub("N", first)
    return f"{type_name.rpartition('.')[2]}: {first[:110]}"


def measure(outcome: GateOutcome, attributor: Attributor, rootdir: Path) -> dict[str, Any]:
    """The counts, rates, misses and false alarms (see the module docstring)."""
    graph, tree = outcome.runs["graph"].results.tests, outcome.runs["tree"].results.tests
    verdicts = {verdict.nodeid: verdict for verdict in outcome.verdicts}
    excluded: Counter[str] = Counter()
    breaking, passing, unisolated = [], [], []
    for nodeid in sorted(set(graph) | set(tree) | set(verdicts)):
        verdict = verdicts.get(nodeid)
        if verdict is not None:
            if verdict.kind == "tree-break":
                breaking.append(nodeid)
            elif verdict.kind == "not-isolated":
                unisolated.append(nodeid)
            else:
                excluded[verdict.kind] += 1
            continue
        in_graph = graph[nodeid].outcome if nodeid in graph else "missing"
        in_tree = tree[nodeid].outcome if nodeid in tree else "missing"
        if in_graph == in_tree == "passed":
            passing.append(nodeid)
        elif in_graph == "passed" and nodeid in tree and tree[nodeid].failing:
            unisolated.append(nodeid)  # the gate was stopped before re-running it alone
            verdicts[nodeid] = Verdict(nodeid, "not-isolated", graph[nodeid], tree[nodeid])
        else:
            excluded[f"graph {in_graph} / tree {in_tree}"] += 1
    # A Tree-Mode-only failure that was not re-run alone counts as breaking (as the gate's exit status
    # does); how many there are is reported, and the recall of the isolated breaks alone beside it.
    isolated = list(breaking)
    breaking = sorted(breaking + unisolated)

    def flagged(nodeid: str, join: str) -> list:
        if join == "traceback":
            verdict = verdicts.get(nodeid)
            if verdict is None:
                return []
            return [match.diagnostic for match in attributor.attribute(verdict).matches]
        return attributor.diagnostics_in_test(nodeid, rootdir, helpers=join == "helpers")

    def real(diagnostics: list) -> list:
        return [diagnostic for diagnostic in diagnostics if diagnostic.kind != "linter"]

    found = {join: {nodeid: real(flagged(nodeid, join)) for nodeid in breaking + passing} for join in JOINS}
    rates: dict[str, Any] = {}
    for join in JOINS:
        hit = [n for n in breaking if found[join][n]]
        alarms = [n for n in passing if found[join][n]] if join != "traceback" else None
        rates[join] = {"flagged_breaking": len(hit), "recall": _ratio(len(hit), len(breaking)),
                       "flagged_passing": None if alarms is None else len(alarms),
                       "false_alarm_rate": None if alarms is None else _ratio(len(alarms), len(passing))}
    misses: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for nodeid in breaking:
        if found["body"][nodeid]:
            continue
        failure = verdicts[nodeid].failure
        pattern = message_pattern(failure.type, failure.message) if failure else "(no exception recorded)"
        misses[pattern].append({"nodeid": nodeid, "isolated": verdicts[nodeid].kind == "tree-break",
                                "category": failure.category if failure else None,
                                "message": _first_line(failure.message) if failure else "",
                                "flagged_with_helpers": bool(found["helpers"][nodeid]),
                                "explained_by_traceback": bool(found["traceback"][nodeid])})
    alarms_by_rule: dict[str, list[str]] = defaultdict(list)
    for nodeid in passing:
        for code in sorted({diagnostic.code for diagnostic in found["body"][nodeid]}):
            alarms_by_rule[code].append(nodeid)
    isolated_hits = sum(1 for n in isolated if found["body"][n])
    rates["body, isolated breaks only"] = {"flagged_breaking": isolated_hits,
                                           "recall": _ratio(isolated_hits, len(isolated)),
                                           "flagged_passing": rates["body"]["flagged_passing"],
                                           "false_alarm_rate": rates["body"]["false_alarm_rate"]}
    unmapped = [nodeid for nodeid in breaking + passing if attributor.test_function(nodeid, rootdir) is None]
    return {
        "tests": len(set(graph) | set(tree)),
        "not_mapped_to_a_function": unmapped,
        "breaking": len(breaking), "breaking_isolated": len(isolated), "breaking_not_isolated": len(unisolated),
        "passing": len(passing), "excluded": dict(excluded),
        "rates": rates,
        "misses": sorted(({"pattern": pattern, "count": len(items), "tests": items}
                          for pattern, items in misses.items()), key=lambda group: -group["count"]),
        "false_alarms_by_rule": {code: nodeids for code, nodeids in
                                 sorted(alarms_by_rule.items(), key=lambda item: -len(item[1]))},
        "breaking_tests": {n: sorted({d.code for d in found["body"][n]}) for n in breaking},
    }


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:300]


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def render(result: dict[str, Any]) -> str:
    lines = [f"tests: {result['tests']}   breaking in Tree Mode: {result['breaking']} ({result['breaking_isolated']} "
             f"confirmed alone, {result['breaking_not_isolated']} from the full runs only)   "
             f"passing in both modes: {result['passing']}",
             "excluded: " + ", ".join(f"{kind} {count}" for kind, count in sorted(result["excluded"].items())),
             f"breaking or passing tests whose test function was not found (never flagged): "
             f"{len(result['not_mapped_to_a_function'])}",
             "",
             f"{'join':<28} {'flagged breaking':>17} {'recall':>8} {'flagged passing':>16} {'false alarms':>13}"]
    for join in result["rates"]:
        rate = result["rates"][join]
        passing = "-" if rate["flagged_passing"] is None else str(rate["flagged_passing"])
        lines.append(f"{join:<28} {rate['flagged_breaking']:>17} {_percent(rate['recall']):>8} {passing:>16} "
                     f"{_percent(rate['false_alarm_rate']) if rate['false_alarm_rate'] is not None else '-':>13}")
    lines += ["", "misses (breaking, not flagged in the body), by exception pattern:"]
    for group in result["misses"]:
        examples = ", ".join(item["nodeid"].rpartition("/")[2] for item in group["tests"][:3])
        lines.append(f"  {group['count']:>4}  {group['pattern']}\n        e.g. {examples}")
    lines += ["", "false alarms (passing, flagged in the body), by rule:"]
    for code, nodeids in result["false_alarms_by_rule"].items():
        lines.append(f"  {len(nodeids):>4}  {code}  e.g. {', '.join(n.rpartition('/')[2] for n in nodeids[:3])}")
    lines += ["", "opt-ins removed: " + ", ".join(f"{what} {count}" for what, count in
                                                  sorted(result["opt_ins_removed"].items()))]
    lines.append(f"time: lint {result['seconds']['lint']} s, tests {result['seconds']['tests']} s")
    return "\n".join(lines)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="a flax source tree with tests/nnx matching the installed flax")
    parser.add_argument("--out", type=Path, help="where to write the transformed copy (default: a temporary dir)")
    parser.add_argument("--json", type=Path, help="write the full result as JSON")
    parser.add_argument("--timeout", type=float, default=3 * 3600, help="time budget of the gate (seconds)")
    parser.add_argument("--keep-runs", type=Path, help="keep the gate's run reports in this directory")
    parser.add_argument("--reuse-runs", type=Path,
                        help="reuse the gate outcome (or at least the full runs, or with --per-file the files "
                             "a stopped full run finished) kept earlier with --keep-runs; the transformed copy "
                             "must be at the same --out")
    parser.add_argument("--per-file", action="store_true",
                        help="make each full run one pytest process per test file (flax's tests pollute later "
                             "modules in Tree Mode); the re-runs alone are the gate's as usual")
    parser.add_argument("--partial", action="store_true",
                        help="with --reuse-runs: measure from the full runs and whatever re-runs a stopped (or "
                             "still running) measurement left there, without running anything")
    parser.add_argument("--deselect", action="append", metavar="NODEID",
                        help="leave this test out of both full runs (e.g. one that leaves the process unable to "
                             "run the next tests in Tree Mode); repeatable")
    parser.add_argument("--strict", action="store_true",
                        help="count unproven findings too (audit mode, `nnx-lint check --strict`)")
    args = parser.parse_args(argv)
    # The gate stops its test command's process group on Ctrl-C; make ``kill PID`` of this script do the same.
    signal.signal(signal.SIGTERM, _interrupt)
    if not (args.checkout / TESTS).is_dir():
        parser.error(f"{args.checkout / TESTS} is not a directory")
    out = args.out or Path(tempfile.mkdtemp(prefix="flax-tests-recall-"))
    out.mkdir(parents=True, exist_ok=True)
    workdir = args.keep_runs or Path(tempfile.mkdtemp(prefix="flax-tests-recall-runs-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        changes = prepare(args.checkout, out)
        started = time.monotonic()
        diagnostics = lint_project(out / TESTS, None)  # audit mode: unproven findings included
        if not args.strict:  # the default run's findings only
            diagnostics = [d for d in diagnostics if d.proof != "unproven"]
        lint_seconds = time.monotonic() - started
        started = time.monotonic()
        saved = args.reuse_runs / OUTCOME if args.reuse_runs else None
        if saved is not None and saved.exists():
            # The whole gate outcome (full runs and re-runs) of an earlier run on the same transformed copy.
            outcome = pickle.loads(saved.read_bytes())
        elif args.reuse_runs is not None and args.partial:
            outcome = outcome_from_saved_reruns(args.reuse_runs, saved_runs(args.reuse_runs))
        else:
            # --tb=native: pytest's own traceback filtering hits the recursion limit in a process that a
            # RecursionError in Tree Mode has left near it, and ends the session (INTERNALERROR).
            command = [sys.executable, "-m", "pytest", str(TESTS), "-q", "--tb=native"]
            for nodeid in args.deselect or ():
                command += ["--deselect", nodeid]
            full_runs = saved_runs(args.reuse_runs) if args.reuse_runs else {}
            if args.per_file:
                files = sorted(str(path.relative_to(out)) for pattern in ("*_test.py", "test_*.py")
                               for path in (out / TESTS).rglob(pattern))
                missing = [mode for mode in (GRAPH, TREE) if mode.name not in full_runs]
                per_file_command = [argument for argument in command if argument != str(TESTS)]
                full_runs.update(per_file_runs(per_file_command, files, missing, cwd=out, workdir=workdir,
                                               deadline=time.monotonic() + args.timeout, saved=args.reuse_runs))
            outcome = run_gate(
                GateOptions(command=command, cwd=out, workdir=workdir,
                            timeout=max(1.0, args.timeout - (time.monotonic() - started)), progress=Progress()),
                full_runs=full_runs)
            if not outcome.interrupted:
                (workdir / OUTCOME).write_bytes(pickle.dumps(outcome))
        test_seconds = outcome.elapsed
        for problem in outcome.problems:
            print(f"gate: {problem}", file=sys.stderr)
        if "graph" not in outcome.runs or "tree" not in outcome.runs:
            return 2
        incomplete = [name for name, record in outcome.runs.items() if not record.complete]
        if incomplete:
            print(f"INCOMPLETE: the {' and '.join(incomplete)} full run(s) did not finish; the numbers below "
                  "count only the tests they reached", file=sys.stderr)
        rootdir = Path(outcome.runs["tree"].results.rootdir or out)
        if rootdir.resolve() != out.resolve():
            # The saved test ids are relative to the copy they ran in: joined with the diagnostics of
            # another copy, nothing would match and recall would read 0.
            print(f"error: the reused runs ran in {rootdir}, not in --out {out}; pass --out {rootdir}",
                  file=sys.stderr)
            return 2
        try:
            attributor = attributor_for(diagnostics, out)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        result = measure(outcome, attributor, rootdir)
        totals: Counter[str] = Counter()
        for counts in changes.values():
            totals.update(counts)
        result["opt_ins_removed"] = dict(totals)
        result["opt_ins_removed_per_file"] = {path: dict(counts) for path, counts in changes.items()}
        result["diagnostics"] = Counter(d.code for d in diagnostics)
        result["seconds"] = {"lint": round(lint_seconds, 1), "tests": round(test_seconds, 1)}
        result["reruns"] = len(outcome.reruns)
        result["problems"] = outcome.problems
        print(render(result))
        if args.json:
            args.json.write_text(json.dumps(result, indent=1, default=str) + "\n", encoding="utf-8")
    finally:
        if args.out is None:
            shutil.rmtree(out, ignore_errors=True)
        if args.keep_runs is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
