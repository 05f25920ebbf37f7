"""Tree Mode transforms: thin wrappers over ``jax.*`` following the FLIP
pattern (see ``_core``).  Each wrapper fits on one screen.  Each rejects the
graph-mode prefix filters (``_prefix_filters``) when it is created, as flax does.
"""

from __future__ import annotations

import functools
import typing as tp

import jax
import jax.numpy as jnp

from ._core import (apply_updates, axes_by_path, changed_variables, check_no_aliases,
                    check_tree_mode, copy_args, group_by_axis, is_variable, snapshot)
from ._errors import CarryIdentityError
from ._prefix_filters import reject_prefix_filters
from ._variables import Variable


class Carry:
    """Marks the carry position in ``scan``'s ``in_axes``/``out_axes``."""


def _decorator(transform: tp.Callable, f: tp.Any, kwargs: dict) -> tp.Any:
    # `@nnx.jit` and `@nnx.jit(...)` both work, as in flax.
    return functools.partial(transform, **kwargs) if f is None else transform(f, **kwargs)


class jit:
    """Tree Mode ``nnx.jit``: Variable updates made inside are written back.

    >>> import tree_runtime as nnx, jax.numpy as jnp
    >>> counter = nnx.BatchStat(jnp.array(0))
    >>> @nnx.jit
    ... def step(c):
    ...   c[...] += 1
    >>> step(counter); step(counter); int(counter[...])
    2
    """

    def __new__(cls, fun=None, **kwargs):
        if fun is None:
            return functools.partial(cls, **kwargs)
        return super().__new__(cls)

    def __init__(self, fun, *, in_shardings=None, out_shardings=None, static_argnums=None,
                 static_argnames=None, donate_argnums=None, donate_argnames=None,
                 keep_unused=False, device=None, backend=None, inline=False,
                 graph=None, graph_updates=None):
        check_tree_mode("jit", graph, graph_updates)
        reject_prefix_filters("jit", in_shardings=in_shardings, out_shardings=out_shardings)
        functools.update_wrapper(self, fun)
        self.fun = fun
        static = {static_argnums} if isinstance(static_argnums, int) else set(static_argnums or ())
        names = {static_argnames} if isinstance(static_argnames, str) else set(static_argnames or ())
        # Static arguments are hashed, not traced: pytree=False objects may go there.
        self.traced = lambda args, kwargs: {
            "args": tuple(None if i in static or i - len(args) in static else 0 for i in range(len(args))),
            "kwargs": {k: None if k in names else 0 for k in kwargs}}

        def inner(*args, **kwargs):
            current, before = snapshot({"args": args, "kwargs": kwargs})
            out = fun(*args, **kwargs)
            check_no_aliases("jit", **current, out=out, traced=None)
            return out, changed_variables(current, before)

        self.jitted = jax.jit(inner, in_shardings=in_shardings, static_argnums=static_argnums,
                              static_argnames=static_argnames, donate_argnums=donate_argnums,
                              donate_argnames=donate_argnames, keep_unused=keep_unused,
                              device=device, backend=backend, inline=inline)

    def __call__(self, *args, **kwargs):
        variables = check_no_aliases("jit", args=args, kwargs=kwargs, traced=self.traced(args, kwargs))
        out, updates = self.jitted(*args, **kwargs)
        apply_updates(variables, updates)
        return out

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def eval_shape(self, *args, **kwargs):
        """Output shapes without running (aliasing is still checked)."""
        check_no_aliases("jit", args=args, kwargs=kwargs, traced=self.traced(args, kwargs))
        return self.jitted.eval_shape(*args, **kwargs)[0]

    def lower(self, *args, **kwargs):
        """``jax.jit(...).lower`` of the wrapped function."""
        check_no_aliases("jit", args=args, kwargs=kwargs, traced=self.traced(args, kwargs))
        return self.jitted.lower(*args, **kwargs)

    def trace(self, *args, **kwargs):
        """``jax.jit(...).trace`` of the wrapped function."""
        check_no_aliases("jit", args=args, kwargs=kwargs, traced=self.traced(args, kwargs))
        return self.jitted.trace(*args, **kwargs)


