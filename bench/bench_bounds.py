"""Time and peak memory of nnx-lint on hostile inputs, as ratios against a baseline run.

    python bench/bench_bounds.py [--project DIR] [--source SRC] [--only NAME ...]

Generates, in a temporary directory, the worst-case inputs of issue 10 (a symlink to
/dev/zero, a FIFO, a 6.5 MB notebook, a file of a million lines, 8000 redefinitions of
one class, ...), each alone in a directory, and runs ``nnx-lint check DIR --no-cache -j 1``
on each in its own process, measuring wall time and the peak resident memory of that process (``wait4``).
The baseline is the same command on a small normal file (``docs/example/train.py``),
measured in the same run: only the ratios mean anything on a shared, noisy machine; the
memory target (1 GB per worst-case input, 500 MB on a large real project) is absolute.

``--project DIR`` also lints a real project (e.g. google/flax, fetched outside this
repository) with ``-j 1``. ``--source SRC`` runs the nnx-lint found in another checkout
(``PYTHONPATH=SRC``), for before/after numbers; every run has ``--timeout`` and an
address-space limit (``--memory-limit``) so that an unbounded version cannot take the
machine down: such runs are reported as ``timeout``/``over limit``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BASELINE = REPO / "docs" / "example" / "train.py"
_MB = 1024 * 1024
NNX = "from flax import nnx\n"
RICH_CLASS = (
    "class M(nnx.Module):\n    def __init__(self, rngs):\n        self.a = self.b = nnx.Linear(2, 2, rngs=rngs)\n"
    "m = M(nnx.Rngs(0))\n"
)


def _notebook(cells: list[str], outputs: list[dict] | None = None) -> bytes:
    return json.dumps({
        "cells": [{"cell_type": "code", "source": source.splitlines(True), "metadata": {},
                   "outputs": outputs or [], "execution_count": None} for source in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }).encode()


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _sparse(path: Path) -> None:
    with open(path, "wb") as handle:
        handle.write(NNX.encode())
        handle.truncate(2 << 30)


#: name -> (what it is, how to make it at a path)
INPUTS: dict[str, tuple[str, Callable[[Path], None]]] = {
    "dev-zero": ("symlink to /dev/zero", lambda p: p.symlink_to("/dev/zero")),
    "fifo": ("FIFO named *.py", _fifo),
    "sparse-2g": ("2 GiB sparse file", _sparse),
    "notebook-code-6.5mb": ("6.5 MB notebook, all code (over the code cap)",
                            lambda p: p.write_bytes(_notebook([NNX] + [RICH_CLASS * 20] * 2200))),
    "notebook-outputs-6.5mb": ("6.5 MB notebook, small code, big outputs (analysed)",
                               lambda p: p.write_bytes(_notebook(
                                   [NNX + RICH_CLASS * 3],
                                   [{"output_type": "display_data", "metadata": {},
                                     "data": {"image/png": "iVBOR" + "A" * (6_500_000)}}]))),
    "notebook-deep-json": ("notebook of 2 MB of nested JSON brackets",
                           lambda p: p.write_bytes(b'{"nnx": ' + b"[" * 1_000_000 + b"]" * 1_000_000 + b"}")),
    "lines-1m": ("1M lines (`a`)", lambda p: p.write_text(NNX + "a\n" * 1_000_000)),
    "lines-1m-assign": ("1M lines (`x=1`), just under 4 MiB", lambda p: p.write_text(NNX + "x=1\n" * 1_000_000)),
    "classes-8000": ("8000 redefinitions of one class", lambda p: p.write_text(
        NNX + "class M(nnx.Module):\n    pass\nm = M()\nnnx.jit(lambda m: m)(m)\n" * 8000)),
    "classes-7800-rich": ("7800 redefinitions of a class storing a shared Linear (at the budget)",
                          lambda p: p.write_text(NNX + RICH_CLASS * 7800)),
    "at-budget-names": ("398k tokens and lines of bare names (at the budget)",
                        lambda p: p.write_text(NNX + "a\n" * 199_000)),
    "at-budget-consts": ("a 199k-element list literal (at the budget)",
                         lambda p: p.write_text(NNX + "x = [" + "1," * 199_000 + "]\n")),
}


def _suffix(name: str) -> str:
    return ".ipynb" if name.startswith("notebook") else ".py"


def measure(command: list[str], cwd: Path, env: dict, timeout: float, memory_limit: int) -> dict:
    """Run ``command`` (its own session, killed whole on timeout); wall seconds, exit code, output."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               preexec_fn=limit, start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
        status = "ok"
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        out, err = process.communicate()
        status = "timeout"
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "status": status, "code": process.returncode, "stdout": out.decode(errors="replace"),
            "stderr": err.decode(errors="replace")}


