"""Every program runs against tree_runtime and flax.nnx (Tree Mode); outcomes
must agree (numbers to rtol 1e-5, errors by category), except documented
deviations, where each side must do what the deviation says."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("flax")

from runtime_deviations import agrees, assert_same, run_on_flax, run_on_runtime  # noqa: E402
from runtime_programs import PROGRAMS  # noqa: E402

warnings.filterwarnings("ignore", category=DeprecationWarning)

ORDINARY = [p for p in PROGRAMS.values() if p.deviation is None]
DEVIATIONS = [p for p in PROGRAMS.values() if p.deviation is not None]
TRACED = [p for p in PROGRAMS.values() if p.trace]


def test_enough_programs():
    assert len(PROGRAMS) >= 60


@pytest.mark.parametrize("prog", ORDINARY, ids=lambda p: p.name)
@pytest.mark.slow
def test_program_agrees(prog):
    ours, theirs = run_on_runtime(prog.fn), run_on_flax(prog.fn)
    assert ours[0] == theirs[0], f"runtime {ours} vs flax {theirs}"
    assert_same(ours[1], theirs[1])


@pytest.mark.parametrize("prog", DEVIATIONS, ids=lambda p: p.name)
@pytest.mark.slow
def test_documented_deviation(prog):
    """The runtime follows the FLIP; flax 0.12.8 does what the catalogue measured."""
    ok, ours, theirs = agrees(prog)
    assert ok, f"{prog.deviation.row}: runtime {ours} (expected {prog.deviation.runtime}), flax {theirs}"


@pytest.mark.parametrize("prog", TRACED, ids=lambda p: p.name)
@pytest.mark.slow
def test_program_agrees_under_make_jaxpr(prog):
    """The confirmer traces reproductions abstractly: errors must surface the same way."""
    ours, theirs = run_on_runtime(prog.fn, traced=True), run_on_flax(prog.fn, traced=True)
    assert ours[0] == theirs[0], f"runtime {ours} vs flax {theirs}"
    assert_same(ours[1], theirs[1])


def test_prefix_filter_errors_at_decoration_time():
    """Creating the transform raises; no call is needed (flax's timing)."""
    import tree_runtime as nnx

    with pytest.raises(nnx.PrefixFilterError):
        nnx.vmap(lambda m: m, in_axes=(nnx.StateAxes({nnx.Param: 0}),))


def test_aliasing_error_names_both_paths():
    import tree_runtime as nnx
    import jax.numpy as jnp

    class Tied(nnx.Module):
        def __init__(self):
            self.a = nnx.Param(jnp.ones(2))
            self.b = self.a

    f = nnx.jit(lambda m: m.a[...])  # decorating is fine: aliasing is a call-time error
    with pytest.raises(nnx.AliasingError) as info:
        f(Tied())
    assert info.value.paths == ("['args'][0].a", "['args'][0].b")
    assert "docs/rules/README.md (NNX1xx: shared references)" in str(info.value)
