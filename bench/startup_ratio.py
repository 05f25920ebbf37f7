"""Start-up of the ``nnx-lint`` console script against a bare interpreter (issue 45, target 2.5x).

    python bench/startup_ratio.py [--runs 21] [--console PATH]

In one run, alternating so that a busy machine slows each alike, the wall time of:

- ``python -c pass``: the same interpreter as the console script's, bare (the baseline);
- ``nnx-lint --version``;
- ``nnx-lint check FILE``: one small file with one finding, in a scratch project whose cache a
  first run filled (what pre-commit and editors pay on each call when the file did not change);
- ``nnx-lint check FILE --no-cache``: the same file analysed (astroid and the rules imported);
- ``python -c "import astroid"``: the floor of that cold check, which must import astroid (the
  same interpreter).

The 2.5x target is measured on the check the cache answers (the pre-commit and editor case); a
cold check cannot meet it while importing astroid alone costs more than that (the last line).

Each also with its CPU time (user + system), whose ratio a loaded machine disturbs less.

Prints the median of ``--runs`` runs of each, and each median over the baseline's. The console
script is the one beside this interpreter unless ``--console`` names another; the bare
interpreter is the one its ``#!`` line names. Every command runs with ``PYTHONDONTWRITEBYTECODE``
unset, so that the warm-up runs leave the bytecode an installed wheel has (pip compiles it at
install): without it an editable checkout compiles every module it imports on every run (about
a quarter of a filled-cache check's time). ``--before CHECKOUT`` adds the same three nnx-lint
commands with another checkout of nnx-lint first on ``PYTHONPATH`` (a ``git archive`` of the
commit before a change), alternating with the others.

    python bench/startup_ratio.py --runs 21 --before BASE_CHECKOUT
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FILE = '''\
from flax import nnx


@nnx.jit
def step(model, x):
    model.count = 1
    return x
'''


def _interpreter_of(console: Path) -> str:
    first = console.read_text(encoding="utf-8", errors="replace").splitlines()[0]
    return first[2:].strip().split()[0] if first.startswith("#!") else sys.executable


def _timed(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall time and CPU time (user + system, the process and what it waited for) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--console", type=Path, default=Path(sys.executable).with_name("nnx-lint"))
    parser.add_argument("--before", type=Path, help="another nnx-lint checkout to time the same commands with")
    args = parser.parse_args()
    python = _interpreter_of(args.console)
    console = str(args.console)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "pyproject.toml").write_text("[tool.nnx-lint]\n")
        (root / "step.py").write_text(FILE)
        env_cache = root / "cache"
        os.environ["XDG_CACHE_HOME"] = str(env_cache)  # a private cache, filled by the first run below
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # the warm-up writes the bytecode (see the docstring)
        nnx_lint = {
            "nnx-lint --version": ["--version"],
            "nnx-lint check FILE (cache filled)": ["check", "step.py"],
            "nnx-lint check FILE --no-cache": ["check", "step.py", "--no-cache"],
        }
        commands: dict[str, tuple[list[str], dict[str, str] | None]] = {
            "python -c pass": ([python, "-c", "pass"], None)}
        commands.update({name: ([console, *arguments], None) for name, arguments in nnx_lint.items()})
        commands['python -c "import astroid"'] = ([python, "-c", "import astroid"], None)
        if args.before is not None:
            # The console script imports nnx_lint through sys.path first: PYTHONPATH wins over the install.
            before_env = {**os.environ, "PYTHONPATH": str(args.before.resolve()),
                          "XDG_CACHE_HOME": str(root / "cache-before")}
            commands.update({f"before: {name}": ([console, *arguments], before_env)
                             for name, arguments in nnx_lint.items()})
        for command, env in commands.values():  # warm the OS caches and fill nnx-lint's
            _timed(command, root, env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, (command, env) in commands.items():
                wall, used = _timed(command, root, env)
                times[name].append(wall)
                cpu[name].append(used)
    baseline = statistics.median(times["python -c pass"])
    cpu_baseline = statistics.median(cpu["python -c pass"])
    print(f"{args.runs} alternating runs each, median wall time; console script {console}")
    print("CPU: user + system time of the process; on a loaded machine its ratio is the steadier one")
    print(f"{'command':<46} {'median s':>9} {'min s':>7} {'x bare':>7} {'CPU s':>7} {'CPU x bare':>11}")
    for name, values in times.items():
        median, used = statistics.median(values), statistics.median(cpu[name])
        print(f"{name:<46} {median:>9.3f} {min(values):>7.3f} {median / baseline:>7.2f} {used:>7.3f} "
              f"{used / cpu_baseline:>11.2f}")


if __name__ == "__main__":
    main()
