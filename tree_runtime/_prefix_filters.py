"""Graph-mode prefix filters (``StateAxes``, ``DiffState``, ``StateSharding``) and their rejection.

They exist only so that code using them fails the way flax fails in Tree Mode: when the
transform is created, with ``PrefixFilterError``. Every transform (``_transforms``,
``_custom_vjp``) calls :func:`reject_prefix_filters` on its prefix arguments.
"""

from __future__ import annotations

import typing as tp

import jax

from ._errors import PrefixFilterError


class PrefixFilter:
    """Base of the graph-mode prefix filters; any use in a transform raises."""

    def __init__(self, *args: tp.Any, **kwargs: tp.Any):
        self.args, self.kwargs = args, kwargs


class StateAxes(PrefixFilter):
    """Graph-mode ``in_axes`` prefix; rejected by every Tree Mode transform."""


class DiffState(PrefixFilter):
    """Graph-mode ``argnums`` prefix; rejected by every Tree Mode transform."""


class StateSharding(PrefixFilter):
    """Graph-mode sharding prefix; rejected by every Tree Mode transform."""


def reject_prefix_filters(fn_name: str, **prefixes: tp.Any) -> None:
    """Raise ``PrefixFilterError`` if any prefix contains StateAxes/DiffState/StateSharding
    (called when the transform is created, as flax does).

    >>> reject_prefix_filters('vmap', in_axes=(0, None))
    >>> try:
    ...   reject_prefix_filters('vmap', in_axes=(StateAxes({...: 0}),))
    ... except PrefixFilterError as exc:
    ...   exc.category
    'prefix-filter'
    """
    for argument, prefix in prefixes.items():
        for leaf in jax.tree.leaves(prefix, is_leaf=lambda x: isinstance(x, PrefixFilter)):
            if isinstance(leaf, PrefixFilter):
                raise PrefixFilterError(fn_name, argument, type(leaf).__name__)
