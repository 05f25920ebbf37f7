"""Run one differential program against either implementation and compare
observations.  This is also the API a confirmer can reuse:

    from runtime_harness import run_program, run_on_flax, run_on_runtime
    outcome = run_on_runtime(prog)      # ("ok", observation) | ("raises", category)
    outcome = run_on_flax(prog)         # same, flax.nnx in Tree Mode
"""

from __future__ import annotations

import typing as tp

import jax
import numpy as np

import tree_runtime
from tree_runtime import error_category


def run_program(fn: tp.Callable, nnx: tp.Any, *, traced: bool = False) -> tuple[str, tp.Any]:
    """``("ok", observation)`` or ``("raises", category)``.  With ``traced``
    the program runs inside ``jax.make_jaxpr`` and arrays are observed as
    ``(shape, dtype)`` only."""
    try:
        if not traced:
            return "ok", fn(nnx)
        box = {}

        def body():
            box["obs"] = fn(nnx)
            return 0

        jax.make_jaxpr(body)()
        return "ok", jax.tree.map(
            lambda x: ("array", tuple(x.shape), str(x.dtype)) if hasattr(x, "shape") else x, box["obs"])
    except Exception as exc:  # the category is the observation
        return "raises", error_category(exc)


def run_on_runtime(fn: tp.Callable, *, traced: bool = False) -> tuple[str, tp.Any]:
    """Run against ``tree_runtime``."""
    return run_program(fn, tree_runtime, traced=traced)


def run_on_flax(fn: tp.Callable, *, traced: bool = False) -> tuple[str, tp.Any]:
    """Run against ``flax.nnx`` with graph mode and graph updates off
    (transforms fix the mode at creation, so programs create them inside)."""
    from flax import nnx

    with nnx.set_graph_mode(False), nnx.set_graph_updates(False):
        return run_program(fn, nnx, traced=traced)


def _normalize(obs: tp.Any) -> tp.Any:
    if isinstance(obs, type):
        return ("type", obs.__name__)
    if isinstance(obs, (list, tuple)):
        return [_normalize(x) for x in obs]
    if isinstance(obs, dict):
        return {k: _normalize(v) for k, v in obs.items()}
    if isinstance(obs, (jax.Array, np.ndarray, np.generic)):
        return np.asarray(obs)
    if isinstance(obs, float):
        return np.asarray(obs)
    return obs


def assert_same(a: tp.Any, b: tp.Any, path: str = "obs") -> None:
    """Observations agree: arrays to rtol 1e-5, everything else exactly."""
    a, b = _normalize(a), _normalize(b)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, f"{path}: shape {a.shape} != {b.shape}"
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=path)
        else:
            np.testing.assert_array_equal(a, b, err_msg=path)
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), f"{path}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            assert_same(a[k], b[k], f"{path}[{k!r}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def agrees(prog: tp.Any, traced: bool = False) -> tuple[bool, tp.Any, tp.Any]:
    """(outcomes agree?, runtime outcome, flax outcome) for one program."""
    ours, theirs = run_on_runtime(prog.fn, traced=traced), run_on_flax(prog.fn, traced=traced)
    if prog.deviation is not None:
        expected_flax = prog.deviation.flax
        flax_ok = theirs[0] == "ok" if expected_flax == "ok" else theirs == expected_flax
        return ours == prog.deviation.runtime and flax_ok, ours, theirs
    try:
        assert ours[0] == theirs[0], f"{ours} vs {theirs}"
        assert_same(ours[1], theirs[1])
        return True, ours, theirs
    except AssertionError:
        return False, ours, theirs
