"""The call-site contexts of the object-flow solve (:mod:`nnx_lint.analysis.objects.solver`): what
qualifies a function instance and the objects it makes, and the loops around a chain of calls."""
from __future__ import annotations

from nnx_lint.analysis.objects.abstract import AbstractObject, order_text, stable_hash
from nnx_lint.analysis.objects.loops import loops_around

#: The site of an entry's context: a function analysed with no caller.
ROOT = "root"
#: The site of a function's one merged context, past the context bounds (a summary of many calls).
MERGED = "*"


class Context:
    """One call-site context of a function instance (interned by :meth:`Solver.context`, so
    identity is equality and the hash is cached: contexts key every variable of the solve).

    ``site``: the call that entered the function (or :data:`ROOT`, :data:`MERGED`);
    ``defined_in``: the context the function object was made in (closures);
    ``caller``: the receiver object of a method, or the caller's context for a plain function;
    ``rooted``: whether the chain starts at an entry analysed with no caller;
    ``loops``: the loops around the calls of the chain (a frozenset of nodes), or None when the
    chain went through a merged context (a summary); ``depth``: the length of the chain."""

    __slots__ = ("site", "defined_in", "caller", "rooted", "loops", "depth", "foreign", "stable", "order_text")

    def __init__(self, site, defined_in, caller, rooted: bool, loops: frozenset | None, depth: int,
                 foreign: int = 0) -> None:
        self.site, self.defined_in, self.caller = site, defined_in, caller
        self.rooted, self.loops, self.depth = rooted, loops, depth
        #: How many calls into other files' functions the chain made in a row (:data:`MAX_FOREIGN_CALLS`).
        self.foreign = foreign
        #: The same in every run (positions, not ids): sets of contexts and of the objects made
        #: in them iterate in one order, so the context bound picks the same calls each run.
        self.order_text = "|".join((order_text(site), order_text(defined_in), order_text(caller), str(rooted), str(depth)))
        self.stable = stable_hash(self.order_text)

    def __hash__(self) -> int:
        return self.stable

    def __getitem__(self, index: int):
        """The tuple view ``(site, defined_in, caller, rooted)`` that summaries' variables walk."""
        return (self.site, self.defined_in, self.caller, self.rooted)[index]

    def __repr__(self) -> str:
        return f"Context({getattr(self.site, 'lineno', self.site)}, depth={self.depth})"


def is_rooted(context) -> bool:
    """Whether ``context`` descends from an entry analysed with no caller."""
    return context is not None and (context.site == ROOT or context.rooted)


def depth_of(context) -> int:
    return context.depth if context is not None else 0


def context_loops(context) -> frozenset | None:
    """The loops around the calls of ``context``'s chain; None for a merged (summary) chain."""
    return frozenset() if context is None else context.loops


def object_loops(obj: AbstractObject) -> frozenset | None:
    """The loops around ``obj``'s creation and the calls that led to it: ``obj`` stands for one
    runtime object per run of those loops. None for a summary (made in a merged context)."""
    outer = context_loops(obj.context) if isinstance(obj.context, Context) else frozenset()
    if outer is None:
        return None
    return outer | loops_around(obj.site) if obj.site is not None else outer
