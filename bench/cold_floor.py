"""Where a cold ``-j 1`` run goes, in one process: ``ast.parse`` of the same files first, then
the run with timers around every astroid build and the garbage collector.

    python bench/cold_floor.py CHECKOUT check DIR --no-cache -j 1

CHECKOUT is the nnx-lint tree to import (this one, or a baseline checkout); DIR is also the
directory whose Python files ``ast.parse`` reads. Prints each part as a ratio to ``ast.parse``
(measured in the same process, just before, so that a busy machine slows both alike).
"""
from __future__ import annotations

import ast
import collections
import gc
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, sys.argv[1])
t0 = time.perf_counter()
from nnx_lint import cli
from nnx_lint.analysis import parsing  # noqa: E402
from nnx_lint.engine.config import Settings  # noqa: E402
from nnx_lint.engine.runner import discover  # noqa: E402

original_build = parsing.build
spent: collections.Counter = collections.Counter()


def timed_build(*args, **kwargs):
    start = time.perf_counter()
    try:
        return original_build(*args, **kwargs)
    finally:
        spent["build"] += time.perf_counter() - start
        spent["builds"] += 1


parsing.build = timed_build
collector = [0.0, 0.0]


def on_collection(phase, info) -> None:
    if phase == "start":
        collector[1] = time.perf_counter()
    else:
        collector[0] += time.perf_counter() - collector[1]


gc.callbacks.append(on_collection)
target = Path(next(a for a in sys.argv[3:] if not a.startswith("-")))
files = [f for f in discover([target], Settings(root=target)) if f.suffix == ".py"]
parse = float("inf")
for _ in range(2):
    start = time.perf_counter()
    for file in files:
        try:
            ast.parse(file.read_bytes())
        except (SyntaxError, ValueError, RecursionError):
            pass
    parse = min(parse, time.perf_counter() - start)
start = time.perf_counter()
from astroid.builder import AstroidBuilder  # noqa: E402

AstroidBuilder(parsing.manager())  # astroid's bootstrap (the builtins module), once per process
bootstrap = time.perf_counter() - start
start, cpu = time.perf_counter(), time.process_time()
try:
    cli.main(sys.argv[2:])
except SystemExit:
    pass
wall = time.perf_counter() - start
print(f"ast.parse {parse:.2f} s; run {wall / parse:.2f}x (CPU {time.process_time() - cpu:.2f} s), "
      f"astroid builds {spent['build'] / parse:.2f}x ({spent['builds']} trees), "
      f"garbage collection {collector[0] / parse:.2f}x, astroid bootstrap {bootstrap / parse:.2f}x; "
      f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB", file=sys.stderr)
