"""The quick test loop against the full suite (issue 45: quick loop at most 3 minutes, full suite
at most 15, on a 2-core machine).

    python bench/test_loop.py [--quick-only | --full-only] [--out DIR] [-- PYTEST ARGS...]

In one run, from the repository root: ``python -m pytest -m "not slow"`` (the quick loop,
CONTRIBUTING.md) and then ``python -m pytest`` (the full suite, the README's test command that
``.ci/run`` calls), each with ``--junitxml`` and ``-p no:cacheprovider``. For each: wall time,
CPU time of pytest and every process it waited for (``RUSAGE_CHILDREN``: the xdist workers and
what the tests start), tests run, and the sum of the tests' own times. Then the test files by
their time, and for the full suite the time of the tests marked slow.

On a shared machine, wall time measures the machine's load as much as the suite: the CPU time
divided by the cores is about what the same run takes on an idle machine (a lower bound: it
assumes both cores busy throughout), and the two runs of one
invocation are comparable with each other. ``--quick-only`` skips the full suite (its junit
XML from an earlier run, ``--full-junit FILE``, can still be summarised); ``--full-only`` times only the
full suite.

    python bench/test_loop.py --files tests/test_a.py ... [--baseline DIR] [--full-junit FILE]

``--files``: the CPU time of each test file run alone (``python -m pytest -n 0 -q -p no:cacheprovider
FILE``, pytest and every process it waited for), in this tree and, with ``--baseline``, in another
checkout (``git worktree add DIR COMMIT``), one after the other, the baseline first for every other
file, so that both see about the same load. For a change to the tests: the baseline's in-process
imports are the installed nnx-lint, this tree's. With ``--full-junit``, each file's saving is also
scaled to its time in that full run (its test time there times the CPU fraction saved), and summed.
"""
from __future__ import annotations

import argparse
import collections
import os
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(name: str, marker: list[str], junit: Path, extra: list[str]) -> dict:
    command = [sys.executable, "-m", "pytest", *marker, "-q", "-p", "no:cacheprovider", f"--junitxml={junit}", *extra]
    print(f"== {name}: {' '.join(command[1:])}", flush=True)
    cpu, start = _children_cpu(), time.perf_counter()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
    print(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:], flush=True)
    return {"name": name, "wall": wall, "cpu": cpu, "status": done.returncode, **_junit_summary(junit)}


def _junit_summary(junit: Path) -> dict:
    """Tests run and their times, by test file, from a junit XML report."""
    by_file: collections.Counter = collections.Counter()
    tests = 0
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        if case.find("skipped") is not None:
            continue
        tests += 1
        module = case.get("classname", "").split(".")
        # `tests.test_cli` or `tests.test_cli.TestClass`: the file is the first test_* part.
        file = next((part for part in module if part.startswith("test_")), case.get("classname", "?"))
        by_file[file] += float(case.get("time") or 0.0)
    return {"tests": tests, "test_time": sum(by_file.values()), "by_file": by_file}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick-only", action="store_true", help="time only the quick loop")
    parser.add_argument("--full-only", action="store_true", help="time only the full suite")
    parser.add_argument("--full-junit", type=Path, help="with --quick-only or --files: an earlier full run's junit XML")
    parser.add_argument("--out", type=Path, help="keep the junit XML files here")
    parser.add_argument("--top", type=int, default=15, help="test files listed per run")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments, after --")
    parser.add_argument("--files", nargs="+", type=Path, help="time these test files alone, each in one process")
    parser.add_argument("--baseline", type=Path, help="with --files: a checkout to time the same files in")
    args = parser.parse_args()
    if args.files:
        _compare_files(args.files, args.baseline, args.full_junit)
        return
    out = args.out or Path(tempfile.mkdtemp(prefix="nnx-lint-test-loop-"))
    out.mkdir(parents=True, exist_ok=True)
    cores = os.cpu_count() or 1
    runs = [] if args.full_only else [_run("quick loop", ["-m", "not slow"], out / "quick.xml", args.pytest_args)]
    if not args.quick_only:
        runs.append(_run("full suite", [], out / "full.xml", args.pytest_args))
    elif args.full_junit is not None:
        runs.append({"name": "full suite (earlier junit)", "wall": float("nan"), "cpu": float("nan"), "status": None,
                     **_junit_summary(args.full_junit)})
    print(f"\n{cores} cores; CPU / cores: about the wall time on an idle machine (a lower bound)")
    print(f"{'run':<28} {'wall s':>8} {'CPU s':>8} {'CPU/cores s':>12} {'tests':>6} {'test time s':>12}")
    for run in runs:
        print(f"{run['name']:<28} {run['wall']:>8.1f} {run['cpu']:>8.1f} {run['cpu'] / cores:>12.1f} "
              f"{run['tests']:>6} {run['test_time']:>12.1f}")
    if len(runs) == 2:
        quick, full = runs
        print(f"quick / full: tests {quick['tests'] / full['tests']:.2f}, test time "
              f"{quick['test_time'] / full['test_time']:.2f}, wall {quick['wall'] / full['wall']:.2f}")
        slow_files = full["by_file"] - quick["by_file"]
        print(f"time of the slow tests in the full run: {sum(slow_files.values()):.1f} s")
    for run in runs:
        print(f"\n{run['name']}: the {args.top} test files that take longest (s)")
        for file, seconds in run["by_file"].most_common(args.top):
            print(f"  {seconds:8.1f}  {file}")
    print(f"\njunit XML in {out}")


def _file_cpu(root: Path, file: Path) -> tuple[float, str]:
    """CPU seconds of ``pytest -n 0`` on one test file in the checkout ``root``, and pytest's last line."""
    command = [sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider", str(file)]
    cpu = _children_cpu()
    done = subprocess.run(command, cwd=root, capture_output=True, text=True)
    lines = done.stdout.strip().splitlines()
    return _children_cpu() - cpu, lines[-1] if lines else done.stderr[-300:]


def _compare_files(files: list[Path], baseline: Path | None, full_junit: Path | None) -> None:
    full = _junit_summary(full_junit)["by_file"] if full_junit else {}
    print(f"{'file':<40} {'baseline CPU s':>15} {'CPU s':>8} {'saved':>7} {'in the full run s':>18}")
    saved_in_full = 0.0
    for number, file in enumerate(files):
        roots = [REPO] if baseline is None else [baseline, REPO] if number % 2 == 0 else [REPO, baseline]
        cpu = {}
        for root in roots:
            cpu[root], last = _file_cpu(root, file)
            print(f"  {root.name}/{file}: {cpu[root]:.1f} s CPU; {last}", flush=True)
        before = cpu.get(baseline, float("nan")) if baseline else float("nan")
        fraction = 1 - cpu[REPO] / before if baseline and before > 0 else float("nan")
        in_full = full.get(file.stem, 0.0) * fraction if full and baseline else float("nan")
        saved_in_full += 0.0 if in_full != in_full else in_full  # nan: nothing to add
        print(f"{str(file):<40} {before:>15.1f} {cpu[REPO]:>8.1f} {fraction:>7.0%} {in_full:>18.1f}", flush=True)
    if full and baseline:
        print(f"saved in the full run, scaled: {saved_in_full:.1f} s of {sum(full.values()):.1f} s of test time")


if __name__ == "__main__":
    main()
