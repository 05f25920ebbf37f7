"""Run one program text against tree_runtime or flax.nnx (Tree Mode) and
compare what happened: the API the differential suite and the confirmer use.

A *program* is a function ``fn(nnx)`` that uses only ``nnx.<name>`` (plus jax,
optax) and returns an observation.  Its *outcome* is ``("ok", observation)``
or ``("raises", error_category(exc))``.

>>> import jax.numpy as jnp
>>> def prog(nnx):
...   return nnx.jit(lambda m: m(jnp.ones((1, 2))))(nnx.Linear(2, 1, rngs=nnx.Rngs(0))).shape
>>> run_on_runtime(prog)
('ok', (1, 1))

This module imports flax only inside :func:`run_on_flax`.
"""

from __future__ import annotations

import typing as tp

import jax
import numpy as np

from ._errors import error_category


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
    import tree_runtime

    return run_program(fn, tree_runtime, traced=traced)


def run_on_flax(fn: tp.Callable, *, traced: bool = False) -> tuple[str, tp.Any]:
    """Run against ``flax.nnx`` with graph mode and graph updates off
    (transforms fix the mode at creation, so programs create them inside)."""
    from flax import nnx

    with nnx.set_graph_mode(False), nnx.set_graph_updates(False):
        return run_program(fn, nnx, traced=traced)


def normalize(obs: tp.Any) -> tp.Any:
    """Observation in comparable form: arrays as numpy, types by name."""
    if isinstance(obs, type):
        return ("type", obs.__name__)
    if isinstance(obs, (list, tuple)):
        return [normalize(x) for x in obs]
    if isinstance(obs, dict):
        return {k: normalize(v) for k, v in obs.items()}
    if isinstance(obs, (jax.Array, np.ndarray, np.generic)):
        return np.asarray(obs)
    if isinstance(obs, float):
        return np.asarray(obs)
    return obs


def assert_same(a: tp.Any, b: tp.Any, path: str = "obs") -> None:
    """Observations agree: arrays to rtol 1e-5, everything else exactly."""
    a, b = normalize(a), normalize(b)
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
