"""Tree Mode ``nnx.custom_vjp`` as the FLIP specifies it: ``bwd`` receives the
output cotangent ``g`` exactly like ``jax.custom_vjp`` and returns tangents of
the inputs' own types (a Module input gets a Module-typed tangent); updating a
differentiable Variable inside the function (or ``fwd``) raises
``CustomVjpUpdateError``.  flax 0.12.8 does not enforce that last rule
(catalogue E3/E4): this is a documented deviation.
"""

from __future__ import annotations

import functools
import re
import typing as tp

import jax
import jax.numpy as jnp

from ._core import apply_updates, changed_variables, check_no_aliases, check_tree_mode, copy_args, snapshot
from ._errors import CustomVjpUpdateError
from ._prefix_filters import reject_prefix_filters


def _run(fn: tp.Callable, args: tuple, nondiff_argnums: tuple, is_fwd: bool = False) -> tuple[tp.Any, dict]:
    args = copy_args(args)
    current, before = snapshot({"args": args})
    out = fn(*args)
    # fwd may keep inputs in its residual; only the primal output is checked.
    check_no_aliases("custom_vjp", **current, out=out[0] if is_fwd else out)
    updates = changed_variables(current, before)
    for path, variable in updates.items():
        index = int(re.match(r"\['args'\]\[(\d+)\]", path).group(1))
        if index not in nondiff_argnums and jnp.issubdtype(variable.dtype, jnp.inexact):
            raise CustomVjpUpdateError(path)
    return out, updates


class custom_vjp:
    """Tree Mode ``nnx.custom_vjp``.

    >>> import tree_runtime as nnx, jax, jax.numpy as jnp
    >>> class Foo(nnx.Module):
    ...   def __init__(self):
    ...     self.x = nnx.Param(jnp.array(1.0))
    >>> @nnx.custom_vjp
    ... def f(m):
    ...   return jnp.sin(m.x[...])
    >>> def f_fwd(m):
    ...   return f(m), jnp.cos(m.x[...])
    >>> def f_bwd(cos_x, g):
    ...   m_g = jax.tree.map(jnp.zeros_like, Foo()); m_g.x[...] = cos_x * g * 10
    ...   return (m_g,)
    >>> f.defvjp(f_fwd, f_bwd)
    >>> round(float(nnx.grad(f)(Foo()).x[...]), 3)
    5.403
    """

    def __init__(self, fun: tp.Callable, nondiff_argnums: tuple[int, ...] = (), graph=None, graph_updates=None):
        check_tree_mode("custom_vjp", graph, graph_updates)
        reject_prefix_filters("custom_vjp", nondiff_argnums=nondiff_argnums)
        functools.update_wrapper(self, fun)
        self.fun, self.nondiff_argnums = fun, tuple(nondiff_argnums)
        self.jax_fn = jax.custom_vjp(lambda *args: _run(fun, args, self.nondiff_argnums),
                                     nondiff_argnums=self.nondiff_argnums)

    def __new__(cls, fun=None, **kwargs):
        if fun is None:
            return functools.partial(cls, **kwargs)
        return super().__new__(cls)

    def defvjp(self, fwd: tp.Callable, bwd: tp.Callable, symbolic_zeros: bool = False) -> None:
        """Register ``fwd(*args) -> (out, residual)`` and ``bwd(*nondiff, residual, g) -> tangents``."""

        def jax_fwd(*args):
            (out, residual), updates = _run(fwd, args, self.nondiff_argnums, is_fwd=True)
            return (out, updates), residual

        def jax_bwd(*args):
            *nondiff, residual, (out_g, _updates_g) = args
            # Updates of non-differentiable Variables carry no useful cotangent.
            return bwd(*nondiff, residual, out_g)

        self.jax_fn.defvjp(jax_fwd, jax_bwd, symbolic_zeros=symbolic_zeros)

    def __call__(self, *args):
        variables = check_no_aliases("custom_vjp", args=args)
        out, updates = self.jax_fn(*args)
        apply_updates(variables, updates)
        return out
