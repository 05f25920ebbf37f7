"""Filters: predicates over ``(path, value)`` that select Variables.

A filter is a Variable type, ``...`` / ``True`` (everything), ``False`` /
``None`` (nothing), a string (tag), a list/tuple (any of), or a callable
``(path, value) -> bool``; ``to_predicate`` turns each into a callable.
"""

from __future__ import annotations

import dataclasses
import typing as tp

Filter = tp.Any
PathParts = tuple


def to_predicate(filter: Filter) -> tp.Callable[[PathParts, tp.Any], bool]:
    """Turn any filter form into a ``(path, value) -> bool`` predicate.

    >>> from tree_runtime import Param, BatchStat
    >>> to_predicate(Param)(('w',), Param(1.0)), to_predicate(...)(('s',), BatchStat(0))
    (True, True)
    """
    if isinstance(filter, str):
        return WithTag(filter)
    if isinstance(filter, type):
        return OfType(filter)
    if isinstance(filter, bool):
        return Everything() if filter else Nothing()
    if filter is Ellipsis:
        return Everything()
    if filter is None:
        return Nothing()
    if callable(filter):
        return filter
    if isinstance(filter, (list, tuple)):
        return Any(*filter)
    raise TypeError(f"Invalid filter: {filter!r}")


@dataclasses.dataclass(frozen=True)
class OfType:
    """Matches values that are instances of ``type``."""

    type: type

    def __call__(self, path: PathParts, x: tp.Any) -> bool:
        return isinstance(x, self.type)


@dataclasses.dataclass(frozen=True)
class WithTag:
    """Matches Variables whose ``tag`` metadata equals ``tag`` (RNG streams)."""

    tag: str

    def __call__(self, path: PathParts, x: tp.Any) -> bool:
        return getattr(x, "tag", None) == self.tag


@dataclasses.dataclass(frozen=True)
class PathContains:
    """Matches values whose path contains ``key``.

    >>> PathContains('bn')(('bn', 'mean'), None)
    True
    """

    key: tp.Any

    def __call__(self, path: PathParts, x: tp.Any) -> bool:
        return self.key in path


class Any:
    """Matches if any of the filters matches."""

    def __init__(self, *filters: Filter):
        self.predicates = tuple(map(to_predicate, filters))

    def __call__(self, path: PathParts, x: tp.Any) -> bool:
        return any(p(path, x) for p in self.predicates)


class All:
    """Matches if all of the filters match."""

    def __init__(self, *filters: Filter):
        self.predicates = tuple(map(to_predicate, filters))

    def __call__(self, path: PathParts, x: tp.Any) -> bool:
        return all(p(path, x) for p in self.predicates)


class Not:
    """Matches if the filter does not match.

    >>> from tree_runtime import Param
    >>> Not(Param)((), Param(0.0))
    False
    """

    def __init__(self, filter: Filter):
        self.predicate = to_predicate(filter)

    def __call__(self, path: PathParts, x: tp.Any) -> bool:
        return not self.predicate(path, x)


class Everything:
    """Matches everything."""

    def __call__(self, path: PathParts, x: tp.Any) -> bool:
        return True


class Nothing:
    """Matches nothing."""

    def __call__(self, path: PathParts, x: tp.Any) -> bool:
        return False
