"""Analysis helpers shared by several api semantics rules."""
from __future__ import annotations

from astroid import nodes

from nnx_lint.api import explicit_tree, flax_table




def rng_splitter(context, node: nodes.NodeNG):
    """The ``nnx.split_rngs`` / ``nnx.fork_rngs`` call ``node`` is (direct, not pinned), else None."""
    call = context.nnx_call(node)
    if call is None or call.name not in flax_table.RNG_SPLITTING_TRANSFORMS or call.via_partial or explicit_tree(call):
        return None
    return call
