"""Audit mode (``--strict``): where a finding hangs on a value the analysis could not
resolve, an *unproven* diagnostic says so instead of silence. Off by default; the same
switch in the CLI, ``[tool.nnx-lint] strict``, flake8 (``--nnx-strict``) and pylint
(``--nnx-strict=y``); counted apart in the summary, ``level: note`` in SARIF,
``proof: unproven`` in JSON, confidence ``INFERENCE_FAILURE`` in pylint; never fixed or
reproduced (nothing is known to run).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _support import REPO

SOURCE = '''\
from flax import nnx


def loss(model, x):
    return model(x).sum()


def train_step(model, x):
    return nnx.grad(loss)(model, x)


def generic(model: nnx.Module, x):
    return nnx.grad(loss)(model, x)
'''
UNPROVEN_LINES = {9, 13}


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(SOURCE)
    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    return tmp_path


def _run(cwd: Path, *command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", *command], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=300)


def _check_json(cwd: Path, *options: str) -> list[dict]:
    done = _run(cwd, "nnx_lint.cli", "check", "train.py", "--no-cache", "--output-format", "json", *options)
    return json.loads(done.stdout)


@pytest.mark.slow
def test_silent_by_default_and_unproven_in_audit_mode(project):
    assert _check_json(project) == []
    found = _check_json(project, "--strict")
    assert {(d["code"], d["location"]["row"]) for d in found} == {("NNX401", line) for line in UNPROVEN_LINES}
    assert all(d["proof"] == "unproven" and d["fix"] is None for d in found)
    # Each names the value and why it could not be resolved.
    messages = sorted(d["message"] for d in found)
    assert all(m.startswith("unproven: ") and "`model`" in m for m in messages)
    assert "annotated only as `nnx.Module`" in messages[0] + messages[1]
    assert "the loss calls it" in messages[0] + messages[1]


@pytest.mark.slow
def test_the_config_switch_and_the_counted_apart_summary(project):
    (project / "pyproject.toml").write_text("[tool.nnx-lint]\nstrict = true\n")
    done = _run(project, "nnx_lint.cli", "check", "train.py", "--no-cache")
    assert done.returncode == 1
    assert "Found 2 diagnostics in 1 file (2 unproven; 1 file checked)." in done.stdout
    settings = _run(project, "nnx_lint.cli", "check", "train.py", "--show-settings").stdout
    assert "strict = true" in settings
    (project / "pyproject.toml").write_text("[tool.nnx-lint]\nstrict = 1\n")
    bad = _run(project, "nnx_lint.cli", "check", "train.py", "--no-cache")
    assert bad.returncode == 2 and "`strict` must be true or false" in bad.stderr


def test_sarif_level_note(project):
    done = _run(project, "nnx_lint.cli", "check", "train.py", "--no-cache", "--strict", "--output-format", "sarif")
    results = json.loads(done.stdout)["runs"][0]["results"]
    assert [r["level"] for r in results] == ["note", "note"]


@pytest.mark.slow
def test_flake8_and_pylint_switches(project):
    default = _run(project, "flake8", "--select", "NNX", "train.py")
    assert default.stdout == ""
    strict = _run(project, "flake8", "--select", "NNX", "--nnx-strict", "train.py")
    assert {int(line.split(":")[1]) for line in strict.stdout.splitlines()} == UNPROVEN_LINES
    pylint = _run(project, "pylint", "--load-plugins", "nnx_lint.pylint", "--disable", "all", "--enable",
                  "grad-over-non-float-state", "--nnx-strict", "y", "--output-format", "json2", "train.py")
    messages = json.loads(pylint.stdout)["messages"]
    assert {(m["line"], m["confidence"]) for m in messages} == {(line, "INFERENCE_FAILURE") for line in UNPROVEN_LINES}


def test_unproven_findings_have_no_reproduction():
    from nnx_lint.confirmation.oracle import reproduction_for
    from nnx_lint.engine.walk import lint_bytes
    from nnx_lint.engine.registry import all_rules

    found = [d for d in lint_bytes(SOURCE.encode(), "train.py", all_rules(), strict=True) if d.proof == "unproven"]
    assert len(found) == 2
    assert all(str(reproduction_for(d)).startswith("unproven: ") for d in found)


def test_the_gate_counts_a_break_only_an_unproven_finding_matches_apart(tmp_path):
    from nnx_lint.base.diagnostic import Diagnostic
    from nnx_lint.gate.attribution import Attribution, Match
    from nnx_lint.gate.classify import Verdict
    from nnx_lint.gate.results import Frame

    def finding(proof: str) -> Diagnostic:
        return Diagnostic("NNX401", "grad-over-non-float-state", "m", str(tmp_path / "train.py"), 9, 12, 9, 30,
                          "raises", proof=proof)

    frame = Frame(str(tmp_path / "train.py"), 9, "train_step")
    verdict = Verdict("tests/test_train.py::test_step", "tree-break")
    only_unproven = Attribution(verdict, None, frame, [Match(finding("unproven"), frame, "at", True)])
    assert (only_unproven.explained, only_unproven.unproven) == (False, True)
    assert only_unproven.summary(tmp_path).startswith("unproven: NNX401 at train.py:9")
    both = Attribution(verdict, None, frame, [Match(finding("unproven"), frame, "at", True),
                                              Match(finding("proven"), frame, "at", True)])
    assert (both.explained, both.unproven) == (True, False)
    assert Attribution(verdict, None, frame).summary(tmp_path) == "unexplained"


_UNPROVEN_MARKER = re.compile(r"#\s*unproven:\s*(NNX\d{3}(?:\s*,\s*NNX\d{3})*)")


def _unproven_fixtures() -> list[Path]:
    from _support import fixture_files

    return [path for path in fixture_files() if _UNPROVEN_MARKER.search(path.read_text("utf-8", "replace"))]


@pytest.mark.parametrize("path", _unproven_fixtures(), ids=lambda p: p.name)
def test_fixture_unproven_markers(path):
    """Fixtures mark what audit mode adds with ``# unproven: NNX107``; the default run (the other
    fixture test) must not report those lines, audit mode must report exactly them as unproven."""
    from _support import FIXTURES, family_rules, fixture_family
    from nnx_lint.analysis.project import Project, module_name_for
    from nnx_lint.engine.walk import lint_bytes

    expected = {(number, code.strip()) for number, line in enumerate(path.read_text().splitlines(), 1)
                for match in _UNPROVEN_MARKER.finditer(line) for code in match.group(1).split(",")}
    module_name, root = module_name_for(path)
    project = Project([FIXTURES / fixture_family(path)])
    project.start_file(str(path), root)
    found = lint_bytes(path.read_bytes(), str(path), family_rules(fixture_family(path)), project=project,
                       module_name=module_name, strict=True)
    assert {(d.line, d.code) for d in found if d.proof == "unproven"} == expected
    assert all(d.message.startswith("unproven: ") for d in found if d.proof == "unproven")


OUTSIDE = '''\
import optax
from flax import nnx
from trainer_lib import make_optimizer


def train_step(model, optimizer, x):
    return model(x)


def main(x):
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    optimizer = make_optimizer(model, optax.sgd(0.1))
    return nnx.jit(train_step)(model, optimizer, x)
'''


@pytest.mark.slow
def test_aliasing_through_a_call_from_outside_the_project_is_unproven(tmp_path):
    (tmp_path / "train.py").write_text(OUTSIDE)
    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    assert _check_json(tmp_path) == []
    found = _check_json(tmp_path, "--strict")
    assert [(d["code"], d["location"]["row"], d["proof"]) for d in found] == [("NNX107", 13, "unproven")]
    message = found[0]["message"]
    assert "`optimizer`" in message and "`make_optimizer(...)`, imported from outside the project" in message
    assert "from `model` (args[0])" in message
    assert found[0]["facts"]["transform"] == "jit"


FACTORY = '''\
from flax import nnx


def loss(model, x):
    return model(x).sum()


class Noisy(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(2, 2, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)


class Test:
    def _make(self, n):
        model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        return model, n

    def _make_noisy(self, n):
        return Noisy(nnx.Rngs(0)), n

    def test_plain(self):
        model, n = self._make(3)
        return nnx.grad(loss)(model, n)

    def test_noisy(self):
        model, n = self._make_noisy(3)
        return nnx.grad(loss)(model, n)
'''


def test_a_method_factory_resolves_what_was_unproven(tmp_path):
    """The tunix pattern: `model, x, y = self._make_model_and_data(B)`. The class model follows the
    method, so the plain model is proven safe (nothing in audit mode either) and the one holding
    Dropout RNG state is a proven finding."""
    (tmp_path / "train.py").write_text(FACTORY)
    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    found = _check_json(tmp_path, "--strict")
    assert [(d["code"], d["location"]["row"], d.get("proof")) for d in found] == [("NNX401", 28, None)]
