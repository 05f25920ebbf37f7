"""Relations between the arguments of one call, followed into the callers.

``nnx.jit(train_step).lower(model, optimizer, x)`` inside ``def measure(model, optimizer, x)``
says nothing by itself: ``model`` and ``optimizer`` are parameters, two unknown objects.
Their relation is what the callers pass: ``optimizer = nnx.ModelAndOptimizer(model, tx)``
then ``measure(model, optimizer, x)`` makes ``optimizer`` hold ``model``, and the transform
sees one Module twice. :func:`argument_views` gives the arguments of a call as its own
function sees them, then as each caller of that function sees them (the parameters replaced
by what the call passes, in this file or another project file), and so on up to
:data:`MAX_CALLER_DEPTH` calls out. A rule asks its question (same object? one holds the
other?) of every view and names the calls a view went through.

:func:`held_items` answers "what does this argument hold?" for every value the identity
model can open: a construction (``nnx.ModelAndOptimizer(model, tx)``, a dataclass,
``flax.struct`` or NamedTuple holder, a project class storing its arguments) and a
container display (``{"model": model}``, ``[model, opt]``), through the one local name
bound to it.

Only plain functions called by name are followed (see :mod:`nnx_lint.call_sites`); a
parameter reached another way keeps its own opaque identity, and rules stay silent on it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint import bounds
from nnx_lint.call_sites import argument_for, calls_of
from nnx_lint.classes import Ref
from nnx_lint.flow import bound_values

if TYPE_CHECKING:
    from nnx_lint.engine import FileContext

#: How many calls out the views follow (``measure`` called by ``main`` called by a test).
MAX_CALLER_DEPTH = 2
#: At most this many callers of one function are followed (a helper called from everywhere
#: gets its relations from the first ones, in source order).
MAX_CALLS = 8
#: At most this many views per call.
MAX_VIEWS = 24
_CONTAINER_DISPLAYS = (nodes.Dict, nodes.List, nodes.Tuple)


@dataclass(frozen=True)
class ArgumentView:
    """A call's arguments as one context sees them."""

    #: Each argument's expression in this context: the caller's argument expression where a
    #: parameter was replaced, None where the argument is a part of one (``cfg.model``).
    expressions: tuple[nodes.NodeNG | None, ...]
    #: Each argument's identity in this context (None: unknown).
    refs: tuple[Ref | None, ...]
    #: The calls that replaced parameters, innermost first (empty: the call's own context).
    via: tuple[nodes.Call, ...] = ()


def argument_views(context: FileContext, expressions: list[nodes.NodeNG]) -> list[ArgumentView]:
    """The arguments ``expressions`` of one call in their own context, then in each caller's.

    A view is added for a caller only when it replaces at least one parameter by something
    the identity model knows; the first view is always the call's own.
    """
    classes = context.classes
    first = ArgumentView(tuple(expressions), tuple(classes.ref_of(e) for e in expressions))
    views, frontier = [first], [first]
    for _ in range(MAX_CALLER_DEPTH):
        following: list[ArgumentView] = []
        for view in frontier:
            following.extend(_in_callers(context, view))
        views.extend(following)
        frontier = following
        if not frontier or len(views) >= MAX_VIEWS:
            break
    return views[:MAX_VIEWS]


def _in_callers(context: FileContext, view: ArgumentView) -> list[ArgumentView]:
    """``view`` as each caller of the function whose parameters it reads sees it."""
    function = next((ref.root[1] for ref in view.refs if ref is not None and ref.origin == "param"), None)
    if not isinstance(function, nodes.FunctionDef) or len(view.refs) < 2:
        return []
    classes = context.classes
    found = []
    for call in calls_of(function, context.project)[:MAX_CALLS]:
        if _within(call, function):
            continue  # a recursive call: the same parameters again
        bounds.checkpoint("following arguments into the callers")
        expressions, refs, replaced = [], [], False
        for expression, ref in zip(view.expressions, view.refs):
            if ref is None or ref.origin != "param" or ref.root[1] is not function:
                expressions.append(expression)
                refs.append(ref)
                continue
            argument = argument_for(function, call, ref.root[2])
            base = classes.ref_of(argument) if argument is not None else None
            expressions.append(argument if not ref.path else None)
            refs.append(Ref(base.root, base.path + ref.path) if base is not None else None)
            replaced = replaced or base is not None
        if replaced:
            found.append(ArgumentView(tuple(expressions), tuple(refs), view.via + (call,)))
    return found


def held_items(context: FileContext, expression: nodes.NodeNG | None, ref: Ref | None
               ) -> tuple[nodes.NodeNG, list[tuple[tuple[str, ...], Ref | None]]] | None:
    """What the value ``expression`` (identity ``ref``) holds below itself: the construction
    or display that built it, and ``(path, ref)`` of each object stored in it. None when it
    was not built where the identity model can see (a parameter, an unknown call's result)."""
    built: nodes.NodeNG | None = None
    if ref is not None and ref.origin == "new" and not ref.path:
        built = ref.root[1]
    elif expression is not None:
        values = bound_values(expression) if isinstance(expression, nodes.Name) else [expression]
        if len(values) == 1 and isinstance(values[0], _CONTAINER_DISPLAYS):
            built = values[0]
    if built is None:
        return None
    items = [(path, held) for path, held, _container in context.classes.stored_items(built)[1:]]
    return built, items


def _within(node: nodes.NodeNG, scope: nodes.NodeNG) -> bool:
    parent = node.parent
    while parent is not None:
        if parent is scope:
            return True
        parent = parent.parent
    return False
