"""``Optimizer(model, tx, wrt=...)`` over optax; its state is Variables, so
``optimizer.update(model, grads)`` inside ``nnx.jit`` is written back."""

from __future__ import annotations

import typing as tp

import jax
import jax.numpy as jnp

from ._graph import state, update
from ._pytree import Pytree, data
from ._state import State
from ._variables import OptArray, OptState, OptVariable, Variable


def _pure(tree: tp.Any) -> tp.Any:
    return jax.tree.map(lambda x: x.get_value() if isinstance(x, Variable) else x, tree,
                        is_leaf=lambda x: isinstance(x, Variable))


def _to_opt_state(tree: tp.Any) -> tp.Any:
    return jax.tree.map(
        lambda x: OptVariable(x.get_value(), **x.get_metadata()) if isinstance(x, Variable) else OptArray(x),
        tree, is_leaf=lambda x: isinstance(x, Variable))


class Optimizer(Pytree):
    """Optimizer state for the Variables of ``model`` selected by ``wrt``.

    >>> import tree_runtime as nnx, optax, jax.numpy as jnp
    >>> model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
    >>> opt = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    >>> grads = nnx.grad(lambda m: m(jnp.ones((1, 2))).sum())(model)
    >>> _ = opt.update(model, grads); model.bias[...].tolist(), int(opt.step[...])
    ([-0.10000000149011612], 1)
    """

    def __init__(self, model: tp.Any, tx: tp.Any, *, wrt: tp.Any, graph: bool | None = None):
        self.step = OptState(jnp.array(0, dtype=jnp.uint32))
        self.tx = tx
        self.opt_state = data(_to_opt_state(tx.init(state(model, wrt))))
        self.wrt = wrt

    def update(self, model: tp.Any, grads: tp.Any, /, **kwargs: tp.Any) -> tp.Any:
        """Apply one optax step; ``grads`` may be a Module or a State (filtered by ``wrt``).

        ``kwargs`` go to ``tx.update`` as they are, with Variables replaced by their values
        (optax's extra arguments, such as a linesearch's ``grad``, ``value`` and ``value_fn``).
        A gradient Module passed there stays a Module, which a linesearch cannot combine
        with the State of params: ``grad=nnx.state(grads, wrt)`` is what it needs.
        """
        import optax

        params = _pure(state(model, self.wrt))
        grad_values = _pure(state(grads, self.wrt))
        updates, new_opt_state = self.tx.update(grad_values, _pure(self.opt_state), params, **_pure(kwargs))
        update(model, State(optax.apply_updates(params, updates)))
        # Write the new optimizer state into the existing OptState Variables.
        for var, value in zip(jax.tree.leaves(self.opt_state, is_leaf=lambda x: isinstance(x, Variable)),
                              jax.tree.leaves(new_opt_state)):
            var.set_value(value)
        self.step[...] = self.step[...] + 1
        return updates


class ModelAndOptimizer(Optimizer):
    """Deprecated flax convenience: an Optimizer that also stores its model.

    Passing it to a transform together with the model is aliasing in Tree Mode
    (catalogue A9); pass the model and a plain ``Optimizer`` instead.
    """

    def __init__(self, model: tp.Any, tx: tp.Any, *, wrt: tp.Any = None):
        from ._variables import Param

        super().__init__(model, tx, wrt=Param if wrt is None else wrt)
        self.model = model

    def update(self, grads: tp.Any, /, **kwargs: tp.Any) -> tp.Any:  # type: ignore[override]
        """Apply one optax step to ``self.model``."""
        return super().update(self.model, grads, **kwargs)
