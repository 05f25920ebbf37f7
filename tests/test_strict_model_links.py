"""Audit mode (``nnx-lint check --strict``) reads the object-flow model: where a model-based rule's
finding hangs on an object the model did not see made, the unproven diagnostic names that link
(the parameter no analysed caller passes), and the default run stays silent there."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from _support import REPO

SOURCE = '''\
from flax import nnx


def accumulate(tracker, steps):
    def body(i, t):
        t.seen = t.seen + 1.0
        return t

    nnx.fori_loop(0, steps, body, tracker)
    return tracker.seen


def print_summary(model, batch):
    print(nnx.tabulate(model, batch, True))
'''


def _check(cwd: Path, *options: str) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "nnx_lint.cli", "check", "train.py", "--no-cache",
                           "--select", "NNX309,NNX711", "--output-format", "json", *options],
                          cwd=cwd, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return json.loads(done.stdout)


def test_strict_names_the_unknown_link(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    assert _check(tmp_path) == []
    found = {d["code"]: d for d in _check(tmp_path, "--strict")}
    assert set(found) == {"NNX309", "NNX711"}
    assert all(d["proof"] == "unproven" for d in found.values())
    assert found["NNX309"]["location"]["row"] == 10
    assert "the class of `t` is unknown: it comes from the parameter `tracker` of `accumulate`, which no " \
           "analysed caller passes" in found["NNX309"]["message"]
    assert "the class of `model` is unknown: it comes from the parameter `model` of `print_summary`" \
        in found["NNX711"]["message"]