def _grad_general(f, argnums, has_aux, holomorphic, allow_int, return_value, name):
    reject_prefix_filters(name, argnums=argnums)

    def inner(*args, **kwargs):
        args, kwargs = copy_args((args, kwargs))
        current, before = snapshot({"args": args, "kwargs": kwargs})
        out = f(*args, **kwargs)
        check_no_aliases(name, **current, out=out, traced=None)
        updates = changed_variables(current, before)
        loss, aux = out if has_aux else (out, None)
        return loss, (updates, aux)

    transform = jax.value_and_grad if return_value else jax.grad
    gradded = transform(inner, argnums=argnums, has_aux=True, holomorphic=holomorphic, allow_int=allow_int)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        # Only the differentiated arguments are traced (flax: the rest pass as is).
        diff = {argnums} if isinstance(argnums, int) else set(argnums)
        traced = {"args": tuple(0 if i in diff else None for i in range(len(args))), "kwargs": None}
        variables = check_no_aliases(name, args=args, kwargs=kwargs, traced=traced)
        if return_value:
            (loss, (updates, aux)), grads = gradded(*args, **kwargs)
            result = ((loss, aux), grads) if has_aux else (loss, grads)
        else:
            grads, (updates, aux) = gradded(*args, **kwargs)
            result = (grads, aux) if has_aux else grads
        apply_updates(variables, updates)
        return result

    return wrapper


def grad(f=None, *, argnums=0, has_aux=False, holomorphic=False, allow_int=False,
         reduce_axes=(), graph=None, graph_updates=None):
    """Tree Mode ``nnx.grad``: differentiates whole arguments; gradients have the
    argument's own type (a Module gives a Module of gradients).

    >>> import tree_runtime as nnx, jax.numpy as jnp
    >>> model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
    >>> grads = nnx.grad(lambda m: m(jnp.ones((1, 2))).sum())(model)
    >>> type(grads).__name__, grads.bias[...].tolist()
    ('Linear', [1.0])
    """
    check_tree_mode("grad", graph, graph_updates)
    if f is None:
        return functools.partial(grad, argnums=argnums, has_aux=has_aux, holomorphic=holomorphic,
                                 allow_int=allow_int)
    return _grad_general(f, argnums, has_aux, holomorphic, allow_int, False, "grad")


def value_and_grad(f=None, *, argnums=0, has_aux=False, holomorphic=False, allow_int=False,
                   reduce_axes=(), graph=None, graph_updates=None):
    """Tree Mode ``nnx.value_and_grad`` (see :func:`grad`)."""
    check_tree_mode("value_and_grad", graph, graph_updates)
    if f is None:
        return functools.partial(value_and_grad, argnums=argnums, has_aux=has_aux,
                                 holomorphic=holomorphic, allow_int=allow_int)
    return _grad_general(f, argnums, has_aux, holomorphic, allow_int, True, "value_and_grad")


def vmap(f=None, *, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None,
         transform_metadata=None, graph=None, graph_updates=None):
    """Tree Mode ``nnx.vmap``: plain JAX axes; updates of mapped Variables come
    back stacked, updates of broadcast (``None``) Variables must be unbatched.
    ``transform_metadata=`` is accepted and ignored, as in flax Tree Mode.

    >>> import tree_runtime as nnx, jax
    >>> @nnx.vmap(in_axes=0, out_axes=0)
    ... def create(rngs):
    ...   return nnx.Linear(2, 3, rngs=rngs)
    >>> create(nnx.Rngs(0).split(4)).kernel.shape
    (4, 2, 3)
    """
    check_tree_mode("vmap", graph, graph_updates)
    reject_prefix_filters("vmap", in_axes=in_axes, out_axes=out_axes)
    if f is None:
        return functools.partial(vmap, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name,
                                 axis_size=axis_size, spmd_axis_name=spmd_axis_name)
    in_axes = tuple(in_axes) if isinstance(in_axes, list) else in_axes
    known = sorted({*jax.tree.leaves(in_axes, is_leaf=lambda x: x is None), 0}, key=str)

    def inner(*args, **kwargs):
        current, before = snapshot({"args": args, "kwargs": kwargs})
        out = f(*args, **kwargs)
        check_no_aliases("vmap", **current, out=out, traced=None)
        axes = axes_by_path({"args": in_axes, "kwargs": 0}, current)
        return out, group_by_axis(changed_variables(current, before), axes, known)

    vmapped = jax.vmap(inner, in_axes=in_axes, out_axes=(out_axes, known), axis_name=axis_name,
                       axis_size=axis_size, spmd_axis_name=spmd_axis_name)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        # Broadcast (None) arguments are not traced: pytree=False objects may go there.
        variables = check_no_aliases("vmap", args=args, kwargs=kwargs, traced={"args": in_axes, "kwargs": 0})
        out, updates = vmapped(*args, **kwargs)
        apply_updates(variables, *updates)
        return out

    return wrapper


