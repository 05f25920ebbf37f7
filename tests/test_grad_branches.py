"""A gradient taken with a ``DiffState`` on one branch and whole arguments on the other
(``tests/fixtures/grad_semantics/NNX401_grad_on_either_branch.py``, modelled on tunix's
``PeftTrainer``): the object-flow model keeps both arms as may flows, and the grad rules read the
plain one. The fixture is run with flax in both modes (slow)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from astroid import nodes

from _support import file_context
from nnx_lint.analysis.objects import object_model

FIXTURE = Path(__file__).parent / "fixtures" / "grad_semantics" / "NNX401_grad_on_either_branch.py"


def test_the_model_holds_both_arms_of_a_conditional_grad(tmp_path):
    context = file_context(tmp_path, FIXTURE.read_text())
    model = object_model(context)
    step = next(n for n in context.module.body if isinstance(n, nodes.FunctionDef) and n.name == "train_step")
    application = step.body[-1].value
    transforms = sorted(o.site.as_string() for o in model.objects(application.func) if o.kind == "transformed")
    assert transforms == ["nnx.grad(loss_fn)", "nnx.grad(loss_fn, argnums=nnx.DiffState(0, nnx.LoRAParam))"]


def _run(tree: bool) -> dict[str, str]:
    env = dict(os.environ)
    flag = "false" if tree else "true"
    env.update(NNX_GRAPH_MODE=flag, NNX_GRAPH_UPDATES=flag, JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, str(FIXTURE)], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(line.split(" ", 1) for line in done.stdout.splitlines()[-4:])


@pytest.mark.slow
def test_the_plain_arm_breaks_in_tree_mode_and_the_look_alikes_do_not():
    pytest.importorskip("flax.nnx")
    graph, tree = _run(tree=False), _run(tree=True)
    assert set(graph.values()) == {"ok"}
    assert tree == {"train_step": "TypeError", "peft_step": "TypeError", "float_only_step": "ok",
                    "graph_mode_step": "ok"}
