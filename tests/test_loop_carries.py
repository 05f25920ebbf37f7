"""Loop carries in the object-flow model (``nnx_lint/analysis/objects/carries.py``) and NNX309,
which asks it: the result of ``nnx.fori_loop`` / ``while_loop`` / an ``nnx.scan`` function is a
fresh object in Tree Mode, so a reference taken before the loop misses what the body stores on
the carry outside Variables. The fixture is run with flax in both modes (slow)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from astroid import nodes

from _support import file_context
from nnx_lint.analysis.objects import loop_records, object_model, stale_carry_reads

FIXTURE = Path(__file__).parent / "fixtures" / "graph_updates" / "NNX309_stale_loop_carry.py"

PROGRAM = """
import jax
import jax.numpy as jnp
from flax import nnx

class Stats(nnx.Module):
    def __init__(self):
        self.total = jnp.zeros(())

class Model(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.zeros(()))
        self.stats = Stats()

def body(i, m):
    m.stats.total = m.stats.total + 1.0
    return m

def run():
    model = Model()
    stats = model.stats
    result = nnx.fori_loop(0, 3, body, model)
    pair = nnx.fori_loop(0, 3, lambda i, c: c, (model, 1.0))
    kept = nnx.compat.fori_loop(0, 3, body, model)
    scanned, _ = nnx.scan(lambda m, x: (m, x), in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))(model, jnp.ones(3))
    check = (result, model, pair[0], kept, scanned, stats)
    return check
"""


def _check_tuple(context):
    run = next(n for n in context.module.body if isinstance(n, nodes.FunctionDef) and n.name == "run")
    return next(s.value for s in run.body if isinstance(s, nodes.Assign) and s.targets[0].as_string() == "check")


def test_a_loop_returns_a_fresh_copy_of_its_carry_and_compat_returns_the_carry(tmp_path):
    context = file_context(tmp_path, PROGRAM)
    model = object_model(context)
    result, original, first, kept, scanned, _stats = _check_tuple(context).elts
    (made,) = model.objects(original)
    (copy,) = model.objects(result)
    assert copy is not made and copy.copy_of == made and copy.definition is made.definition
    assert not model.may_alias(result, original)
    # a tuple carry comes back as a fresh tuple of fresh elements
    assert [o.copy_of for o in model.objects(first)] == [made]
    # graph mode (compat) updates the input in place and returns it
    assert model.objects(kept) == {made} and model.may_alias(kept, original)
    assert [o.copy_of for o in model.objects(scanned)] == [made]


def test_stale_reads_are_the_references_taken_before_the_loop(tmp_path):
    context = file_context(tmp_path, PROGRAM)
    model = object_model(context)
    loops = {r.node.lineno: r for r in loop_records(model)}
    first = loops[min(loops)]
    reads = stale_carry_reads(model, first)
    # `model` (passed on to the later loops) and `stats`, taken before; never `result`
    assert {r.expression.as_string() for r in reads} == {"model", "stats"}
    assert all(r.attribute == "total" and r.proven for r in reads)


def test_no_stale_read_when_the_body_only_updates_variables(tmp_path):
    context = file_context(tmp_path, PROGRAM.replace("m.stats.total = m.stats.total + 1.0", "m.w[...] += 1.0"))
    model = object_model(context)
    assert all(not stale_carry_reads(model, r) for r in loop_records(model))


def test_a_loop_inside_a_python_loop_does_not_cycle(tmp_path):
    context = file_context(tmp_path, PROGRAM.replace(
        "    result = nnx.fori_loop(0, 3, body, model)\n",
        "    for _ in range(3):\n        model = nnx.fori_loop(0, 3, body, model)\n    result = model\n"))
    model = object_model(context)
    result = _check_tuple(context).elts[0]
    # the name after the Python loop may hold the input (no iteration) or the one copy: no chain of copies
    assert len(model.objects(result)) == 2


_RUN = """
import json, runpy, sys
import jax.numpy as jnp
import optax
from flax import nnx
ns = runpy.run_path(sys.argv[1])
x = jnp.ones((4,))
m = nnx.Linear(4, 4, rngs=nnx.Rngs(0))
final, model = ns["train_epoch"](m, ns["make_optimizer"](m), jnp.ones((2, 3, 4)), jnp.zeros(()))
print(json.dumps({
    "decode": float(ns["decode"](x)[1]),
    "rollout": float(ns["rollout"]()[1]),
    "variables_only": float(ns["variables_only"](x).sum()),
    "train_epoch": [float(model.kernel[...].sum()), float(final)],
    "result_used": float(ns["result_used"](x)[1]),
    "graph_mode_kept": float(ns["graph_mode_kept"](x)),
    "plain_arrays": [float(v) for v in ns["plain_arrays"]()],
}))
"""


def _run(tree: bool) -> dict:
    env = dict(os.environ)
    flag = "false" if tree else "true"
    env.update(NNX_GRAPH_MODE=flag, NNX_GRAPH_UPDATES=flag, JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", _RUN, str(FIXTURE)], capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
def test_the_fixture_breaks_where_marked_and_its_look_alikes_do_not():
    pytest.importorskip("flax.nnx")
    pytest.importorskip("optax")
    graph, tree = _run(tree=False), _run(tree=True)
    # the two NNX309 lines: graph mode updated the input in place, Tree Mode the fresh copy only
    assert (graph["decode"], tree["decode"]) == (4.0, 0.0)
    assert (graph["rollout"], tree["rollout"]) == (3.0, 0.0)
    for look_alike in ("variables_only", "train_epoch", "result_used", "graph_mode_kept", "plain_arrays"):
        assert graph[look_alike] == tree[look_alike], look_alike
