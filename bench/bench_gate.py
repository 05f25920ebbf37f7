"""The gate's overhead on a small suite: ``nnx-lint gate`` against the two plain pytest runs it
replaces (graph mode, then Tree Mode), measured in the same run. Prints the ratio; the target
(issue 27) is at most 2.0. No absolute times are asserted anywhere.

    python bench/bench_gate.py [--repeat 3] [--project DIR] [--no-warm-reruns]

``--project`` defaults to a copy of ``tests/fixtures_gate/project`` (6 tests that import flax:
3 break in Tree Mode, 1 is order-dependent, so the gate also makes 7 isolated re-runs). Each
round times, one after the other, the two plain runs (``python -m pytest -p no:cacheprovider``
with each mode's variables) and the gate (``python -m nnx_lint.cli gate .``) in a fresh copy;
the ratio is gate / (graph + Tree Mode) per round, and the median over the rounds is printed.
Beside the wall-clock ratio (the target) it prints the same ratio of CPU time (user + system of
each command and everything it waited for), which a machine shared with other jobs disturbs
far less. Run it with the interpreter that has nnx-lint, pytest and flax.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nnx_lint.gate.modes import GRAPH, TREE  # noqa: E402

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures_gate" / "project"
TARGET = 2.0


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(command: list[str], cwd: Path, environment: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of ``command``; CPU counts the descendants it (and theirs) waited for."""
    started, cpu = time.monotonic(), _cpu_of_children()
    subprocess.run(command, cwd=cwd, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)
    return time.monotonic() - started, _cpu_of_children() - cpu


def one_round(project: Path, gate_options: list[str]) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of graph-mode pytest, Tree Mode pytest and the gate, each in a fresh copy of
    ``project``."""
    times = []
    with tempfile.TemporaryDirectory() as scratch:
        for index, (mode, command) in enumerate((
                (GRAPH, [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]),
                (TREE, [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]),
                (None, [sys.executable, "-m", "nnx_lint.cli", "gate", ".", *gate_options]))):
            copy = Path(scratch) / str(index)
            shutil.copytree(project, copy, ignore=shutil.ignore_patterns("__pycache__"))
            environment = {**os.environ, **(mode.environment if mode else {})}
            times.append(_timed(command, copy, environment))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--project", type=Path, default=FIXTURE)
    parser.add_argument("--no-warm-reruns", action="store_true", help="pass --no-warm-reruns to the gate")
    args = parser.parse_args()
    options = ["--no-warm-reruns"] if args.no_warm_reruns else []
    ratios, cpu_ratios = [], []
    for round_index in range(args.repeat):
        (graph, graph_cpu), (tree, tree_cpu), (gate, gate_cpu) = one_round(args.project, options)
        ratios.append(gate / (graph + tree))
        cpu_ratios.append(gate_cpu / (graph_cpu + tree_cpu))
        print(f"round {round_index + 1}: pytest graph {graph:.1f}s + Tree Mode {tree:.1f}s = {graph + tree:.1f}s; "
              f"gate {gate:.1f}s; ratio {ratios[-1]:.2f} (CPU: {graph_cpu + tree_cpu:.1f}s, gate {gate_cpu:.1f}s, "
              f"ratio {cpu_ratios[-1]:.2f}; load average {os.getloadavg()[0]:.1f})")
    median = statistics.median(ratios)
    print(f"gate / (two plain pytest runs): median {median:.2f} over {len(ratios)} round(s) "
          f"(target <= {TARGET:.1f}: {'met' if median <= TARGET else 'NOT met'}); "
          f"CPU time: median {statistics.median(cpu_ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
