"""Issue 12's speed target on one directory: the cold run against ``ast.parse`` of the same files.

    python bench/ast_ratio.py PATH [--repeat 3] [--baseline OTHER_CHECKOUT]

Measures in one run, each the best of ``--repeat``:

1. ``ast.parse`` of every Python file nnx-lint discovers under PATH (read + parse, in this process);
2. astroid building the files that pass the text pre-filter, with nnx-lint's builder
   (the part of a cold run no analysis change can remove);
3. ``nnx-lint check`` cold (empty cache) with ``-j 1`` and with the default jobs, and warm
   (nothing changed since the last run), each in a subprocess;
4. the floor: the cold ``-j 1`` run with no analysis rule selected (``--select NNX002``), which
   still reads, pre-filters, builds and indexes every file: what the rules' share is measured against;

and prints each as a ratio to (1), in wall and in CPU seconds: the target is a cold run within 3x ``ast.parse``, and a warm
run no slower than before. With ``--baseline``, the same commands run with another checkout of
nnx-lint on ``PYTHONPATH`` (e.g. a ``git worktree`` of the commit before a change), alternating
with this one, so that before/after ratios come from one run of a shared, noisy machine.

Besides wall time, the CPU seconds (user + system) of each subprocess are printed: on a machine
shared with other work they move less than the wall time. Never compare absolute times across
runs; only the ratios of one run mean anything.
"""
from __future__ import annotations

import argparse
import ast
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nnx_lint.engine.config import Settings  # noqa: E402
from nnx_lint.analysis.prefilter import mentions_nnx  # noqa: E402
from nnx_lint.engine.runner import discover  # noqa: E402


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_command(command: list[str], tree: Path, cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of ``command`` run with ``tree`` first on ``PYTHONPATH``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    # An installed nnx-lint runs from compiled bytecode; without it every run would compile
    # nnx-lint's modules first (~0.3 s here). The first run of each checkout writes it.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cpu = children_cpu()
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    # Exit 1 means findings, but an uncaught exception (an import error in a checkout being
    # edited) also exits 1: a traceback on stderr is a failed run, not a fast one.
    if result.returncode not in (0, 1) or "Traceback (most recent call last)" in result.stderr:
        raise RuntimeError(f"{command} failed ({result.returncode}): {result.stderr[-2000:]}")
    return wall, children_cpu() - cpu


#: The cold runs, each as (row name, arguments after ``check PATH``), in the order they run. The
#: first is the floor no rule change can go below: the same process with only an
#: engine-reported rule selected (NNX002, unparsable files), so that every file is read,
#: pre-filtered, built by astroid and indexed, and no analysis rule runs. The last fills the
#: cache the warm run reads (the selection is part of the cache key).
COLD_RUNS = (
    ("cold, -j 1, no analysis rule", ["-j", "1", "--select", "NNX002"]),
    ("cold, -j 1", ["-j", "1", "--select", "NNX"]),
    ("cold, default jobs", ["--select", "NNX"]),
)


def best(samples: list[tuple[float, float]]) -> tuple[float, float]:
    return min(s[0] for s in samples), min(s[1] for s in samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="another nnx-lint checkout to measure alternately")
    args = parser.parse_args()
    target = args.path.resolve()

    files = [f for f in discover([target], Settings(root=target)) if f.suffix == ".py"]
    sources = {f: f.read_bytes() for f in files}
    kept = {f: data for f, data in sources.items() if mentions_nnx(data, notebook=f.suffix == ".ipynb")}
    print(f"{target}: {len(files)} Python files ({sum(map(len, sources.values())) / 1e6:.1f} MB), "
          f"{len(kept)} pass the pre-filter")

    def parse_all() -> None:
        for file in files:
            try:
                ast.parse(file.read_bytes())
            except (SyntaxError, ValueError, RecursionError):
                pass

    def build_kept() -> None:
        from nnx_lint.analysis import parsing

        for file, data in kept.items():
            try:
                parsing.build(data.decode("utf-8", "replace"), str(file), file.stem)
            except parsing.ParseFailure:
                pass

    def best_in_process(function) -> tuple[float, float]:
        times, cpus = [], []
        for _ in range(args.repeat):
            start, cpu = time.perf_counter(), time.process_time()
            function()
            times.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu)
        return min(times), min(cpus)

    # CPU seconds too: on a shared machine the wall time of `ast.parse` and of the runs see
    # different loads, while CPU ratios stay comparable.
    (parse, parse_cpu), (build, build_cpu) = best_in_process(parse_all), best_in_process(build_kept)

    trees = {"this": REPO, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    cache_dirs = {name: Path(tempfile.mkdtemp(prefix=f"nnx-lint-ratio-{name}-")) for name in trees}
    lint = [sys.executable, "-m", "nnx_lint.cli", "check", str(target), "--exit-zero"]
    samples: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(args.repeat):
        for name, tree in trees.items():  # alternating: both trees see the same machine load
            cache = ["--cache-dir", str(cache_dirs[name])]
            for kind, extra in COLD_RUNS:
                shutil.rmtree(cache_dirs[name], ignore_errors=True)
                samples.setdefault((name, kind), []).append(timed_command([*lint, *extra, *cache], tree, target))
            # The same selection as the last cold run, whose cache it reads.
            samples.setdefault((name, "warm"), []).append(timed_command([*lint, *COLD_RUNS[-1][1], *cache], tree, target))
    for directory in cache_dirs.values():
        shutil.rmtree(directory, ignore_errors=True)

    print(f"  {'ast.parse, all files':40s} {parse:7.2f} s   {'':16s}   (CPU {parse_cpu:6.2f} s)")
    print(f"  {'astroid build, pre-filtered files':40s} {build:7.2f} s   {build / parse:5.2f}x ast.parse   "
          f"(CPU {build_cpu:6.2f} s, {build_cpu / parse_cpu:5.2f}x)")
    for (name, kind), measured in samples.items():
        wall, cpu = best(measured)
        print(f"  {name + ': ' + kind:40s} {wall:7.2f} s   {wall / parse:5.2f}x ast.parse   "
              f"(CPU {cpu:6.2f} s, {cpu / parse_cpu:5.2f}x)")
    if args.baseline:
        print("this / baseline (wall, CPU):")
        for kind in [*(kind for kind, _extra in COLD_RUNS), "warm"]:
            (wall, cpu), (base_wall, base_cpu) = best(samples[("this", kind)]), best(samples[("baseline", kind)])
            print(f"  {kind:40s} {wall / base_wall:5.2f}   {cpu / base_cpu:5.2f}")
    print("target: cold within 3x ast.parse "
          f"(-j 1: {best(samples[('this', 'cold, -j 1')])[0] / parse:.2f}x; "
          f"default jobs: {best(samples[('this', 'cold, default jobs')])[0] / parse:.2f}x; "
          f"the floor, no analysis rule: {best(samples[('this', 'cold, -j 1, no analysis rule')])[0] / parse:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
