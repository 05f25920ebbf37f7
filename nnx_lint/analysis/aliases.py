"""Aliases and self references, a part of the class model: in a replayed construction, the
objects with NNX state it makes reachable twice (:class:`~nnx_lint.analysis.refs.Alias`), the
stores that make the instance hold itself (:class:`~nnx_lint.analysis.refs.SelfReference`), and
which objects are graph nodes.

:class:`AliasQueries` is a part of :class:`nnx_lint.analysis.classes.ClassModel`: it reads the
replay of :class:`~nnx_lint.analysis.construction.ConstructionReplay`, and asks
:class:`~nnx_lint.analysis.class_kinds.ClassKinds` what the stored objects hold.
"""
from __future__ import annotations

from astroid import nodes

from nnx_lint.base import bounds
from nnx_lint.flax_table import nnx_api
from nnx_lint.flax_table.names import NNX_PREFIX
from nnx_lint.analysis.class_info import store_target_path
from nnx_lint.analysis.class_hierarchy import ClassHierarchy
from nnx_lint.analysis.class_kinds import ClassKinds
from nnx_lint.analysis.construction import Construction, ConstructionReplay
from nnx_lint.analysis.expression_classes import ExpressionClasses
from nnx_lint.analysis.refs import (RNG_CLASSES, SHARED_KINDS, STATEFUL_KINDS, Alias, Ref, SelfReference, StoreEvent,
                                    store_overwritten)


