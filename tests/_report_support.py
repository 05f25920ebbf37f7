"""Helpers of the HTML report's tests: a project with findings, a hostile name and a gate
report, and the report and JSON output of one run over it."""
from __future__ import annotations

import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path

from nnx_lint.cli import main

REPO = Path(__file__).resolve().parent.parent
#: A real gate report of tests/fixtures_gate/project (how it was made: tests/fixtures_html/README.md).
GATE_REPORT = REPO / "tests" / "fixtures_html" / "gate_report.json"
#: A file name and an identifier that would run script if they became markup.
HOSTILE = "<img src=x onerror=alert(1)>"
HOSTILE_SOURCE = f'''\
from flax import nnx


class TiedLM(nnx.Module):
    def __init__(self, rngs):
        self.embed = nnx.Embed(4, 4, rngs=rngs)
        setattr(self, "{HOSTILE}", self.embed.embedding)
'''


def make_project(root: Path) -> Path:
    """The gate fixture's project, the README's example and a file with a hostile name and
    identifier (its NNX101 message quotes the ``setattr`` name)."""
    shutil.copytree(REPO / "tests" / "fixtures_gate" / "project", root)
    shutil.copy(REPO / "docs" / "example" / "train.py", root / "train.py")
    (root / f"{HOSTILE}.py").write_text(HOSTILE_SOURCE)
    return root


@contextmanager
def inside(directory: Path):
    """Run with ``directory`` as the current directory (the project root of ``--isolated``)."""
    before = os.getcwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(before)


def check(project: Path, *arguments: str) -> int:
    """``nnx-lint check . --isolated --no-cache -j 1 ARGUMENTS`` in ``project`` (one process: the
    project is small, and the machine may be shared)."""
    with inside(project):
        return main(["check", ".", "--isolated", "--no-cache", "-j", "1", *arguments])


def report_run(project: Path, directory: Path, *arguments: str) -> tuple[Path, list[dict]]:
    """The HTML report of a run (with the gate's report) and the JSON output of the same run."""
    assert check(project, "--output-format", "html", "-o", str(directory), "--gate-report", str(GATE_REPORT),
                 *arguments) == 1
    return directory, json_output(project)


def json_output(project: Path, *arguments: str) -> list[dict]:
    """The JSON output of the same run, as a list of findings."""
    out = project.parent / "output.json"
    check(project, "--output-format", "json", "-o", str(out), *arguments)
    return json.loads(out.read_text())


def expected_totals(findings: list[dict]) -> dict[str, int]:
    """The index's totals, counted here from the JSON output (not by the report's code)."""
    proven = [f for f in findings if f.get("proof") != "unproven"]
    fixed = [f["fix"] for f in findings if f["fix"] and f["fix"]["edits"]]
    return {
        "raises": sum(f["kind"] == "raises" for f in proven),
        "silent": sum(f["kind"] == "silent" for f in proven),
        "confirmed": sum((f.get("confirmation") or {}).get("status") in ("confirmed", "pattern-confirmed")
                         for f in findings),
        "proven": len(proven),
        "unproven": len(findings) - len(proven),
        "fixable_safe": sum(fix["applicability"] == "safe" for fix in fixed),
        "fixable_unsafe": sum(fix["applicability"] == "unsafe" for fix in fixed),
        "linter": sum(f["kind"] == "linter" for f in proven),
        "advisory": sum(f["kind"] == "advisory" for f in proven),
    }
