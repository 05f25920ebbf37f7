"""One answer of the object-flow model reaching rules of three families (see
``tests/object_flow/one_flow_three_families.py``), and the model's ``may_alias`` held to what
flax's graph mode (which keeps identity) says with ``is`` on the sharing fixtures."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from astroid import nodes

from _support import file_context
from nnx_lint.analysis.objects import object_model, solver
from nnx_lint.analysis.project import Project
from nnx_lint.base.diagnostic import shown
from nnx_lint.engine.registry import all_rules
from nnx_lint.engine.walk import lint_bytes

#: Runs other programs end to end (see CONTRIBUTING.md): outside the quick loop.
pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
PROGRAM = HERE / "object_flow" / "one_flow_three_families.py"
FAMILIES = {"NNX105": "shared_references", "NNX401": "grad_semantics", "NNX711": "api_semantics"}


def _lint(path: Path) -> set[str]:
    rules = [rule for rule in all_rules() if rule.code in FAMILIES]
    project = Project([path.parent])
    project.start_file(str(path))
    found = shown(lint_bytes(path.read_bytes(), str(path), rules, project=project, module_name=path.stem),
                  strict=False)
    return {d.code for d in found}


def test_one_flow_reaches_three_families():
    assert _lint(PROGRAM) == set(FAMILIES)
    assert {rule.__module__.split(".")[1] for rule in all_rules() if rule.code in FAMILIES} == set(FAMILIES.values())


def test_without_that_flow_all_three_are_silent(monkeypatch):
    """The same run with the model's `x or y` flow cut: the three findings were that one answer."""
    monkeypatch.setattr(solver.Solver, "or_else", lambda self, dst, src, guard, truthy: None)
    assert _lint(PROGRAM) == set()


#: (program, lines added after it, expression pairs) whose identity flax's graph mode answers with `is`.
_ALIASING = [
    ("tests/object_flow/one_submodule_in_two_owners.py", "",
     [("tied.encoder.linear", "tied.decoder.embed"), ("untied.encoder.linear", "untied.decoder.embed"),
      ("distill.student", "distill.teacher"), ("apart.student", "apart.teacher")]),
    ("tests/fixtures/shared_references/NNX105_rngs_through_a_default_and_a_plain_holder.py",
     "_m = Model(nnx.Rngs(0))\n_f = Forked(nnx.Rngs(0))\n_s = WithSampler(nnx.Rngs(0))\n",
     [("_m.rngs", "_m.block.rngs"), ("_f.rngs", "_f.block.rngs"), ("_s.rngs", "_s.sampler.rngs")]),
]


def _graph_mode_identity(program: Path, setup: str, pairs) -> list[bool]:
    checks = "\n".join(f"print(({a}) is ({b}))" for a, b in pairs)
    source = program.read_text() + "\n" + setup + checks + "\n"
    result = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    return [line == "True" for line in result.stdout.splitlines()[-len(pairs):]]


def _model_answers(tmp_path, program: Path, setup: str, pairs) -> list[bool]:
    checks = "\n".join(f"_check_{i} = (({a}), ({b}))" for i, (a, b) in enumerate(pairs))
    context = file_context(tmp_path, program.read_text() + "\n" + setup + checks + "\n")
    model = object_model(context)
    answers = []
    for i in range(len(pairs)):
        value = next(s.value for s in context.module.body if isinstance(s, nodes.Assign)
                     and s.targets[0].as_string() == f"_check_{i}")
        answers.append(model.may_alias(value.elts[0], value.elts[1]))
    return answers


@pytest.mark.parametrize(("program", "setup", "pairs"), _ALIASING, ids=["NNX103", "NNX105"])
def test_may_alias_agrees_with_graph_mode_identity(tmp_path, program, setup, pairs):
    """Graph mode keeps object identity, so `is` there is the ground truth for aliasing."""
    pytest.importorskip("flax.nnx")
    path = HERE.parent / program
    assert _model_answers(tmp_path, path, setup, pairs) == _graph_mode_identity(path, setup, pairs)
