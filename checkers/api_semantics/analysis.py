"""Analysis helpers shared by several api semantics rules."""
from __future__ import annotations

from astroid import nodes

from nnx_lint.transforms import explicit_tree


_RNG_SPLITTERS = frozenset({"split_rngs", "fork_rngs"})


def _rng_splitter(context, node: nodes.NodeNG):
    call = context.nnx_call(node)
    if call is None or call.name not in _RNG_SPLITTERS or call.via_partial or explicit_tree(call):
        return None
    return call