def remat(f=None, *, prevent_cse=True, static_argnums=(), policy=None, graph=None, graph_updates=None):
    """Tree Mode ``nnx.remat`` (``jax.checkpoint``) with Variable write-back."""
    check_tree_mode("remat", graph, graph_updates)
    if f is None:
        return functools.partial(remat, prevent_cse=prevent_cse, static_argnums=static_argnums, policy=policy)

    def inner(*args, **kwargs):
        current, before = snapshot({"args": args, "kwargs": kwargs})
        out = f(*args, **kwargs)
        check_no_aliases("remat", **current, out=out)
        return out, changed_variables(current, before)

    checkpointed = jax.checkpoint(inner, prevent_cse=prevent_cse, static_argnums=static_argnums, policy=policy)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        variables = check_no_aliases("remat", args=args, kwargs=kwargs)
        out, updates = checkpointed(*args, **kwargs)
        apply_updates(variables, updates)
        return out

    return wrapper


def _branch(fn: tp.Callable, name: str) -> tp.Callable:
    # Every branch returns *all* input Variables so the branch outputs have the
    # same structure, as lax.cond requires; static changes are lost (C9).
    def branch(*operands):
        operands = copy_args(operands)
        current, before = snapshot({"operands": operands})
        out = fn(*operands)
        check_no_aliases(name, **current, out=out)
        return out, changed_variables(current, before, keep_all=True)

    return branch


def cond(pred, true_fun, false_fun, *operands, graph=None, graph_updates=None):
    """Tree Mode ``nnx.cond``: Variable updates in the taken branch are written back."""
    check_tree_mode("cond", graph, graph_updates)
    variables = check_no_aliases("cond", operands=operands)
    out, updates = jax.lax.cond(pred, _branch(true_fun, "cond"), _branch(false_fun, "cond"), *operands)
    apply_updates(variables, updates)
    return out


def switch(index, branches, *operands, graph=None, graph_updates=None):
    """Tree Mode ``nnx.switch`` (see :func:`cond`)."""
    check_tree_mode("switch", graph, graph_updates)
    variables = check_no_aliases("switch", operands=operands)
    out, updates = jax.lax.switch(index, [_branch(b, "switch") for b in branches], *operands)
    apply_updates(variables, updates)
    return out


def _same_variables(val_in: tp.Any, val_out: tp.Any, name: str) -> None:
    ins = [v for v in jax.tree.leaves(val_in, is_leaf=is_variable) if isinstance(v, Variable)]
    outs = [v for v in jax.tree.leaves(val_out, is_leaf=is_variable) if isinstance(v, Variable)]
    if len(ins) != len(outs) or any(a is not b for a, b in zip(ins, outs)):
        raise CarryIdentityError(name)


def _write_back_carry(init_val: tp.Any, val_out: tp.Any) -> tp.Any:
    # The caller's Variables receive the final values; the returned containers
    # are new objects (Tree Mode has no object identity to preserve).
    def write(before, after):
        if isinstance(before, Variable):
            before.update_from_state(after)
            return before
        return after

    return jax.tree.map(write, init_val, val_out, is_leaf=is_variable)