def measure_isolated(command: list[str], cwd: Path, env: dict, timeout: float, memory_limit: int) -> dict:
    """:func:`measure` in a fresh helper process, whose RUSAGE_CHILDREN peak is then this run's
    alone (``ru_maxrss`` is a maximum over waited-for children, so it cannot be differenced)."""
    helper = (
        "import json, resource, sys\n"
        f"sys.path.insert(0, {str(REPO / 'bench')!r})\n"
        "from bench_bounds import measure\n"
        "args = json.loads(sys.argv[1])\n"
        "result = measure(args['command'], args['cwd'], args['env'], args['timeout'], args['memory_limit'])\n"
        "result['peak_mb'] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "print(json.dumps(result))\n"
    )
    payload = json.dumps({"command": command, "cwd": str(cwd), "env": env, "timeout": timeout,
                          "memory_limit": memory_limit})
    done = subprocess.run([sys.executable, "-c", helper, payload], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def verdict(result: dict, memory_limit: int) -> str:
    if result["status"] == "timeout":
        return "timeout"
    if result["code"] not in (0, 1) or "Traceback" in result["stderr"] or "internal error" in result["stderr"]:
        if "MemoryError" in result["stderr"] or result["code"] < 0:
            return f"over limit ({memory_limit // _MB} MB)"
        return f"failed (exit {result['code']})"
    lines = [line for line in result["stdout"].splitlines() if ": NNX0" in line]
    return lines[0].split(": ", 1)[1][:70] if lines else result["stdout"].strip().splitlines()[-1][:70]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", type=Path, help="also lint this real project (-j 1)")
    parser.add_argument("--source", type=Path, default=REPO, help="the nnx-lint checkout to run (default: this one)")
    parser.add_argument("--only", nargs="*", help="only these inputs")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--memory-limit", type=int, default=4096, help="address-space limit per run, MB")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(args.source.resolve())}
    limit = args.memory_limit * _MB
    command = [sys.executable, "-m", "nnx_lint.cli", "check", "--no-cache", "-j", "1"]

    baseline = measure_isolated([*command, str(BASELINE)], REPO, env, args.timeout, limit)
    print(f"nnx-lint from {args.source}; baseline: `nnx-lint check {BASELINE.relative_to(REPO)}` "
          f"{baseline['seconds']:.2f} s, {baseline['peak_mb']:.0f} MB peak")
    print(f"{'input':24s} {'seconds':>8s} {'x base':>7s} {'peak MB':>8s} {'x base':>7s}  result")
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="nnx-lint-bounds-") as scratch:
        for name, (description, make) in INPUTS.items():
            if args.only and name not in args.only:
                continue
            # In a directory of its own, linted as a directory: how a hostile file arrives in a pull request.
            folder = Path(scratch) / name
            folder.mkdir()
            path = folder / f"{name}{_suffix(name)}"
            make(path)
            result = measure_isolated([*command, name], Path(scratch), env, args.timeout, limit)
            worst = max(worst, result["peak_mb"])
            print(f"{name:24s} {result['seconds']:8.2f} {result['seconds'] / baseline['seconds']:7.1f} "
                  f"{result['peak_mb']:8.0f} {result['peak_mb'] / baseline['peak_mb']:7.1f}  {verdict(result, limit)}")
            if path.is_file() and not path.is_symlink():
                path.unlink()
    print(f"worst peak over the hostile inputs: {worst:.0f} MB  [target <= 1024 MB]")
    if args.project:
        result = measure_isolated([*command, "--exit-zero", str(args.project.resolve())], REPO, env, 3600, limit)
        print(f"project {args.project}: {result['seconds']:.1f} s ({result['seconds'] / baseline['seconds']:.0f}x base), "
              f"{result['peak_mb']:.0f} MB peak  [target <= 500 MB]; {verdict(result, limit)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
