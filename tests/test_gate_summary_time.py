"""The gate's summary time is the whole gate's, its lint included (issue 45, "Messages"): run as a
user runs it, the real ``nnx-lint gate`` on a tiny project whose tests never import flax."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

#: Linted in the gate's process (astroid, the rules and the analysis): seconds, next to tests that
#: take about as long to run, so that a total without the lint falls short of the parts.
BLOCK = """

class Block{n}(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(2, 2, rngs=rngs)
        self.count = 0


@nnx.jit
def step{n}(block, x):
    block.count = block.count + 1
    return block.linear(x)
"""
#: Twenty classes and transformed steps per module (200 one-class modules took under a second once
#: the analysis got faster).
MODEL = "from flax import nnx\n" + "".join(BLOCK.replace("{n}", str(n)) for n in range(20))
LINT_ENDED = re.compile(r"^nnx-lint gate: lint: ended, .* \((\d+):(\d\d) elapsed\)$", re.MULTILINE)


@pytest.mark.slow
def test_the_summary_time_includes_the_lint(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\npython_files = check_*.py\n")
    (tmp_path / "check_ok.py").write_text("def test_ok():\n    pass\n")
    # Enough code that the lint takes whole seconds even on an idle machine (60, then 200, one-class
    # modules came to take under one on two idle cores), each module its own text so that no result
    # is shared between them.
    for number in range(200):
        (tmp_path / f"model_{number}.py").write_text(f"# model {number}\n" + MODEL)
    done = subprocess.run([str(Path(sys.executable).with_name("nnx-lint")), "gate", ".", "--output-format", "json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr  # no test breaks
    report = json.loads(done.stdout)
    assert report["summary"]["static_findings"] >= 1, report["summary"]  # the models were analysed
    lint_ended = LINT_ENDED.search(done.stderr)
    assert lint_ended is not None, done.stderr
    # The progress clock starts with the lint: when it ended, at least these whole seconds had gone.
    lint_seconds = int(lint_ended[1]) * 60 + int(lint_ended[2])
    assert lint_seconds >= 1, done.stderr  # else this project does not tell the two totals apart
    runs = sum(run["elapsed"] for run in report["runs"].values())
    # Both times are rounded to 0.1 s in the report.
    assert report["summary"]["elapsed"] >= runs + lint_seconds - 0.2, (report["summary"], report["runs"], done.stderr)
