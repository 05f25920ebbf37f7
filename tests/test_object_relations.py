"""The flax relations of the object-flow model (``nnx_lint/flax_table/object_relations.py``),
checked against the installed flax by running them: each relation is what flax really does
to object identity, in graph mode (which keeps identity) and, for the loop carries, in Tree Mode."""
from __future__ import annotations

import inspect
import os
import subprocess
import sys

import pytest

from _support import resolve_dotted
from nnx_lint.flax_table import object_relations as relations

#: Runs other programs end to end (see CONTRIBUTING.md): outside the quick loop.
pytestmark = pytest.mark.slow

nnx = pytest.importorskip("flax.nnx")
jax = pytest.importorskip("jax")
optax = pytest.importorskip("optax")


class _Model(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(2, 2, rngs=rngs)


def test_every_name_is_a_flax_or_jax_callable():
    every = relations.FRESH_RNGS | set(relations.HOLDS_MODEL) | relations.FRESH_COPIES \
        | set(relations.LOOP_CARRIES) | set(relations.GRAPH_LOOP_CARRIES) | relations.SCAN_CARRIES \
        | relations.CONTAINERS | {relations.RNGS_CLASS, relations.PARTIAL}
    for name in sorted(every):
        assert callable(resolve_dotted(name)), name


def test_fresh_rngs_methods_make_an_independent_rngs():
    rngs = nnx.Rngs(0, dropout=1)
    for method in relations.FRESH_RNGS_METHODS:
        made = getattr(rngs, method)()
        assert isinstance(made, nnx.Rngs) and made is not rngs
        assert made.dropout.count is not rngs.dropout.count


@pytest.mark.parametrize("name", sorted(relations.HOLDS_MODEL))
def test_optimizers_hold_their_model_at_the_listed_field(name):
    model = _Model(nnx.Rngs(0))
    constructor = resolve_dotted(name)
    for position, keyword, field in relations.HOLDS_MODEL[name]:
        assert position == 0
        assert getattr(constructor(model, optax.sgd(0.1), wrt=nnx.Param), field) is model
        assert getattr(constructor(**{keyword: model, "tx": optax.sgd(0.1), "wrt": nnx.Param}), field) is model


def test_an_optimizer_does_not_hold_its_model():
    """flax 0.12's ``nnx.Optimizer`` keeps no reference to the model (only ``ModelAndOptimizer`` does):
    passing both is no shared reference, so the table must not list it."""
    model = _Model(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    assert all(value is not model for value in vars(optimizer).values())
    assert "flax.nnx.Optimizer" not in relations.HOLDS_MODEL


def test_fresh_copies_never_return_their_input():
    model = _Model(nnx.Rngs(0))
    assert nnx.clone(model) is not model
    graphdef, state = nnx.split(model)
    assert nnx.merge(graphdef, state) is not model


@pytest.mark.parametrize("name", sorted({**relations.LOOP_CARRIES, **relations.GRAPH_LOOP_CARRIES}))
def test_loop_carry_positions_match_the_signatures(name):
    body, carry = {**relations.LOOP_CARRIES, **relations.GRAPH_LOOP_CARRIES}[name]
    parameters = list(inspect.signature(resolve_dotted(name)).parameters)
    assert parameters[body] in ("body_fun", "f")
    assert parameters[carry] in ("init_val", "init")


_LOOP_PROGRAM = """
import jax
from flax import nnx

class Model(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(2, 2, rngs=rngs)

model = Model(nnx.Rngs(0))
result = nnx.fori_loop(0, 2, lambda i, m: m, model)
scanned, _ = nnx.scan(lambda m, x: (m, x), in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))(model, jax.numpy.ones(2))
kept = nnx.compat.fori_loop(0, 2, lambda i, m: m, model)
print(result is model, scanned is model, kept is model)
"""


@pytest.mark.parametrize(("mode", "same"), [("graph", "True True True"), ("tree", "False False True")])
def test_fori_loop_returns_a_fresh_module_in_tree_mode_only(mode, same):
    """The reason for ``copy_of``: in Tree Mode the result of a loop (``fori_loop``, a scanned
    function: :data:`SCAN_CARRIES`) is not the carried object; a ``compat`` loop
    (:data:`GRAPH_LOOP_CARRIES`) returns it in both modes."""
    environment = dict(os.environ)
    if mode == "tree":
        environment.update(NNX_GRAPH_MODE="false", NNX_GRAPH_UPDATES="false")
    result = subprocess.run([sys.executable, "-c", _LOOP_PROGRAM], env=environment, capture_output=True,
                            text=True, timeout=300)
    assert result.stdout.strip().splitlines()[-1] == same, result.stderr[-2000:]


@pytest.mark.parametrize("name", sorted(relations.CONTAINERS))
def test_containers_are_flax_classes(name):
    assert inspect.isclass(resolve_dotted(name))
