"""The loops around a node inside its function: a creation site or a call in one stands for one
object (or one call) per iteration (:func:`loops_around`, read by the solver's contexts)."""
from __future__ import annotations

from astroid import nodes

_LOOPS = (nodes.For, nodes.AsyncFor, nodes.While, nodes.ListComp, nodes.SetComp, nodes.DictComp, nodes.GeneratorExp)
#: The attribute of a node that keeps its loops (on the node, so the answer lives and dies with its tree).
_LOOPS_ATTRIBUTE = "_nnx_lint_loops_around"


def loops_around(node) -> frozenset:
    """The loops (and comprehensions) between ``node`` and its function: a site in one makes one
    object per iteration."""
    if not isinstance(node, nodes.NodeNG):
        return frozenset()
    cached = node.__dict__.get(_LOOPS_ATTRIBUTE)
    if cached is not None:
        return cached
    found = []
    child, current = node, node.parent
    once = False  # a loop's iterable (a comprehension's first) is evaluated once, outside the loop
    while current is not None and not isinstance(current, (nodes.FunctionDef, nodes.Lambda, nodes.Module)):
        if isinstance(current, nodes.Comprehension):
            once = child is current.iter and current is current.parent.generators[0]
        elif isinstance(current, _LOOPS):
            if not (once or (isinstance(current, (nodes.For, nodes.AsyncFor)) and child is current.iter)):
                found.append(current)
            once = False
        child, current = current, current.parent
    result = frozenset(found)
    node.__dict__[_LOOPS_ATTRIBUTE] = result
    return result
