"""The nodes of given classes below a node, from one walk of the whole module.

The analysis of a file walks its module many times over: the transform entries, the
call-site index, the attribute names stored from calls, the class model's stores, every
function's returns and assignments... On EasyDeL that was eight whole-module walks per
file plus thousands of walks of functions, each as costly as astroid's own recursive
generator (:meth:`astroid.nodes.NodeNG.nodes_of_class`).

:func:`nodes_of_class` answers the same question, with the same nodes in the same order
(astroid's pre-order: a node, then each child's subtree in ``get_children`` order), from
an index of the module built on its first whole-module question: the module's nodes in
pre-order, where each scope's subtree ends in that order, and, per class asked, the
positions of its nodes. A question about a scope (module, class, function, lambda) is then
a slice of that list; any other node is answered by astroid's walk.

An index is kept on its module (an attribute of the tree, so it lives exactly as long as
the tree): the analysed file's is built by the engine's walk, and each project module
another file asks about is indexed once per run, on its first question, however many
files ask (project modules are kept for the run by :class:`nnx_lint.analysis.project.Project`).
"""
from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from typing import Any

from astroid import nodes

#: The nodes whose subtree an index knows the extent of: the nodes questions are asked about.
_SCOPES = (nodes.Module, nodes.ClassDef, nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.Lambda)
SCOPE_TYPES = frozenset(_SCOPES)

#: The attribute of an astroid Module that holds its index.
_ATTRIBUTE = "_nnx_lint_node_index"


class ModuleIndex:
    """The pre-order of one module's nodes, the extent of each scope's subtree in it, and
    the positions of the nodes of each class asked about."""

    def __init__(self, module: nodes.Module) -> None:
        order: list[nodes.NodeNG] = []
        extents: dict[int, tuple[int, int]] = {}
        stack: list[Any] = [module]
        pop, push, extend = stack.pop, stack.append, stack.extend
        scope_types = SCOPE_TYPES
        # An explicit stack (deep trees must not hit the recursion limit here); an int on it
        # marks where the subtree of the scope that starts at that position ends.
        while stack:
            node = pop()
            if node.__class__ is int:
                extents[id(order[node])] = (node, len(order))
                continue
            if node.__class__ in scope_types:
                push(len(order))
            order.append(node)
            children = [*node.get_children()]
            children.reverse()
            extend(children)
        self.module = module  # keeps the ids of the table's keys from being reused
        self.order = order
        self.extents = extents
        # Positions are kept as machine integers: the indexes of project modules last the run.
        self._positions: dict[Any, array] = {}
        self._by_type: dict[type, array] | None = None

    def by_type(self) -> dict[type, array]:
        """The positions of the module's nodes, per exact node class (sorted)."""
        if self._by_type is None:  # one pass over the nodes, however many classes are asked
            by_type: dict[type, list[int]] = {}
            for i, node in enumerate(self.order):
                found = by_type.get(node.__class__)
                if found is None:
                    found = by_type[node.__class__] = []
                found.append(i)
            self._by_type = {kind: array("l", found) for kind, found in by_type.items()}
        return self._by_type

    def positions(self, klass: Any) -> array:
        """Sorted positions of the nodes that are instances of ``klass`` (a class or tuple)."""
        found = self._positions.get(klass)
        if found is None:
            lists = [found for kind, found in self.by_type().items() if issubclass(kind, klass)]
            found = lists[0] if len(lists) == 1 else array("l", sorted(i for found in lists for i in found))
            self._positions[klass] = found
        return found

    def query(self, start: int, end: int, klass: Any, skip_klass: Any) -> list[nodes.NodeNG]:
        order = self.order
        hits = self.positions(klass)
        low = bisect_left(hits, start)
        high = bisect_left(hits, end, low)
        if skip_klass is None:
            return [order[i] for i in hits[low:high]]
        # astroid prunes the subtree of every node of ``skip_klass`` below the one asked about.
        skips = self.positions(skip_klass)
        next_skip = bisect_right(skips, start)
        last_skip = bisect_left(skips, end, next_skip)
        pruned_until = -1
        found = []
        for i in hits[low:high]:
            while next_skip < last_skip and skips[next_skip] <= i:
                skipped = skips[next_skip]
                pruned_until = max(pruned_until, skipped + self._subtree_size(skipped))
                next_skip += 1
            if i >= pruned_until:
                found.append(order[i])
        return found

    def _subtree_size(self, position: int) -> int:
        extent = self.extents.get(id(self.order[position]))
        if extent is not None:
            return extent[1] - extent[0]
        return sum(1 for _ in self.order[position].nodes_of_class(nodes.NodeNG))


def module_index(module: nodes.Module) -> ModuleIndex:
    """The index of ``module``, built on first use and kept on the module: the engine walks
    the analysed file in its order, so the file's nodes are walked once for both."""
    index = module.__dict__.get(_ATTRIBUTE)
    if index is None:
        index = ModuleIndex(module)
        setattr(module, _ATTRIBUTE, index)
    return index


def nodes_of_class(node: nodes.NodeNG, klass: Any, skip_klass: Any = None) -> list[nodes.NodeNG]:
    """``list(node.nodes_of_class(klass, skip_klass))``, from the index of the node's module
    when the node is a scope (the index is built on the module's first question)."""
    if isinstance(node, nodes.Module):
        index = module_index(node)
    elif node.__class__ in SCOPE_TYPES:
        root = node.root()
        index = module_index(root) if isinstance(root, nodes.Module) else None
    else:
        index = None
    extent = index.extents.get(id(node)) if index is not None else None
    if extent is None or index.order[extent[0]] is not node:
        return list(node.nodes_of_class(klass, skip_klass))
    return index.query(extent[0], extent[1], klass, skip_klass)
