"""``State``: a nested mapping of Variables (or arrays), itself a pytree.

``split``/``state``/``capture`` return States; paths are tuples of attribute
names and list indices, e.g. ``('layers', 0, 'kernel')``.
"""

from __future__ import annotations

import typing as tp

from jax import tree_util as jtu

from ._filters import to_predicate
from ._variables import Variable


def _sort_key(key: tp.Any):
    # ints before strings, like flax's type-aware sort, so mixed keys sort.
    return (isinstance(key, str), key)


class State(dict):
    """A nested ``dict`` of Variables keyed by attribute name or list index.

    >>> from tree_runtime import Param
    >>> s = State({'lin': {'kernel': Param(1.0)}})
    >>> s['lin']['kernel'].get_value(), [path for path, _ in s.flat_state()]
    (1.0, [('lin', 'kernel')])
    """

    def __init__(self, mapping: tp.Mapping = (), /):
        super().__init__()
        for key, value in dict(mapping).items():
            self[key] = State(value) if isinstance(value, tp.Mapping) and not isinstance(value, State) else value

    def flat_state(self) -> list[tuple[tuple, tp.Any]]:
        """``[(path, leaf), ...]`` in sorted path order."""
        out: list[tuple[tuple, tp.Any]] = []
        for key in sorted(self, key=_sort_key):
            value = self[key]
            if isinstance(value, State):
                out.extend(((key, *path), leaf) for path, leaf in value.flat_state())
            else:
                out.append(((key,), value))
        return out

    @classmethod
    def from_flat_path(cls, items: tp.Iterable[tuple[tuple, tp.Any]]) -> "State":
        """Build a nested State from ``(path, leaf)`` pairs."""
        root = cls()
        for path, leaf in items:
            node = root
            for key in path[:-1]:
                node = node.setdefault(key, cls())
            node[path[-1]] = leaf
        return root

    def filter(self, *filters: tp.Any) -> "State | tuple[State, ...]":
        """Keep the leaves matching each filter (one State per filter)."""
        states = split_state(self, *filters)
        return states if len(filters) > 1 else states[0]

    def __repr__(self) -> str:
        return f"State({dict.__repr__(self)})"


def _flatten_with_keys(state: State):
    keys = tuple(sorted(state, key=_sort_key))
    return [(jtu.DictKey(k), state[k]) for k in keys], keys


jtu.register_pytree_with_keys(
    State,
    _flatten_with_keys,
    lambda keys, children: State(dict(zip(keys, children))),
    lambda s: ([s[k] for k in sorted(s, key=_sort_key)], tuple(sorted(s, key=_sort_key))),
)


def split_state(state: State, *filters: tp.Any, exhaustive: bool = True) -> tuple[State, ...]:
    """Partition a State by filters; the first matching filter wins.

    >>> from tree_runtime import Param, BatchStat
    >>> p, b = split_state(State({'w': Param(1.0), 'm': BatchStat(0.0)}), Param, ...)
    >>> list(p), list(b)
    (['w'], ['m'])
    """
    predicates = [to_predicate(f) for f in filters] or [to_predicate(...)]
    groups: list[list] = [[] for _ in predicates]
    for path, leaf in state.flat_state():
        for group, predicate in zip(groups, predicates):
            if predicate(path, leaf):
                group.append((path, leaf))
                break
        else:
            if exhaustive:
                raise ValueError(f"Non-exhaustive filters, leaf at path {path} matched no filter.")
    return tuple(State.from_flat_path(group) for group in groups)


def merge_state(*states: State) -> State:
    """Combine States (later ones win on conflicts)."""
    items: dict = {}
    for state in states:
        items.update(state.flat_state())
    return State.from_flat_path(items.items())


def to_pure_dict(state: State) -> dict:
    """A nested plain ``dict`` of raw values (Variables unwrapped).

    >>> from tree_runtime import Param
    >>> to_pure_dict(State({'w': Param(2.0)}))
    {'w': 2.0}
    """
    return {
        key: to_pure_dict(value) if isinstance(value, State)
        else value.get_value() if isinstance(value, Variable) else value
        for key, value in state.items()
    }
