"""Speed of nnx-lint on a directory, as ratios against baselines measured in the same run.

    python bench/bench_lint.py PATH [--repeat 3]

Measures, each the best of ``--repeat`` runs:

1. ``ast.parse`` of every .py file (read + parse, in this process);
2. astroid building the files that pass nnx-lint's text pre-filter (default astroid
   builder, as pylint uses it; and nnx-lint's own builder, brain transforms off);
3. ``nnx-lint check`` cold (empty cache, ``-j 1`` and default jobs) and warm (nothing changed);
4. ``pylint`` with only the nnx-lint plugin enabled.

and prints the ratios the foundation issue targets. Machines here are shared and noisy:
only ratios from one run mean anything; never compare absolute times across runs.
"""
from __future__ import annotations

import argparse
import ast
import os
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


def best_of(repeat: int, function) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def run_command(command: list[str], cwd: Path, ok_codes=(0, 1)) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    if result.returncode not in ok_codes:
        raise RuntimeError(f"{command} failed ({result.returncode}): {result.stderr[-2000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-pylint", action="store_true")
    args = parser.parse_args()
    target = args.path.resolve()

    files = list(discover([target], Settings(root=target)))
    sources = {}
    for file in files:
        try:
            sources[file] = file.read_bytes()
        except OSError:
            pass
    prefiltered = {f: s for f, s in sources.items() if mentions_nnx(s, notebook=f.suffix == ".ipynb")}
    print(f"{target}: {len(files)} Python files, {len(prefiltered)} pass the pre-filter "
          f"({sum(len(s) for s in sources.values()) / 1e6:.1f} MB)")

    def parse_all():
        for file in files:
            try:
                ast.parse(file.read_bytes())
            except (SyntaxError, ValueError, RecursionError):
                pass

    def astroid_default():
        from astroid.builder import AstroidBuilder
        from astroid.manager import AstroidManager

        manager = AstroidManager()
        for file, data in prefiltered.items():
            try:
                AstroidBuilder(manager).string_build(data.decode("utf-8", "replace"), file.stem, str(file))
            except Exception:
                pass
            manager.astroid_cache.pop(file.stem, None)

    def astroid_nnx_lint_builder():
        from nnx_lint.analysis import parsing

        for file, data in prefiltered.items():
            try:
                parsing.build(data.decode("utf-8", "replace"), str(file), file.stem)
            except parsing.ParseFailure:
                pass

    cache_dir = Path(tempfile.mkdtemp(prefix="nnx-lint-bench-"))
    lint = [sys.executable, "-m", "nnx_lint.cli", "check", str(target), "--select", "NNX", "--exit-zero"]

    def cold_serial():
        shutil.rmtree(cache_dir, ignore_errors=True)
        run_command([*lint, "-j", "1", "--cache-dir", str(cache_dir)], target)

    def cold_parallel():
        shutil.rmtree(cache_dir, ignore_errors=True)
        run_command([*lint, "--cache-dir", str(cache_dir)], target)

    def warm():
        run_command([*lint, "--cache-dir", str(cache_dir)], target)

    def pylint_plugin_only():
        run_command([sys.executable, "-m", "pylint", "--load-plugins=nnx_lint.pylint", "--disable=all",
                     "--enable=nnx", "--persistent=n", "--score=n", "--jobs=1", str(target)], target,
                    ok_codes=range(32))  # pylint's exit status is a bit field of message categories

    timings = {
        "ast.parse, all files": best_of(args.repeat, parse_all),
        "astroid build, pre-filtered (default builder)": best_of(args.repeat, astroid_default),
        "astroid build, pre-filtered (nnx-lint builder)": best_of(args.repeat, astroid_nnx_lint_builder),
        "nnx-lint check, cold, -j 1": best_of(args.repeat, cold_serial),
        "nnx-lint check, cold, default jobs": best_of(args.repeat, cold_parallel),
    }
    warm()
    timings["nnx-lint check, warm"] = best_of(args.repeat, warm)
    if not args.skip_pylint:
        timings["pylint, nnx-lint plugin only"] = best_of(1, pylint_plugin_only)
    shutil.rmtree(cache_dir, ignore_errors=True)

    for name, seconds in timings.items():
        print(f"  {name:48s} {seconds:8.3f} s")
    parse = timings["ast.parse, all files"]
    build = timings["astroid build, pre-filtered (default builder)"]
    cold = timings["nnx-lint check, cold, -j 1"]
    print("ratios (target in brackets):")
    print(f"  cold -j1 / astroid build of pre-filtered files   {cold / build:6.2f}  [<= 1.5]")
    print(f"  cold default jobs / astroid build                {timings['nnx-lint check, cold, default jobs'] / build:6.2f}")
    if "pylint, nnx-lint plugin only" in timings:
        print(f"  cold -j1 / pylint with only the plugin           {cold / timings['pylint, nnx-lint plugin only']:6.2f}  [<= 0.25]")
    print(f"  warm / ast.parse of all files                    {timings['nnx-lint check, warm'] / parse:6.2f}  [<= 0.3]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
