"""Garbage collection while files are analysed.

Building and analysing a file allocates hundreds of thousands of astroid nodes that all
stay alive until the file is done, so CPython's default first-generation threshold (700
allocations) runs the collector thousands of times per run over objects it cannot free:
on flax's examples that was ~1,700 collections and a quarter of a cold run. Raising the
threshold while a file is analysed leaves the collector the garbage cycles that do appear,
at a few MB more peak memory at most (peak RSS measured unchanged on flax and maxtext).

What outlives a file (the project modules it read, the run's caches) would still be walked
again by every later collection of its generation: two middle-generation collections over
~a million objects cost about a second of a cold run on EasyDeL. So after each file,
:func:`settle_file` collects that file's garbage (its tree, its memos) and sets the survivors
aside (:func:`gc.freeze`): later collections walk only what later files allocate. The frozen
objects (and what the process held before the files) are handed back to the collector when the
files are done (in a worker process, when it exits); a process that froze objects itself is
left as it is.
"""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: First-generation threshold while analysing (CPython's default is 700), and how many
#: collections of one generation trigger one of the next (default 10).
ANALYSIS_THRESHOLDS = (50_000, 20, 20)


#: Whether :func:`settle_file` freezes survivors (only inside :func:`fewer_collections`, and
#: only if the process had frozen nothing itself).
_settling = False
#: Whether the frozen objects were frozen here (a worker keeps them from batch to batch).
_frozen_here = False


@contextmanager
def fewer_collections(*, keep_frozen: bool = False) -> Iterator[None]:
    """Raise the collector's thresholds for the block, then restore the caller's ones; inside
    it, :func:`settle_file` sets each file's survivors aside, and they are handed back to the
    collector at the end (``keep_frozen``: not at the end; for a worker process, whose next
    batch would otherwise walk them all again)."""
    global _settling, _frozen_here
    previous = gc.get_threshold()
    gc.set_threshold(*(max(mine, theirs) for mine, theirs in zip(ANALYSIS_THRESHOLDS, previous)))
    outer = _settling
    # never thaw what the process froze itself
    freezing = outer or _frozen_here or gc.get_freeze_count() == 0
    _settling = freezing
    if freezing and not outer:
        # What the process holds already is set aside too (and handed back at the end): the
        # first file's collection then walks only what that file allocated.
        gc.freeze()
        _frozen_here = True
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        _settling = outer
        if freezing and not outer and not keep_frozen:
            gc.unfreeze()
            _frozen_here = False


def settle_file() -> None:
    """After a file's analysis: collect its garbage, then set what survives aside (see the
    module docstring). Does nothing outside :func:`fewer_collections`."""
    if not _settling:
        return
    # astroid keeps the last nodes it saw in process-wide places: frozen there, a tree could
    # never be freed; dropped, they are recomputed on the next question.
    for cache in _astroid_node_caches():
        cache.cache_clear()
    for model in _astroid_node_models():
        model._instance = None  # the node its `special_attributes` was last read through
    gc.collect()
    gc.freeze()


def _astroid_node_caches() -> tuple:
    """astroid's process-wide ``lru_cache``s keyed by nodes (those its ``clear_cache`` clears)."""
    from astroid.interpreter.objectmodel import ObjectModel
    from astroid.nodes import ClassDef
    from astroid.nodes._base_nodes import LookupMixIn

    return LookupMixIn.lookup, ObjectModel.attributes, ClassDef._metaclass_lookup_attribute



def _astroid_node_models() -> list:
    """The ``special_attributes`` models of astroid's node classes: one object per class, which
    remembers the last node it was read through (it is set again on every read)."""
    from astroid import nodes
    from astroid.interpreter.objectmodel import ObjectModel

    found = {}
    for node_class in nodes.ALL_NODE_CLASSES:
        for klass in getattr(node_class, "__mro__", ()):  # the tuple holds a factory function too
            model = vars(klass).get("special_attributes")
            if isinstance(model, ObjectModel):
                found[id(model)] = model
    return list(found.values())
