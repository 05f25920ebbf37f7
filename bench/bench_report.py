"""The HTML report's cost against the lint of the same run, and how fast its index opens.

    python bench/bench_report.py PATH [--repeat 3] [--jobs 2]
    python bench/bench_report.py --synthetic 5000 [--repeat 3]

For PATH (a project: maxtext in bench/README.md), each of ``--repeat`` times, in a fresh
interpreter: ``nnx-lint check PATH --output-format html -o DIR`` cold (an empty cache, ``-j
JOBS``) and then warm (the same cache), timing the whole command and, inside it, the report
(:func:`nnx_lint.frontends.html_report.write_html`: the JSON objects' pages built and written;
the fixes' diffs included). The lint time of the run is the rest. The target: the report
costs at most 0.3 x the lint time.

``--synthetic N`` lints a generated project of N/5 copies of docs/example/train.py (5 findings
each, in 20 directories), writes its report, then opens the index and the largest file page in
Debian's chromium (playwright) and reports the browser's load time (navigation start to the
load event), the best of ``--repeat``.

Machines here are shared and noisy: only ratios from one run mean anything.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: Run in a fresh interpreter: the check, with the report step timed from inside.
_DRIVER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import nnx_lint.frontends.html_report as html_report
from nnx_lint.cli import main

spent = []
write_html = html_report.write_html
def timed(*args, **kwargs):
    start = time.perf_counter()
    try:
        return write_html(*args, **kwargs)
    finally:
        spent.append(time.perf_counter() - start)
html_report.write_html = timed
start = time.perf_counter()
status = main(sys.argv[2:])
total = time.perf_counter() - start
print(json.dumps({"status": status, "total": total, "report": sum(spent)}))
"""


def timed_check(arguments: list[str], cwd: Path) -> dict:
    """``nnx-lint check ARGUMENTS`` in a fresh interpreter: its total and report times."""
    done = subprocess.run([sys.executable, "-c", _DRIVER, str(REPO), "check", *arguments], cwd=cwd,
                          capture_output=True, text=True, check=False)
    if done.returncode not in (0,):
        raise SystemExit(f"the check failed ({done.returncode}):\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if result["status"] not in (0, 1):
        raise SystemExit(f"nnx-lint exited {result['status']}:\n{done.stderr[-2000:]}")
    return result


def measure(path: Path, repeat: int, jobs: int) -> dict:
    """Best cold and warm runs (by total time) with their report and lint times."""
    rows: dict[str, list[dict]] = {"cold": [], "warm": []}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as scratch:
            cache, out = Path(scratch) / "cache", Path(scratch) / "report"
            common = [str(path), "--output-format", "html", "-o", str(out), "--cache-dir", str(cache), "-j", str(jobs),
                      "-q"]
            for kind in ("cold", "warm"):
                rows[kind].append(timed_check(common, path))
            findings = len(list((out / "files").glob("*.html")))
    best = {kind: min(found, key=lambda row: row["total"]) for kind, found in rows.items()}
    for row in best.values():
        row["lint"] = row["total"] - row["report"]
        row["ratio"] = row["report"] / row["lint"]
    best["file_pages"] = findings
    return best


def synthetic_project(directory: Path, findings: int) -> Path:
    """N/5 copies of docs/example/train.py in 20 directories."""
    source = (REPO / "docs" / "example" / "train.py").read_text()
    for number in range(max(1, findings // 5)):
        folder = directory / f"package_{number % 20:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"train_{number:04d}.py").write_text(source)
    return directory


def load_times(report: Path, repeat: int) -> dict[str, float]:
    """The browser's load time of the index and of the largest file page, in seconds."""
    from playwright.sync_api import sync_playwright

    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    largest = max((report / "files").glob("*.html"), key=lambda page: page.stat().st_size)
    times: dict[str, float] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=args)
        for name, page_path in (("index", report / "index.html"), ("largest file page", largest)):
            best = None
            for _ in range(repeat):
                page = browser.new_page()
                page.goto(page_path.as_uri())
                page.wait_for_load_state("load")
                seconds = page.evaluate("(() => { const n = performance.getEntriesByType('navigation')[0];"
                                        " return (n.loadEventEnd - n.startTime) / 1000; })()")
                page.close()
                best = seconds if best is None else min(best, seconds)
            times[name] = best
        browser.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--synthetic", type=int, metavar="FINDINGS")
    args = parser.parse_args()
    if args.synthetic:
        with tempfile.TemporaryDirectory() as scratch:
            project = synthetic_project(Path(scratch) / "project", args.synthetic)
            result = measure(project, args.repeat, args.jobs)
            out = Path(scratch) / "report"
            timed_check([str(project), "--output-format", "html", "-o", str(out), "--no-cache", "-q",
                         "-j", str(args.jobs)], project)
            index = json.loads(subprocess.run(
                [sys.executable, "-m", "nnx_lint.cli", "check", str(project), "--output-format", "json", "--no-cache",
                 "-j", str(args.jobs), "--exit-zero"], capture_output=True, text=True, cwd=project).stdout)
            result["findings"] = len(index)
            result["index_bytes"] = (out / "index.html").stat().st_size
            result["load_seconds"] = load_times(out, args.repeat)
            shutil.rmtree(out)
    elif args.path:
        result = measure(args.path.resolve(), args.repeat, args.jobs)
    else:
        parser.error("give a PATH or --synthetic N")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