def _loop_body(body_fun: tp.Callable, name: str) -> tp.Callable:
    def body(*args):
        *index, val = copy_args(args)
        val_in = jax.tree.map(lambda x: x, val, is_leaf=is_variable)
        out = body_fun(*index, val)
        _same_variables(val_in, out, name)
        return out

    return body


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None, graph=None, graph_updates=None):
    """Tree Mode ``nnx.fori_loop``: the body updates Variables in place and
    returns the same objects; aliased inputs are rejected (FLIP; flax 0.12.8
    does not check and silently loses updates, catalogue A6).

    >>> import tree_runtime as nnx, jax.numpy as jnp
    >>> c = nnx.BatchStat(jnp.array(0.0))
    >>> def body(i, c):
    ...   c[...] += i
    ...   return c
    >>> _ = nnx.fori_loop(0, 4, body, c); float(c[...])
    6.0
    """
    check_tree_mode("fori_loop", graph, graph_updates)
    check_no_aliases("fori_loop", init_val=init_val)
    out = jax.lax.fori_loop(lower, upper, _loop_body(body_fun, "fori_loop"), init_val, unroll=unroll)
    return _write_back_carry(init_val, out)


def while_loop(cond_fun, body_fun, init_val, *, graph=None, graph_updates=None):
    """Tree Mode ``nnx.while_loop`` (see :func:`fori_loop`)."""
    check_tree_mode("while_loop", graph, graph_updates)
    check_no_aliases("while_loop", init_val=init_val)
    out = jax.lax.while_loop(cond_fun, _loop_body(body_fun, "while_loop"), init_val)
    return _write_back_carry(init_val, out)


def eval_shape(f, *args, graph=None, graph_updates=None, **kwargs):
    """Tree Mode ``nnx.eval_shape``: shapes of ``f``'s outputs; returning an
    input (``eval_shape(lambda m: m, m)``) is aliasing and raises."""
    check_tree_mode("eval_shape", graph, graph_updates)
    check_no_aliases("eval_shape", args=args, kwargs=kwargs)

    def inner(*args, **kwargs):
        args, kwargs = copy_args((args, kwargs))
        out = f(*args, **kwargs)
        check_no_aliases("eval_shape", args=args, kwargs=kwargs, out=out)
        return out

    return jax.eval_shape(inner, *args, **kwargs)


