"""``nnx-lint check`` and its workers end without the interpreter's teardown
(:mod:`nnx_lint.base.fast_exit`): whatever they wrote must still arrive whole, with the
exit status the run decided."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from _support import REPO

from nnx_lint.engine.workers.process import WorkerProcess

#: One NNX301 per function: ``model.count`` changed under ``nnx.grad``.
STEP = '''
def loss_{n}(model):
    model.count += 1
    return 0.0


@nnx.jit
def step_{n}(model, x):
    return nnx.grad(loss_{n})(model)
'''
COUNT = 40


def _check(root, *args):
    # Buffered, as output to a pipe usually is (the environment may say otherwise).
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "nnx_lint.cli", "check", "--no-cache", ".", *args], cwd=root,
                          capture_output=True, text=True, env=env, timeout=300)


def _project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    (tmp_path / "model.py").write_text("from flax import nnx\n" + "".join(STEP.format(n=n) for n in range(COUNT)))
    return tmp_path


@pytest.mark.slow
def test_a_piped_report_arrives_whole_with_the_run_s_exit_status(tmp_path):
    # A pipe is block-buffered: without the flush before the exit, the report's tail (or all
    # of it) would be lost.
    done = _check(_project(tmp_path), "--output-format", "json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert [d["code"] for d in report] == ["NNX301"] * COUNT
    assert all("fix" in d for d in report), "the fix worker answered before the exit"


def test_a_clean_run_exits_0_and_prints_its_summary(tmp_path):
    (tmp_path / "clean.py").write_text("from flax import nnx\n\nx = nnx.Rngs(0)\n")
    done = _check(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("All checks passed!") and done.stdout.endswith("1 file checked)\n")


@pytest.mark.slow
def test_the_output_file_is_complete(tmp_path):
    project = _project(tmp_path)
    done = _check(project, "--output-format", "json", "-o", "report.json")
    assert done.returncode == 1, done.stderr
    assert len(json.loads((project / "report.json").read_text())) == COUNT


def test_a_worker_whose_input_closes_exits_0(tmp_path):
    worker = WorkerProcess("lint", [str(tmp_path)])
    process = worker.process
    worker.close()
    assert process.returncode == 0
