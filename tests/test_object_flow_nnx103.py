"""NNX103 through the object-flow model, held to flax: each program under ``tests/object_flow/``
named here is linted, then run in graph mode and in Tree Mode (``NNX_GRAPH_MODE=false
NNX_GRAPH_UPDATES=false``). Every ``run(...)`` line prints ``ok`` or the ``ValueError``; the
lines NNX103 reports must be exactly the ones marked ``# NNX103``, which must be exactly the
ones that raise in Tree Mode, and graph mode runs them all."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from astroid import nodes

from nnx_lint.analysis import parsing
from nnx_lint.analysis.project import Project
from nnx_lint.base.diagnostic import shown
from nnx_lint.engine.registry import all_rules
from nnx_lint.engine.walk import lint_bytes

#: Runs flax in subprocesses (see CONTRIBUTING.md): outside the quick loop.
pytestmark = pytest.mark.slow

HERE = Path(__file__).parent / "object_flow"
PROGRAMS = ["one_submodule_in_two_owners.py", "teacher_may_be_the_student.py"]


def _run_lines(path: Path) -> list[int]:
    """The lines of the module-level ``run(...)`` calls, in order."""
    module = parsing.build(path.read_text(), str(path), path.stem, lambda name: False)
    return [s.lineno for s in module.body if isinstance(s, nodes.Expr) and isinstance(s.value, nodes.Call)
            and isinstance(s.value.func, nodes.Name) and s.value.func.name == "run"]


def _marked(path: Path) -> set[int]:
    return {number for number, line in enumerate(path.read_text().splitlines(), 1) if line.endswith("# NNX103")}


def _reported(path: Path) -> set[int]:
    rule = next(rule for rule in all_rules() if rule.code == "NNX103")
    project = Project([path.parent])
    project.start_file(str(path))
    found = shown(lint_bytes(path.read_bytes(), str(path), [rule], project=project, module_name=path.stem),
                  strict=False)
    return {d.line for d in found if d.code == "NNX103"}


def _raising(path: Path, tree: bool) -> set[int]:
    environment = dict(os.environ)
    environment.pop("NNX_GRAPH_MODE", None)
    environment.pop("NNX_GRAPH_UPDATES", None)
    if tree:
        environment.update(NNX_GRAPH_MODE="false", NNX_GRAPH_UPDATES="false")
    result = subprocess.run([sys.executable, str(path)], env=environment, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = _run_lines(path)
    outputs = [line for line in result.stdout.splitlines() if line == "ok" or line.startswith("ValueError")]
    assert len(outputs) == len(lines), result.stdout
    return {line for line, output in zip(lines, outputs) if output.startswith("ValueError Duplicate")}


@pytest.mark.parametrize("program", PROGRAMS)
def test_nnx103_reports_exactly_what_tree_mode_raises(program):
    pytest.importorskip("flax.nnx")
    path = HERE / program
    assert _marked(path)
    assert _reported(path) == _marked(path)
    assert _raising(path, tree=True) == _marked(path)
    assert _raising(path, tree=False) == set()