def scan(f=None, *, length=None, reverse=False, unroll=1, _split_transpose=False,
         in_axes=(Carry, 0), out_axes=(Carry, 0), transform_metadata=None,
         graph=None, graph_updates=None):
    """Tree Mode ``nnx.scan``. ``in_axes`` holds one ``Carry``, ints (scanned) or
    ``None`` (broadcast).  Broadcast Variables travel in the loop carry, so their
    updates propagate; the returned carry is a new object (catalogue C10).

    >>> import tree_runtime as nnx, jax.numpy as jnp
    >>> @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))
    ... def cumsum(total, x):
    ...   total = total + x
    ...   return total, total
    >>> cumsum(jnp.array(0.0), jnp.arange(4.0))[1].tolist()
    [0.0, 1.0, 3.0, 6.0]
    """
    check_tree_mode("scan", graph, graph_updates)
    reject_prefix_filters("scan", in_axes=in_axes, out_axes=out_axes)
    if f is None:
        return functools.partial(scan, length=length, reverse=reverse, unroll=unroll,
                                 in_axes=in_axes, out_axes=out_axes)
    in_axes = in_axes if isinstance(in_axes, tuple) else (in_axes,)
    carry_in = in_axes.index(Carry) if Carry in in_axes else None
    out_is_tuple = isinstance(out_axes, tuple)
    carry_out = out_axes.index(Carry) if out_is_tuple and Carry in out_axes else None
    scanned = lambda axis: isinstance(axis, int)  # Carry and None are not scanned

    def body(loop_carry, xs):
        carry, broadcasts = copy_args(loop_carry)
        xs = copy_args(xs)
        args = [carry if a is Carry else broadcasts[i] if a is None else xs[i] for i, a in enumerate(in_axes)]
        scanned_args = {i: args[i] for i, a in enumerate(in_axes) if scanned(a)}
        current, before = snapshot({"args": scanned_args})
        carry_vars = jax.tree.map(lambda x: x, carry, is_leaf=is_variable)
        out = f(*args)
        if carry_in is None:  # no Carry: everything the function returns is stacked
            new_carry, ys = None, out
        elif out_is_tuple:
            new_carry, ys = out[carry_out], tuple(y for i, y in enumerate(out) if i != carry_out)
        else:
            new_carry, ys = out, None
        if carry_in is not None:
            _same_variables(carry_vars, new_carry, "scan")
        check_no_aliases("scan", **current, carry=new_carry, out=ys)
        return (new_carry, broadcasts), (ys, changed_variables(current, before))

    @functools.wraps(f)
    def wrapper(*args):
        variables = check_no_aliases("scan", args=args)
        carry = args[carry_in] if carry_in is not None else None
        broadcasts = {i: x for i, (x, a) in enumerate(zip(args, in_axes)) if a is None}
        xs = {i: jax.tree.map(lambda v: jnp.moveaxis(v, a, 0), x) for i, (x, a) in enumerate(zip(args, in_axes)) if scanned(a)}
        (new_carry, new_broadcasts), (ys, updates) = jax.lax.scan(
            body, (carry, broadcasts), xs, length=length, reverse=reverse, unroll=unroll)
        # Scanned Variables come back stacked on axis 0: move to their own axis.
        axes = axes_by_path({"args": {i: a for i, a in enumerate(in_axes) if scanned(a)}},
                            {"args": {i: args[i] for i in xs}})
        apply_updates(variables, {p: jax.tree.map(lambda v: jnp.moveaxis(v, 0, axes[p]), u) for p, u in updates.items()})
        for i, x in broadcasts.items():
            _write_back_carry(x, new_broadcasts[i])
        if carry_in is None:
            return ys
        carry = _write_back_carry(carry, new_carry)
        if not out_is_tuple:
            return carry
        ys = list(ys)
        ys.insert(carry_out, carry)
        return tuple(ys)

    return wrapper


def transform_metadata(f=None, *, in_axes=0, out_axes=0, partition=None, graph=None):
    """Add/remove the ``partition`` axis name in ``out_sharding`` metadata around a
    vmapped/scanned function (the Tree Mode replacement of ``transform_metadata=``).

    >>> import tree_runtime as nnx
    >>> @nnx.vmap(in_axes=0, out_axes=0)
    ... @nnx.transform_metadata(in_axes=0, out_axes=0, partition='layers')
    ... def create(rngs):
    ...   return nnx.Linear(2, 2, rngs=rngs, kernel_metadata={'out_sharding': ('din', 'dout')})
    >>> create(nnx.Rngs(0).split(3)).kernel.out_sharding
    ('layers', 'din', 'dout')
    """
    check_tree_mode("transform_metadata", graph)
    reject_prefix_filters("transform_metadata", in_axes=in_axes, out_axes=out_axes)
    if f is None:
        return functools.partial(transform_metadata, in_axes=in_axes, out_axes=out_axes, partition=partition)

    def change_axis(tree, axes, add: bool):
        axes = axes_by_path(axes, tree)
        for path, v in jax.tree_util.tree_leaves_with_path(tree, is_leaf=is_variable):
            axis = axes[jax.tree_util.keystr(path)]
            sharding = v.get_metadata("out_sharding") if isinstance(v, Variable) else None
            if isinstance(axis, int) and sharding:
                fields = list(sharding)
                if add:
                    fields.insert(axis, partition)
                else:
                    fields.pop(axis)
                v.set_metadata(out_sharding=tuple(fields))

    @functools.wraps(f)
    def wrapper(*args):
        variables = check_no_aliases("transform_metadata", args=args)
        args = copy_args(args)
        change_axis(args, in_axes, add=False)
        current, before = snapshot({"args": args})
        out = f(*args)
        check_no_aliases("transform_metadata", **current, out=out)
        change_axis(args, in_axes, add=True)
        change_axis(out, out_axes, add=True)
        apply_updates(variables, changed_variables(current, before))
        return out

    return wrapper
