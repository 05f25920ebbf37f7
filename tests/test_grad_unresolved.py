"""The gradient of an ``nnx.grad`` whose differentiated arguments the analysis cannot name.

``grad_fn(*inputs)`` or ``nnx.grad(loss, argnums=argnums)`` with a non-literal ``argnums``:
which arguments are differentiated is unknown, so NNX403 cannot prove that the gradient is a
Module. Audit mode (``--strict``) says so where the gradient is used as a State; by default
nothing is reported. Run with flax 0.12.8 in both modes (the pattern of flax's
``transforms_test.py::test_multiple_graph_nodes``, opt-ins removed): graph mode passes, Tree Mode
raises ``TypeError: argument of type 'Linear' is not iterable`` at ``'kernel' in grads_m1``.

Also here: a transform chosen by a conditional expression (``nnx.compat.grad(f) if graph else
nnx.grad(f)``) is the one the flip changes.
"""
from __future__ import annotations

import pytest

from nnx_lint.base.diagnostic import shown
from nnx_lint.engine.registry import all_rules
from nnx_lint.engine.walk import lint_source

_STARRED = """\
import jax, jax.numpy as jnp
from flax import nnx


def run(loss_fn, argnums):
    m1 = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    m2 = nnx.Linear(3, 3, rngs=nnx.Rngs(1))
    grad_fn = nnx.grad(loss_fn, argnums=ARGNUMS)
    inputs = [jnp.ones((1, 2)), jnp.ones((1, 3))]
    inputs.insert(argnums[0], m1)
    inputs.insert(argnums[1], m2)
    grads_m1, grads_m2 = grad_fn(CALL)
    assert 'kernel' in grads_m1
    return grads_m2['bias']
"""


def _lint(source: str, strict: bool) -> list[tuple[str, int, str]]:
    found = shown(lint_source(source, "train.py", all_rules(), strict=True), strict)
    return [(d.code, d.line, d.message) for d in found if d.kind != "linter"]


@pytest.mark.parametrize(("argnums", "call", "reason"), [
    ("argnums", "*inputs", "passed as `*inputs`"),
    ("(0, 1)", "*inputs", "passed as `*inputs`"),
    ("argnums", "m1, m2, inputs[0], inputs[1]", "`argnums` is not a literal"),
])
def test_a_state_use_of_an_unresolved_gradient_is_unproven(argnums, call, reason) -> None:
    source = _STARRED.replace("ARGNUMS", argnums).replace("CALL", call)
    assert _lint(source, strict=False) == []
    found = _lint(source, strict=True)
    assert [(code, line) for code, line, _message in found] == [("NNX403", 13), ("NNX403", 14)]
    assert all(message.startswith("unproven: ") and reason in message for _code, _line, message in found)
    assert "`'kernel' in grads_m1`" in found[0][2] and "`grads_m2['bias']`" in found[1][2]


@pytest.mark.parametrize(("argnums", "call"), [
    ("nnx.DiffState(0, ...)", "m1, m2"),  # a prefix filter: the prefix-filter rules report it
    ("argnums", "nnx.state(m1), nnx.state(m2)"),  # no argument can be a Module
])
def test_no_unproven_finding_where_the_arguments_cannot_be_modules_or_a_filter_comes_first(argnums, call) -> None:
    source = _STARRED.replace("ARGNUMS", argnums).replace("CALL", call)
    assert [f for f in _lint(source, strict=True) if f[0] == "NNX403"] == []


_CHOSEN = """\
import jax, jax.numpy as jnp
from flax import nnx


def run(graph_updates: bool):
    m1 = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    grad_fn = CHOICE
    grads = grad_fn(m1, jnp.ones((1, 2)))
    return grads['kernel']
"""
_LOSS = "lambda m, x: jnp.mean(m(x))"


@pytest.mark.parametrize(("choice", "flagged"), [
    (f"nnx.compat.grad({_LOSS}) if graph_updates else nnx.grad({_LOSS})", True),
    (f"nnx.grad({_LOSS}) if graph_updates else nnx.compat.grad({_LOSS})", True),
    (f"nnx.grad({_LOSS}) if graph_updates else jax.grad({_LOSS})", True),
    (f"nnx.compat.grad({_LOSS}) if graph_updates else nnx.compat.grad({_LOSS})", False),  # graph mode kept
    (f"nnx.grad({_LOSS}) if graph_updates else nnx.vmap({_LOSS})", False),  # not one transform
    (f"nnx.grad({_LOSS}) if graph_updates else make_grad()", False),  # the other branch is unknown
])
def test_a_transform_chosen_by_a_conditional_expression(choice, flagged) -> None:
    found = _lint(_CHOSEN.replace("CHOICE", choice), strict=False)
    # (NNX901 reports each `nnx.compat` opt-in itself.)
    assert [(code, line) for code, line, _message in found if code != "NNX901"] == ([("NNX403", 9)] if flagged else [])


_BOUND = """\
import functools
import jax.numpy as jnp
from flax import nnx


class Noisy(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(2, 3, rngs=rngs)
        self.rngs = rngs

    def __call__(self, x):
        return self.linear(x)


def train_step(model, x):
    def loss_fn(model):
        return jnp.mean(model(x))
    return nnx.value_and_grad(loss_fn)(model)


model = MODEL
step = BIND(train_step, model)
"""


@pytest.mark.parametrize("bind", ["nnx.jit_partial", "nnx.cached_partial", "functools.partial"])
def test_arguments_bound_by_a_partial_reach_the_function_parameters(bind) -> None:
    """`nnx.jit_partial(train_step, model)` passes `model` as `train_step`'s first argument: the
    class of what it binds is the parameter's, as for a call. An `nnx.Linear` holds no RNG state
    (no finding, not even unproven); a Module storing its `Rngs` is NNX401's TypeError."""
    plain = _BOUND.replace("MODEL", "nnx.Linear(2, 3, rngs=nnx.Rngs(0))").replace("BIND", bind)
    assert [f for f in _lint(plain, strict=True) if f[0] == "NNX401"] == []
    noisy = _BOUND.replace("MODEL", "Noisy(nnx.Rngs(0))").replace("BIND", bind)
    found = [(code, line) for code, line, message in _lint(noisy, strict=False) if code == "NNX401"]
    assert found == [("NNX401", 18)]  # the `nnx.value_and_grad(loss_fn)(model)` line
