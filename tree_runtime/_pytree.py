"""Pytrees with attribute-level data/static status: ``Pytree``, ``data``/``static``, ``is_data``.

A class is registered with JAX when it is created (``__init_subclass__``).
Each attribute is classified once, when first assigned: Variables, arrays,
Pytrees and ``data(...)`` values are *children*; everything else is *static*
and travels in the treedef, which is why static changes made inside a
transform are lost in Tree Mode.
"""

from __future__ import annotations

import typing as tp

import jax
import numpy as np
from jax import tree_util as jtu

from ._errors import NonPytreeModuleError, TraceContextError
from ._variables import Variable, current_trace


class _Marked(tp.NamedTuple):
    """A value with an explicit data/static status (from ``data``/``static``)."""

    value: tp.Any
    is_data: bool


def data(value: tp.Any, /) -> tp.Any:
    """Mark an attribute value as a pytree child (e.g. a list of Modules).

    >>> import tree_runtime as nnx
    >>> class Net(nnx.Module):
    ...   def __init__(self):
    ...     self.blocks = nnx.data([nnx.Param(1.0), nnx.Param(2.0)])
    >>> len(jax.tree.leaves(Net()))
    2
    """
    return _Marked(value, True)


def static(value: tp.Any, /) -> tp.Any:
    """Mark an attribute value as static (kept in the treedef, never traced)."""
    return _Marked(value, False)


def is_data(value: tp.Any, /) -> bool:
    """True for values that become pytree children when assigned to a Pytree.

    >>> import jax.numpy as jnp
    >>> is_data(jnp.zeros(2)), is_data(3), is_data([jnp.zeros(2)])
    (True, False, False)
    """
    return isinstance(value, (jax.Array, np.ndarray, Variable, Pytree) + _MUTABLE_ARRAYS)


#: Raw mutable array refs (``jax.new_ref``, jax >= 0.7) are data, as in flax (``ArrayRef``).
_MUTABLE_ARRAYS: tuple[type, ...] = (jax.Ref,) if hasattr(jax, "Ref") else ()


def _sort_key(key: tp.Any):
    return (isinstance(key, str), key)


def _flatten_with_keys(node: "Pytree"):
    return node._tree_flatten()


def _flatten(node: "Pytree"):
    children, aux = node._tree_flatten()
    return [child for _, child in children], aux


class Pytree:
    """Base class of pytree objects with attribute-level data/static status.

    Subclasses are JAX pytrees unless declared with ``pytree=False`` (then
    Tree Mode APIs reject them with ``NonPytreeModuleError``).
    """

    _pytree__is_pytree: bool = True

    def __init_subclass__(cls, pytree: bool = True, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._pytree__is_pytree = pytree
        if pytree:
            jtu.register_pytree_with_keys(
                cls, _flatten_with_keys, cls._tree_unflatten, _flatten
            )

    @classmethod
    def _tree_unflatten(cls, aux, children) -> "Pytree":
        return _unflatten(cls, aux, children)

    def _nodes(self) -> dict[str, bool]:
        self.__dict__.setdefault("_pytree__trace", current_trace())
        return self.__dict__.setdefault("_pytree__nodes", {})

    def __setattr__(self, name: str, value: tp.Any) -> None:
        nodes = self._nodes()
        if self.__dict__["_pytree__trace"] != current_trace():
            raise TraceContextError(type(self).__name__)
        if isinstance(value, _Marked):
            value, nodes[name] = value.value, value.is_data
        elif name not in nodes:
            nodes[name] = is_data(value)
            if not nodes[name] and _contains_data(value):
                # A plain list of Modules would silently become static (and be
                # invisible to every transform): refuse, as flax does.
                raise ValueError(
                    f"Found Arrays, Variables or Modules in static attribute '{name}' of "
                    f"'{type(self).__name__}'. Wrap the value with nnx.data(...) or use nnx.List."
                )
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        self._nodes().pop(name, None)
        object.__delattr__(self, name)

    def _tree_flatten(self):
        if not self._pytree__is_pytree:
            raise NonPytreeModuleError(type(self).__name__)
        nodes = self._nodes()
        children, static_keys, static_values = [], [], []
        for key in sorted(k for k in vars(self) if not k.startswith("_pytree__")):
            if nodes.get(key, False):
                children.append((jtu.GetAttrKey(key), vars(self)[key]))
            else:
                static_keys.append(key)
                static_values.append(vars(self)[key])
        aux = (tuple(k.name for k, _ in children), tuple(static_keys),
               _Static(tuple(static_values)), tuple(sorted(nodes.items())))
        return children, aux


class _Static:
    """Static attribute values in the treedef; compared by value when possible."""

    def __init__(self, values: tuple):
        self.values = values

    def __eq__(self, other) -> bool:
        try:
            return isinstance(other, _Static) and bool(self.values == other.values)
        except Exception:  # e.g. arrays among static values
            return False

    def __hash__(self) -> int:
        try:
            return hash(self.values)
        except TypeError:  # lists and dicts: hash by length, compare by value
            return len(self.values)


def _unflatten(cls: type, aux, children) -> "Pytree":
    child_keys, static_keys, static_values, nodes = aux
    obj = object.__new__(cls)
    object.__setattr__(obj, "_pytree__nodes", dict(nodes))
    object.__setattr__(obj, "_pytree__trace", current_trace())
    for key, value in zip(child_keys, children):
        object.__setattr__(obj, key, value)
    for key, value in zip(static_keys, static_values.values):
        object.__setattr__(obj, key, value)
    return obj


def _contains_data(value: tp.Any) -> bool:
    if isinstance(value, (list, tuple, dict)):
        items = value.values() if isinstance(value, dict) else value
        return any(is_data(v) or _contains_data(v) for v in items)
    return False
