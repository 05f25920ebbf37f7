"""The FLIP 5310 pattern shared by every transform, in small steps:

1. ``check_no_aliases`` on the inputs (outside the JAX transform);
2. inside the JAX transform, ``copy_args`` (a pytree copy: fresh Variables),
   ``snapshot`` them, run the user function;
3. ``check_no_aliases`` between inputs and outputs, ``changed_variables``
   collects the Variables whose value or metadata changed;
4. outside, ``apply_updates`` writes those values back into the caller's
   Variables with ``update_from_state``.
"""

from __future__ import annotations

import typing as tp

import jax
from jax import tree_util as jtu

from ._errors import AliasingError, GraphModeNotSupportedError
from ._module import check_acyclic, check_pytree
from ._variables import Variable


def is_variable(x: tp.Any) -> bool:
    return isinstance(x, Variable)


class set_graph_mode:
    """Tree Mode only: ``set_graph_mode(False)`` is accepted (also as a context
    manager or decorator); ``True`` raises ``GraphModeNotSupportedError``.

    >>> set_graph_mode.current_value()
    False
    """

    name = "set_graph_mode"

    def __init__(self, value: bool, /):
        if value:
            raise GraphModeNotSupportedError(self.name)

    @staticmethod
    def current_value() -> bool:
        """Always ``False``."""
        return False

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        return None

    def __call__(self, f: tp.Callable) -> tp.Callable:
        return f


class set_graph_updates(set_graph_mode):
    """Tree Mode only (see :class:`set_graph_mode`)."""

    name = "set_graph_updates"


def check_tree_mode(fn_name: str, graph: bool | None, graph_updates: bool | None = None) -> None:
    """Reject ``graph=True``: this runtime implements Tree Mode only."""
    if graph or (graph_updates and graph is not False):
        raise GraphModeNotSupportedError(fn_name)


def check_no_aliases(fn_name: str, /, *, traced: tp.Any = 0, **groups: tp.Any) -> dict[str, Variable]:
    """Map each Variable's path to the Variable; raise if one appears twice.

    ``traced`` is a prefix of ``groups`` marking with ``None`` what JAX passes
    through untouched: ``pytree=False`` objects are rejected everywhere else
    (:func:`check_pytree`).  Inside a transform ``traced=None``: JAX checks
    the outputs itself, as in flax.
    """
    check_acyclic(groups, fn_name)
    check_pytree(groups, traced)
    seen: dict[int, str] = {}
    variables: dict[str, Variable] = {}
    for path, leaf in jtu.tree_leaves_with_path(groups, is_leaf=is_variable):
        if isinstance(leaf, Variable):
            path_str = jtu.keystr(path)
            if id(leaf) in seen:
                raise AliasingError(fn_name, seen[id(leaf)], path_str, type(leaf).__name__)
            seen[id(leaf)] = path_str
            variables[path_str] = leaf
    return variables


def copy_args(tree: tp.Any) -> tp.Any:
    """A pytree copy: new containers and new Variables around the same values."""
    return jax.tree.map(lambda x: x, tree)


def snapshot(tree: tp.Any) -> tuple[tp.Any, tp.Any]:
    """(the tree's own Variables, copies holding their current values)."""
    return jax.tree.map(lambda x: x, tree, is_leaf=is_variable), copy_args(tree)


def _changed(current: Variable, before: Variable) -> bool:
    now, now_def = jax.tree.flatten(current)
    old, old_def = jax.tree.flatten(before)
    return now_def != old_def or any(a is not b for a, b in zip(now, old))


def changed_variables(current: tp.Any, before: tp.Any, keep_all: bool = False) -> dict[str, Variable]:
    """``{path: Variable}`` for Variables whose value or metadata changed."""
    pairs = zip(jtu.tree_leaves_with_path(current, is_leaf=is_variable),
                jax.tree.leaves(before, is_leaf=is_variable))
    return {
        jtu.keystr(path): cur for (path, cur), old in pairs
        if isinstance(cur, Variable) and (keep_all or _changed(cur, old))
    }


def apply_updates(variables: dict[str, Variable], *update_groups: dict[str, Variable]) -> None:
    """Write returned Variable values back into the caller's Variables."""
    for updates in update_groups:
        for path, new in updates.items():
            variables[path].update_from_state(new)


def axes_by_path(prefix: tp.Any, tree: tp.Any) -> dict[str, tp.Any]:
    """``{path: axis}`` for each Variable of ``tree`` under a JAX-style prefix."""
    marked = jax.tree.map(lambda x: 0, tree, is_leaf=is_variable)
    paths = [jtu.keystr(p) for p, _ in jtu.tree_leaves_with_path(tree, is_leaf=is_variable)]
    axes = jax.tree.leaves(jax.tree.broadcast(prefix, marked, is_leaf=lambda x: x is None),
                           is_leaf=lambda x: x is None)
    return dict(zip(paths, axes))


def group_by_axis(updates: dict[str, Variable], axes: dict[str, tp.Any], known: list) -> list[dict]:
    """One update dict per known axis, so ``out_axes`` can be given statically."""
    groups: list[dict] = [{} for _ in known]
    for path, variable in updates.items():
        groups[known.index(axes[path])][path] = variable
    return groups