class AliasQueries:
    """Aliases and self references, a part of :class:`nnx_lint.analysis.classes.ClassModel`: the
    objects a construction stores twice or stores below themselves, and graph nodes."""

    def __init__(self, replay: ConstructionReplay, hierarchy: ClassHierarchy, expressions: ExpressionClasses,
                 kinds: ClassKinds) -> None:
        self.replay = replay
        self.hierarchy = hierarchy
        self.expressions = expressions
        self.kinds = kinds
        #: The classes whose replayed construction has its aliases and self references.
        self._examined: set[int] = set()
        self._variable_free_aliases: dict[int, list[Alias]] = {}

    def construction(self, classdef: nodes.ClassDef) -> Construction:
        """How ``classdef`` builds an instance (:meth:`~nnx_lint.analysis.construction.ConstructionReplay.replay`),
        with the objects it stores twice and the stores of itself below itself (memoised)."""
        result = self.replay.replay(classdef)
        if id(classdef) not in self._examined:
            self._examined.add(id(classdef))
            result.aliases = self._find_aliases(result)
            result.self_references = self._find_self_references(result)
        return result

    def _find_self_references(self, construction: Construction) -> list[SelfReference]:
        """Stores of the instance (or a node inside it) below itself that stay until the end
        of construction, where every object between the node and the store is a graph node
        (a Module, a Pytree, an NNX container or a list/dict element): a plain Python object
        in between is a static leaf to flax, and a ``weakref.ref`` is no reference to walk."""
        events = construction.events
        found: list[SelfReference] = []
        step = f"looking for stores of class `{construction.classdef.name}` below itself"
        for position, event in enumerate(events):
            bounds.checkpoint(step)
            ref = event.ref
            if ref is None or event.deleted or ref.root != ("self", construction.classdef):
                continue
            target = ref.path
            if len(target) >= len(event.path) or event.path[:len(target)] != target:
                continue
            if store_overwritten(events, event, position + 1, len(events)):
                continue
            own = store_target_path(event.node)
            if own is not None and target[:len(own)] == own:
                continue  # `self.stride = (self.stride, 2)`: the old object, placed below its replacement
            if not all(self._graph_node_at(construction, event.path[:length], position)
                       for length in range(len(target), len(event.path))):
                continue
            found.append(SelfReference(event, target))
        return found

    def graph_node(self, ref: Ref | None) -> bool:
        """Whether the object ``ref`` denotes is an NNX graph node (a Module or Pytree,
        also one holding no Variables, or an ``Rngs``): what Tree Mode flattens into."""
        if ref is None:
            return False
        if ref.path:
            return self.kinds.kind_of(ref) in ("module", "rngs")
        if ref.root[0] == "self":
            return self.hierarchy.info(ref.root[1]).is_nnx_module
        cls = None
        if ref.root[0] == "new" and isinstance(ref.root[1], nodes.Call):
            cls = self.expressions.class_of(ref.root[1])
        elif ref.root[0] == "param":
            function, name = ref.root[1], ref.root[2]
            cls = self.kinds.parameter_annotation_class(function, name) \
                or self.expressions.call_site_class(function, name)
        if cls is None:
            return self.kinds.kind_of(ref) in ("module", "rngs")
        if cls.definition is not None:
            return self.hierarchy.info(cls.definition).is_nnx_module
        return cls.qualified_name.startswith(NNX_PREFIX) and (
            nnx_api.holds_variables(cls.qualified_name) or cls.short_name in RNG_CLASSES
            or cls.short_name in nnx_api.STATELESS_MODULE_CLASSES
            or cls.qualified_name in nnx_api.CONTAINER_MODULES)

    def _graph_node_at(self, construction: Construction, path: tuple[str, ...], before: int) -> bool:
        """Whether the object stored at ``path`` (by the latest store before event
        ``before``) is a graph node; ``()`` is the instance itself."""
        if not path:
            return self.hierarchy.info(construction.classdef).is_nnx_module
        for event in reversed(construction.events[:before]):
            if event.path == path and not event.deleted:
                if self.graph_node(event.ref):
                    return True
                # a list or dict literal holding nodes: flax walks its elements
                return event.ref is None and any(
                    e.path[:len(path)] == path and len(e.path) > len(path) and e.path[len(path)].startswith("[")
                    for e in construction.events)
        return False

    def variable_free_aliases(self, classdef: nodes.ClassDef) -> list[Alias]:
        """Graph nodes holding no Variables that an instance of ``classdef`` reaches at two
        paths (``self.left = Shared(); self.right = self.left``), kind ``node``: Tree Mode
        accepts them, but its traversals walk them once per path (NNX111). Memoised."""
        key = id(classdef)
        if key not in self._variable_free_aliases:
            self._variable_free_aliases[key] = self._find_aliases(self.construction(classdef), variable_free=True)
        return self._variable_free_aliases[key]

    def variable_free_node(self, ref: Ref | None) -> bool:
        """Whether ``ref`` is a graph node (a Module or Pytree of a known class) that holds no
        Variables: what Tree Mode takes reachable twice, rebuilding it once per path."""
        return ref is not None and not ref.path and self.graph_node(ref) and self.kinds.kind_of(ref) is None

    def _find_aliases(self, construction: Construction, variable_free: bool = False) -> list[Alias]:
        """Objects holding Variables (or raw refs) stored at two paths; with
        ``variable_free``, graph nodes holding none (:meth:`variable_free_aliases`)."""
        events = construction.events
        aliases: list[Alias] = []
        step = f"looking for objects stored twice by class `{construction.classdef.name}`"
        for position, event in enumerate(events):
            bounds.checkpoint(step)  # quadratic in the events
            if event.ref is None or event.deleted:
                continue
            if variable_free:
                kind = "node" if self.variable_free_node(_stored_object(events, position, construction)) else None
            else:
                kind = self.kinds.kind_of(event.ref)
            if kind not in SHARED_KINDS and kind != "node":
                continue
            ref = event.ref
            if ref.root == ("self", construction.classdef) and event.path[:len(ref.path)] == ref.path:
                continue  # the instance (or a node of it) stored below itself: a cycle, not an alias
            found: Alias | None = None
            ref = event.ref
            if ref.root[0] == "self" and ref.root[1] is construction.classdef and ref.path:
                first_path = ref.path
                holder = _live_store_at(events, position, first_path)
                if holder is not None and not _prefix_related(first_path, event.path):
                    if not _exclusive(holder.guards, event.guards):
                        found = Alias(holder, first_path, event, ref, kind)
            if found is None:
                for earlier in events[:position]:
                    if earlier.ref is None or earlier.deleted or not earlier.ref.overlaps(ref):
                        continue
                    if _prefix_related(earlier.path, event.path) or _exclusive(earlier.guards, event.guards):
                        continue
                    if store_overwritten(events, earlier, events.index(earlier) + 1, position):
                        continue
                    if len(earlier.ref.path) > len(ref.path):
                        if variable_free:
                            continue  # a part of the stored object: not the node itself
                        # `self.config = m.config` then `self.model = m`: what is held twice
                        # is the part, `m.config`; only a part that holds Variables matters.
                        part_kind = self.kinds.kind_of(earlier.ref)
                        if part_kind not in STATEFUL_KINDS:
                            continue
                        kind = part_kind
                    if earlier.container is not None and earlier.container is event.container and (
                        len(earlier.path) and len(event.path)
                    ):
                        pass  # two elements of one container: still an alias (A3)
                    found = Alias(earlier, earlier.path, event, ref, kind)
                    break
            if found is None:
                continue
            end = len(events)
            if store_overwritten(events, event, position + 1, end):
                continue
            if found.first is not None and store_overwritten(events, found.first, position + 1, end,
                                                             path=found.first_path, guards=event.guards):
                continue
            aliases.append(found)
        return aliases


def _prefix_related(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


def _exclusive(a: frozenset, b: frozenset) -> bool:
    """Two stores in different branches of one ``if`` can never both run."""
    branches_a = {key: branch for key, branch in a if branch in ("body", "orelse")}
    return any(branches_a.get(key) not in (None, branch) for key, branch in b if branch in ("body", "orelse"))


def _stored_object(events: list[StoreEvent], position: int, construction: Construction) -> Ref | None:
    """The object event ``position`` stores: its ref, or for ``self.right = self.left`` the
    ref of the store that ``self.left`` holds then (the object itself, not a path to it)."""
    ref = events[position].ref
    if ref is not None and ref.root == ("self", construction.classdef) and ref.path:
        holder = _live_store_at(events, position, ref.path)
        return holder.ref if holder is not None and holder.path == ref.path else None
    return ref


def _live_store_at(events: list[StoreEvent], position: int, path: tuple[str, ...]) -> StoreEvent | None:
    """The latest store before ``position`` whose path holds ``path`` (itself or a parent)."""
    for event in reversed(events[:position]):
        if len(event.path) <= len(path) and path[: len(event.path)] == event.path:
            return None if event.deleted else event
    return None
