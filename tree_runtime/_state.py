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
        return filter_state(self, *filters)

    def split(self, first: tp.Any, /, *filters: tp.Any) -> "State | tuple[State, ...]":
        """:func:`split_state` (exhaustive): one State per filter."""
        states = split_state(self, first, *filters)
        return states if filters else states[0]

    @classmethod
    def merge(cls, state: tp.Mapping, /, *states: tp.Mapping) -> "State":
        """:func:`merge_state` as a classmethod (``nnx.State.merge(a, b)``)."""
        return merge_state(state, *states)

    def to_pure_dict(self) -> dict:
        """:func:`to_pure_dict` of this State."""
        return to_pure_dict(self)

    def replace_by_pure_dict(self, pure_dict: tp.Mapping) -> None:
        """:func:`replace_by_pure_dict` on this State."""
        replace_by_pure_dict(self, pure_dict)

    @property
    def raw_mapping(self) -> dict:
        """The nested plain ``dict`` behind the State (a copy here: flax
        returns its internal dict)."""
        return {k: v.raw_mapping if isinstance(v, State) else v for k, v in self.items()}

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
    for path, leaf in _flat(state):
        for group, predicate in zip(groups, predicates):
            if predicate(path, leaf):
                group.append((path, leaf))
                break
        else:
            if exhaustive:
                raise ValueError(f"Non-exhaustive filters, leaf at path {path} matched no filter.")
    return tuple(State.from_flat_path(group) for group in groups)


def filter_state(state: State, first: tp.Any, /, *filters: tp.Any) -> "State | tuple[State, ...]":
    """Keep the leaves matching each filter (first match wins; the rest is
    dropped): one State per filter.

    >>> from tree_runtime import Param, BatchStat
    >>> sorted(filter_state(State({'w': Param(1.0), 'm': BatchStat(0.0)}), Param))
    ['w']
    """
    states = split_state(state, first, *filters, exhaustive=False)
    return states if filters else states[0]


def _flat(state: tp.Any) -> list[tuple[tuple, tp.Any]]:
    # flax reads States through their mapping: a Module (e.g. a Tree Mode
    # gradient) passed instead has none and raises AttributeError there too.
    return state.flat_state() if isinstance(state, State) else State(state.items()).flat_state()


def merge_state(state: tp.Mapping, /, *states: tp.Mapping) -> State:
    """Combine States (later ones win on conflicts).

    >>> from tree_runtime import Param
    >>> sorted(merge_state(State({'a': Param(1.0)}), {'b': Param(2.0)}))
    ['a', 'b']
    """
    items: dict = {}
    for s in (state, *states):
        if not isinstance(s, tp.Mapping):  # flax: traversals' assertion
            raise AssertionError(f"expected Mapping; got {type(s).__name__}")
        items.update(_flat(s))
    return State.from_flat_path(items.items())


def to_pure_dict(state: State) -> dict:
    """A nested plain ``dict`` of raw values (Variables unwrapped).

    >>> from tree_runtime import Param
    >>> to_pure_dict(State({'w': Param(2.0)}))
    {'w': 2.0}
    """
    out: dict = {}
    for path, leaf in _flat(state):
        node = out
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = leaf.get_value() if isinstance(leaf, Variable) else leaf
    return out


def replace_by_pure_dict(state: State, pure_dict: tp.Mapping) -> None:
    """Replace ``state``'s leaves by the values of a nested plain dict (a
    Variable is replaced by a new one, ``Variable.replace(value)``; string
    keys that name list indices are converted, as after a checkpoint restore).

    >>> from tree_runtime import Param
    >>> s = State({'w': Param(1.0)}); replace_by_pure_dict(s, {'w': 5.0})
    >>> s['w'].get_value()
    5.0
    """
    current = dict(_flat(state))

    def flatten(mapping, prefix=()):
        for key, value in mapping.items():
            if isinstance(value, tp.Mapping):
                yield from flatten(value, (*prefix, key))
            else:
                yield (*prefix, key), value

    for path, value in flatten(pure_dict):
        match = path if path in current else tuple(int(k) if str(k).isdigit() else k for k in path)
        if match not in current:
            raise ValueError(f"key in pure_dict not available in state: {path}")
        old = current[match]
        current[match] = old.replace(value) if hasattr(old, "replace") else value
    state.update(State.from_flat_path(current.items()))
