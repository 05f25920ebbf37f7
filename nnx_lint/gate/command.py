"""``nnx-lint gate [PATH] [options] -- <test command>``: the CLI of the gate.

Exit status:

- 0: no test breaks in Tree Mode, or every break is in the baseline;
- 1: at least one test breaks in Tree Mode (or failed only in the Tree Mode run and could
  not be isolated) and is not in the baseline;
- 2: usage or configuration error; the test command could not start; flax is not installed
  in the test command's Python; a full run crashed, was stopped at the time budget, produced
  no report or collected no tests; modules could not be collected in graph mode; the tests
  did not run in the requested mode; Ctrl-C. This takes precedence over 1 (the report still
  lists the breaks that were found).
"""
from __future__ import annotations

import argparse
import importlib
import json
import importlib.util
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from nnx_lint.gate.progress import DEFAULT_INTERVAL, Progress
from nnx_lint.gate.shard import ShardError, parse_shard
from nnx_lint.gate.untested import gate_extra

if TYPE_CHECKING:
    from nnx_lint.gate.classify import GateOutcome

EXIT_CLEAN, EXIT_BREAKS, EXIT_ERROR = 0, 1, 2
DEFAULT_COMMAND = ("{python}", "-m", "pytest")


def run_merge_command(argv: list[str]) -> int:
    """``nnx-lint gate merge REPORT... [--output-format F]``: one verdict and exit status for the shards."""
    from nnx_lint.gate.report import render
    from nnx_lint.gate.shard import merge_reports

    parser = argparse.ArgumentParser(prog="nnx-lint gate merge",
                                     description="Merge the JSON reports of the shards of a gate run (--shard K/N "
                                                 "--report-file FILE) into one verdict and exit status.")
    parser.add_argument("reports", nargs="+", type=Path, metavar="REPORT")
    parser.add_argument("--output-format", choices=("text", "json", "markdown"), default="text")
    parser.add_argument("--run-id", metavar="ID", help="accept only shards of this run (the gate's --run-id)")
    parser.add_argument("--commit", metavar="SHA", help="accept only shards of this commit (full hex object name)")
    args = parser.parse_args(argv)
    try:
        merged = merge_reports(args.reports, run_id=args.run_id, commit=args.commit)
    except ShardError as exc:
        # The message may quote a shard file's text: escaped like the tests' text.
        from nnx_lint.base.escaping import printable

        print(f"nnx-lint: error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    print(render(merged, args.output_format))
    return int(merged["exit_status"])


def split_test_command(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """Split ``gate ... -- cmd ...`` at the first ``--``: (the gate's arguments, the test command).

    Only for the ``gate`` subcommand: other subcommands keep ``--`` for argparse.
    """
    if argv[:1] != ["gate"] or "--" not in argv:
        return argv, None
    index = argv.index("--")
    return argv[:index], argv[index + 1:]


def add_gate_arguments(gate: argparse.ArgumentParser) -> None:
    """The ``gate`` subcommand's description and options, on its sub-parser (made by :mod:`nnx_lint.cli`)."""
    gate.description = ("Run the test command (default: python -m pytest) in graph mode and in Tree Mode, re-run "
                        "each Tree-Mode-only failure alone in both modes, and explain each break with nnx-lint's "
                        "findings. This EXECUTES the project's tests: run it only where you would run them. "
                        "Usage: nnx-lint gate [PATH] [options] -- <test command>")
    gate.add_argument("path", nargs="?", type=Path, default=Path("."), metavar="PATH",
                      help="the project: linted for the attribution, and what counts as 'inside the project' "
                           "in tracebacks (default: .)")
    gate.add_argument("--select", action="append", help="only these rule codes or prefixes for the attribution")
    gate.add_argument("--output-format", choices=("text", "json", "markdown"), default="text")
    gate.add_argument("--baseline", type=Path, metavar="FILE", help="known Tree Mode breaks (test ids) to accept")
    gate.add_argument("--write-baseline", type=Path, metavar="FILE",
                      help="write the Tree Mode breaks found to FILE (and accept them in this run)")
    gate.add_argument("-n", "--numprocesses", dest="jobs", type=int, metavar="N",
                      help="pass -n N to pytest-xdist for the two full runs (needs pytest-xdist)")
    gate.add_argument("--no-warm-reruns", action="store_true",
                      help="start every isolated re-run as a fresh test command instead of forking it from a "
                           "server that imported flax once")
    gate.add_argument("--serial-reruns", action="store_true",
                      help="make the isolated re-runs one at a time (by default, on 2+ cores, a test's graph-mode "
                           "re-run overlaps the next test's Tree Mode re-run; each still runs alone in its process)")
    gate.add_argument("--shard", metavar="K/N",
                      help="run only shard K of N of the tests (a hash of each node id), both modes; merge the "
                           "shards' JSON reports with: nnx-lint gate merge REPORT...")
    gate.add_argument("--run-id", metavar="ID",
                      help="name this run in the report, so that nnx-lint gate merge joins only its shards (in "
                           "GitHub Actions: ${{ github.run_id }}); default: derived from the commit, the shard "
                           "count, the test command and the CI system's run number")
    gate.add_argument("--report-file", type=Path, metavar="FILE",
                      help="also write the JSON report to FILE (what nnx-lint gate merge reads)")
    gate.add_argument("--progress-interval", type=float, default=DEFAULT_INTERVAL, metavar="SECONDS",
                      help="when stderr is not a terminal (CI), print the tests done so far every SECONDS "
                           f"(default: {DEFAULT_INTERVAL:.0f})")
    gate.add_argument("--timeout", type=float, metavar="SECONDS",
                      help="time budget for the whole gate; a run still going is stopped and reported as incomplete")


def exit_status(problems: list[str], breaking: set[str], baseline: set[str]) -> int:
    """The documented exit status (see the module docstring): problems win over breaks."""
    if problems:
        return EXIT_ERROR
    return EXIT_BREAKS if breaking - baseline else EXIT_CLEAN


def _flax_missing_here(command: list[str]) -> bool:
    """True when the command runs in this Python and flax is not installed in it."""
    first = command[0] if command else ""
    if first != sys.executable:
        return False  # another interpreter: the plugin reports flax's absence from inside it
    return importlib.util.find_spec("flax") is None


#: Every module the gate runs after the first test run starts (a test keeps this complete).
#: The tests can write to the installed packages, nnx-lint's own included: a module first
#: imported after they ran would run what they wrote there, in the gate's process.
_GATE_MODULES = (
    "nnx_lint.gate.attribution", "nnx_lint.gate.baseline", "nnx_lint.gate.channel", "nnx_lint.gate.classify",
    "nnx_lint.gate.dependencies", "nnx_lint.gate.modes", "nnx_lint.gate.report", "nnx_lint.gate.results",
    "nnx_lint.gate.progress", "nnx_lint.gate.runner", "nnx_lint.gate.shard", "nnx_lint.base.confined_writes",
    "nnx_lint.gate.trust", "nnx_lint.gate.untested", "nnx_lint.gate.run_identity", "nnx_lint.gate.shard_schema",
    "nnx_lint.engine.config", "nnx_lint.engine.registry", "nnx_lint.engine.runner", "nnx_lint.confirmation.sandbox",
)
#: Standard-library modules imported inside functions on the way (``socket.send_fds`` imports ``array``).
_GATE_STDLIB = ("array", "json", "select", "signal", "socket", "xml.etree.ElementTree", "xml.parsers.expat")


def preload() -> None:
    """Import everything the gate needs after the test runs start, before the first one does.

    That is the gate's own modules, every module a lint can reach (the dependencies' frames
    are linted after the runs), the rules, and the gate's copy of ``tree_runtime``'s
    ``error_category`` (loaded by file). ``tests/test_gate_security.py`` runs a gate under an
    audit hook and checks that nothing at all is imported once the first run has started.
    """
    import pkgutil

    import astroid

    from nnx_lint.engine.eager import load_lint_path
    from nnx_lint.gate.results import _gate_error_category

    for name in _GATE_STDLIB + _GATE_MODULES:
        importlib.import_module(name)
    load_lint_path()
    # astroid imports some of its own modules only when a file needs them (astroid.constraint
    # for a guarded name); the dependencies' files are linted after the runs.
    for module in pkgutil.walk_packages(astroid.__path__, prefix="astroid."):
        if ".tests" not in module.name:
            try:
                importlib.import_module(module.name)
            except Exception:  # noqa: BLE001 - an optional brain whose library is missing
                pass
    _gate_error_category()


def run_gate_command(args: argparse.Namespace, test_command: list[str] | None) -> int:
    """Run the gate as parsed by the CLI; returns the exit status."""
    from nnx_lint.engine.config import ConfigError
    from nnx_lint.gate.baseline import BaselineError, read_baseline
    from nnx_lint.engine.registry import UnknownSelector

    command = test_command or [part.replace("{python}", sys.executable) for part in DEFAULT_COMMAND]
    path: Path = args.path
    if not path.exists():
        print(f"nnx-lint: error: {path}: no such file or directory", file=sys.stderr)
        return EXIT_ERROR
    if args.timeout is not None and args.timeout <= 0:
        print("nnx-lint: error: --timeout must be positive", file=sys.stderr)
        return EXIT_ERROR
    shard = None
    if args.shard is not None:
        try:
            shard = parse_shard(args.shard)
        except ShardError as exc:
            print(f"nnx-lint: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
        from nnx_lint.gate.runner import is_pytest_command, uses_junit

        if not is_pytest_command(command) or uses_junit(command):
            print("nnx-lint: error: --shard needs a pytest test command (the plugin selects the shard's tests)",
                  file=sys.stderr)
            return EXIT_ERROR
    from nnx_lint.gate.run_identity import RunIdError, checked_run_id, run_identity

    try:
        run_id = None if getattr(args, "run_id", None) is None else checked_run_id(args.run_id)
    except RunIdError as exc:
        print(f"nnx-lint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    # Before the tests run: they could rewrite .git.
    run = run_identity(path.resolve() if path.is_dir() else path.resolve().parent,
                       shard[1] if shard else None, command, run_id)
    if args.progress_interval <= 0:
        print("nnx-lint: error: --progress-interval must be positive", file=sys.stderr)
        return EXIT_ERROR
    if args.jobs is not None and args.jobs < 1:
        print("nnx-lint: error: -n must be at least 1", file=sys.stderr)
        return EXIT_ERROR
    notes: list[str] = []
    jobs = args.jobs
    if jobs is not None and importlib.util.find_spec("xdist") is None:
        notes.append(f"-n {jobs} ignored: pytest-xdist is not installed, the tests ran in one process")
        jobs = None
    if _flax_missing_here(command):
        print(f"nnx-lint: error: flax is not installed in this Python; the gate compares flax's graph mode "
              f"and Tree Mode and needs it ({gate_extra()})", file=sys.stderr)
        return EXIT_ERROR
    if test_command is None and importlib.util.find_spec("pytest") is None:
        print(f"nnx-lint: error: pytest is not installed in this Python; the gate runs the project's pytest "
              f"suite ({gate_extra()})", file=sys.stderr)
        return EXIT_ERROR
    baseline: set[str] | None = None
    try:
        if args.baseline is not None:
            baseline = read_baseline(args.baseline)
        from nnx_lint.engine.config import split_codes

        select = split_codes(args.select)
        from nnx_lint.gate.attribution import lint_project

        progress = Progress(interval=args.progress_interval)
        progress.phase(f"lint: {path}")
        lint_started = time.monotonic()

        def lint_progress(done: int, total: int, _invalidated: bool) -> None:
            progress.show("lint", done, total, unit="files")

        # The terminal's status line only: a log has the phase lines.
        diagnostics = lint_project(path, select, lint_progress if progress.enabled else None)
        lint_elapsed = time.monotonic() - lint_started
        progress.clear()
        progress.phase(f"lint: ended, {lint_line(diagnostics)}")
    except (BaselineError, ConfigError, UnknownSelector) as exc:
        print(f"nnx-lint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("nnx-lint: interrupted", file=sys.stderr)
        return EXIT_ERROR

    preload()
    from nnx_lint.gate.classify import GateOptions, run_gate

    workdir = Path(tempfile.mkdtemp(prefix="nnx-lint-gate-"))
    try:
        outcome = run_gate(GateOptions(command=command, cwd=Path.cwd(), workdir=workdir, jobs=jobs,
                                       timeout=args.timeout, progress=progress, warm=not args.no_warm_reruns,
                                       shard=shard, concurrent_reruns=False if args.serial_reruns else None))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    outcome.elapsed += lint_elapsed  # the summary's time is the whole gate's, its lint included
    breaks = sum(1 for verdict in outcome.verdicts if verdict.kind in ("tree-break", "not-isolated"))
    progress.phase(f"join: attributing {breaks} break(s) to the findings")
    status, output = finish(outcome, diagnostics, path, baseline, args, notes, run=run)
    progress.phase("join: ended")
    try:
        print(output)
    except BrokenPipeError:
        pass
    return status


def lint_line(diagnostics: list) -> str:
    """What the gate's lint found, saying that it lints in audit mode (``--strict``, so that a break
    only an unproven finding matches is counted apart), proven and unproven apart: ``nnx-lint check``
    without ``--strict`` reports only the proven ones.

    >>> from types import SimpleNamespace as D
    >>> lint_line([D(proof="unproven"), D(proof=None), D(proof="unproven")])
    '3 findings in audit mode (--strict): 1 proven, 2 unproven'
    >>> lint_line([D(proof=None)])
    '1 finding in audit mode (--strict): 1 proven, 0 unproven'
    """
    from nnx_lint.base.diagnostic import UNPROVEN

    unproven = sum(1 for d in diagnostics if d.proof == UNPROVEN)
    total = len(diagnostics)
    return (f"{total} finding{'s' * (total != 1)} in audit mode (--strict): {total - unproven} proven, "
            f"{unproven} unproven")


def finish(outcome: GateOutcome, diagnostics: list, path: Path, baseline: set[str] | None,
           args: argparse.Namespace, notes: list[str], run: dict | None = None) -> tuple[int, str]:
    """Attribute the breaks, apply the baseline, and render: (exit status, report text).

    ``run`` is the report's run identity (:mod:`nnx_lint.gate.run_identity`), taken before the runs."""
    from nnx_lint.engine.config import split_codes
    from nnx_lint.gate.attribution import Attributor, lint_dependency_files
    from nnx_lint.gate.baseline import BaselineError, write_baseline
    from nnx_lint.gate.dependencies import dependency_frames
    from nnx_lint.gate.report import BREAKING_KINDS, build_report, final_line, render
    from nnx_lint.gate.untested import untested_reason

    root = path.resolve() if path.is_dir() else path.resolve().parent
    attributor = Attributor(diagnostics, root)
    breaking = [verdict for verdict in outcome.verdicts if verdict.kind in BREAKING_KINDS]
    attributions = {verdict.nodeid: attributor.attribute(verdict) for verdict in breaking}
    # No frame of the project explains these (a path match ranks after the dependencies' frames).
    unmatched = [verdict for verdict in breaking
                 if not attributions[verdict.nodeid].explained or attributions[verdict.nodeid].matches[0].how == "path"]
    dependency_files = sorted({frame.file for verdict in unmatched for frame in dependency_frames(verdict.failure)})
    if dependency_files:
        attributor.add(lint_dependency_files(dependency_files, split_codes(args.select)))
        attributions.update({verdict.nodeid: attributor.attribute(verdict) for verdict in unmatched})
    tree_run = outcome.runs.get("tree")
    rootdir = Path(tree_run.results.rootdir) if tree_run and tree_run.results.rootdir else Path.cwd()
    passing = attributor.findings_in_passing_tests(outcome, rootdir)
    untested = untested_reason(outcome)
    if args.write_baseline is not None and untested is not None:
        # An empty baseline from a run that tested nothing would accept every later break.
        print(f"nnx-lint gate: {args.write_baseline} not written: nothing was tested", file=sys.stderr)
    elif args.write_baseline is not None:
        try:
            from nnx_lint.base.confined_writes import WriteScope

            scope = WriteScope.of(Path.cwd(), [path, args.write_baseline])
            written = {verdict.nodeid for verdict in breaking}
            write_baseline(args.write_baseline, written, scope)
            print(f"nnx-lint gate: wrote {len(written)} Tree Mode break(s) to {args.write_baseline}"
                  + (f" ({', '.join(sorted(written)[:3])}{', ...' if len(written) > 3 else ''})" if written else ""),
                  file=sys.stderr)
        except BaselineError as exc:
            outcome.problems.append(str(exc))
        baseline = (baseline or set()) | {verdict.nodeid for verdict in breaking}
    status = EXIT_ERROR if untested is not None else exit_status(
        outcome.problems, {verdict.nodeid for verdict in breaking}, baseline or set())
    if outcome.reruns_skipped:
        notes.append(f"{outcome.reruns_skipped} Tree-Mode-only failure(s) were not re-run alone: "
                     "they are listed as 'not isolated'")
    notes.append("findings are matched to test functions that passed by their node ids only; findings in code "
                 "those tests called would need coverage data, which the gate does not collect")
    baseline_file = args.baseline or args.write_baseline
    report = build_report(outcome, attributions, passing, root=root, baseline=baseline,
                          baseline_file=str(baseline_file) if baseline_file else None,
                          findings=len(diagnostics), exit_status=status, notes=notes, untested=untested,
                          shard=parse_shard(args.shard) if getattr(args, "shard", None) else None, run=run)
    if getattr(args, "report_file", None) is not None:
        from nnx_lint.base.confined_writes import WriteRefused, WriteScope, write_confined

        try:
            write_confined(args.report_file, (json.dumps(report, indent=2) + "\n").encode("utf-8"),
                           WriteScope.of(Path.cwd(), [path, args.report_file]))
        except (WriteRefused, OSError) as exc:
            report["problems"].append(f"{args.report_file}: cannot write the report: {exc}")
            report["exit_status"] = status = EXIT_ERROR
    if untested is not None and args.output_format != "text":
        # The text report ends with this line; a JSON or markdown report on stdout may be piped away.
        print(final_line(report), file=sys.stderr)
    return status, render(report, args.output_format)
