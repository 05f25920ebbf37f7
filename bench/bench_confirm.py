"""Cost of ``nnx-lint check --confirm``, as ratios against plain ``nnx-lint check`` in the same run.

    python bench/bench_confirm.py [PATH] [--copies 100]

Without PATH, a synthetic project of ``--copies`` copies of docs/example/train.py is
linted (3 diagnostics each; the copies share their reproductions, as real projects do).
Reported: the plain check; ``--confirm`` with an empty confirmation cache (first run:
worker start-up and the JAX import included) and with a warm one; the amortised cost
per diagnostic (target <= 50 ms); and the time of one first reproduction alone
(target <= 3 s including the JAX import).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def timed(command: list[str], cwd: Path) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if result.returncode not in (0, 1):
        raise RuntimeError(result.stderr[-2000:])
    return elapsed, result.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path, nargs="?")
    parser.add_argument("--copies", type=int, default=100)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="nnx-lint-confirm-bench-"))
    if args.path:
        target = args.path.resolve()
    else:
        target = workdir / "project"
        target.mkdir()
        for i in range(args.copies):
            shutil.copy(REPO / "docs" / "example" / "train.py", target / f"train_{i}.py")
    cache = workdir / "cache"
    base = [sys.executable, "-m", "nnx_lint.cli", "check", str(target), "--output-format", "json", "--cache-dir", str(cache)]

    plain, out = timed([*base, "--no-cache"], target)
    diagnostics = json.loads(out)
    shutil.rmtree(cache, ignore_errors=True)
    timed(base, target)  # fill the lint cache only: what --confirm adds is then confirmation alone
    lint_warm, _ = timed(base, target)
    first, out = timed([*base, "--confirm"], target)
    verdicts = [d.get("confirmation", {}).get("status") for d in json.loads(out)]
    warm, _ = timed([*base, "--confirm"], target)

    from nnx_lint.confirmation.oracle import run_programs
    from checkers.prefix_filters.nnx201_state_axes_prefix import StateAxesPrefix

    program = StateAxesPrefix.reproduce({"transform": "vmap", "argument": "in_axes"}).program()
    start = time.perf_counter()
    run_programs([program], "tree_runtime")
    single = time.perf_counter() - start

    count = max(len(diagnostics), 1)
    print(f"{target}: {len(diagnostics)} diagnostics; verdicts: "
          + ", ".join(f"{verdicts.count(s)} {s}" for s in sorted(set(verdicts), key=str)))
    print(f"  nnx-lint check, cold, no cache               {plain:7.2f} s")
    print(f"  nnx-lint check, warm lint cache              {lint_warm:7.2f} s")
    print(f"  ... --confirm, empty confirmation cache      {first:7.2f} s")
    print(f"  ... --confirm, warm confirmation cache       {warm:7.2f} s")
    print(f"  one first reproduction (worker + JAX import) {single:7.2f} s   [target <= 3 s]")
    print(f"  confirmation per diagnostic, first run       {1000 * (first - lint_warm) / count:7.1f} ms [target <= 50 ms]")
    print(f"  confirmation per diagnostic, cached          {1000 * (warm - lint_warm) / count:7.1f} ms")
    print(f"  --confirm first run / plain cold check       {first / plain:7.2f}")
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
