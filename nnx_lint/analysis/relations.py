"""Relations between the arguments of one call, followed into the callers.

``nnx.jit(train_step).lower(model, optimizer, x)`` inside ``def measure(model, optimizer, x)``
says nothing by itself: ``model`` and ``optimizer`` are parameters, two unknown objects.
Their relation is what the callers pass: ``optimizer = nnx.ModelAndOptimizer(model, tx)``
then ``measure(model, optimizer, x)`` makes ``optimizer`` hold ``model``, and the transform
sees one Module twice. :func:`argument_views` gives the arguments of a call as its own
function sees them, then as each caller of that function sees them (the parameters replaced
by what the call passes, in this file or another project file), and so on up to
:data:`MAX_CALLER_DEPTH` calls out; names unpacked from one call of a project function
(``model, optimizer = make(tx)``) are also seen as what that function returns. A rule asks its question (same object? one holds the
other?) of every view and names the calls a view went through.

:func:`held_items` answers "what does this argument hold?" for every value the identity
model can open: a construction (``nnx.ModelAndOptimizer(model, tx)``, a dataclass,
``flax.struct`` or NamedTuple holder, a project class storing its arguments) and a
container display (``{"model": model}``, ``[model, opt]``), through the one local name
bound to it.

Only plain functions called by name are followed (see :mod:`nnx_lint.analysis.call_sites`); a
parameter reached another way keeps its own opaque identity, and rules stay silent on it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.base import bounds
from nnx_lint.flax_table import nnx_api
from nnx_lint.analysis.call_sites import argument_for, calls_of
from nnx_lint.analysis.factories import returned_values
from nnx_lint.analysis.refs import Ref
from nnx_lint.analysis.flow import bound_values, unpacked_binding

if TYPE_CHECKING:
    from nnx_lint.analysis.context import FileContext

#: Package roots whose calls :func:`opaque_builder` never counts: flax's own calls are modelled
#: (``nnx.ModelAndOptimizer`` holds its model, ``nnx.Optimizer`` does not), and the numeric
#: libraries build arrays and transformations, never a holder of a Module.
_KNOWN_ROOTS = nnx_api.EXTERNAL_PACKAGES | {"builtins", "typing", "functools", "dataclasses", "copy", "math"}
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
    #: For a view inside a project function's return (``model, opt = make(...)``): that
    #: function's parameters -> what the call passes (:meth:`ClassModel.ref_of`'s form).
    substitutions: dict | None = None


def argument_views(context: FileContext, expressions: list[nodes.NodeNG]) -> list[ArgumentView]:
    """The arguments ``expressions`` of one call in their own context, then in each caller's.

    A view is added for a caller only when it replaces at least one parameter by something
    the identity model knows; the first view is always the call's own.
    """
    classes = context.classes
    first = ArgumentView(tuple(expressions), tuple(classes.ref_of(e) for e in expressions))
    views, frontier = [first, *_returned_views(context, first)], [first]
    for _ in range(MAX_CALLER_DEPTH):
        following: list[ArgumentView] = []
        for view in frontier:
            following.extend(_in_callers(context, view))
        views.extend(following)
        views.extend(returned for view in following for returned in _returned_views(context, view))
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
        if function.parent_of(call):
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


def _returned_views(context: FileContext, view: ArgumentView) -> list[ArgumentView]:
    """``view`` with the arguments unpacked from one call of a project function (``model,
    optimizer = make(tx)``) replaced by what that function returns at their positions, its
    parameters standing for the call's arguments. One view per such call: the objects one
    evaluation returns are related, those of two evaluations are not."""
    classes = context.classes
    found = []
    for call in dict.fromkeys(unpacked[0] for e in view.expressions
                              if isinstance(e, nodes.Name) and (unpacked := unpacked_binding(e)) is not None
                              and isinstance(unpacked[0], nodes.Call)):
        returned = _returned_tuple(context, call)
        if returned is None:
            continue
        function, elements = returned
        substitutions = _bound_parameters(context, function, call)
        expressions, refs = list(view.expressions), list(view.refs)
        for position, expression in enumerate(view.expressions):
            unpacked = unpacked_binding(expression) if isinstance(expression, nodes.Name) else None
            if unpacked is None or unpacked[0] is not call or unpacked[1] >= len(elements):
                continue
            element = elements[unpacked[1]]
            expressions[position] = element
            refs[position] = classes.ref_of(element, substitutions)
        found.append(ArgumentView(tuple(expressions), tuple(refs), view.via, substitutions))
    return found


def _returned_tuple(context: FileContext, call: nodes.Call) -> tuple[nodes.FunctionDef, list[nodes.NodeNG]] | None:
    """The project function ``call`` calls and the elements of the tuple it returns, when it
    has one ``return`` statement, of a tuple display."""
    function = context.classes.function_called(call)
    if function is None:
        return None
    returns = returned_values(function)
    if len(returns) != 1 or not isinstance(returns[0], (nodes.Tuple, nodes.List)):
        return None
    elements = returns[0].elts
    return (function, elements) if not any(isinstance(e, nodes.Starred) for e in elements) else None


def held_items(context: FileContext, expression: nodes.NodeNG | None, ref: Ref | None,
               substitutions: dict | None = None
               ) -> tuple[nodes.NodeNG, list[tuple[tuple[str, ...], Ref | None]]] | None:
    """What the value ``expression`` (identity ``ref``) holds below itself: the construction
    or display that built it, and ``(path, ref)`` of each object stored in it. None when it
    was not built where the identity model can see (a parameter, an unknown call's result).

    A project function returning one construction (``def make_optimizer(model): return
    nnx.ModelAndOptimizer(model, tx)``) builds what that construction holds, its parameters
    standing for the call's arguments. ``substitutions``: the same for a value that is itself
    inside a returned tuple (:attr:`ArgumentView.substitutions`)."""
    classes = context.classes
    built: nodes.NodeNG | None = None
    if ref is not None and ref.origin == "new" and not ref.path:
        built = ref.root[1]
    elif expression is not None:
        values = bound_values(expression) if isinstance(expression, nodes.Name) else [expression]
        if len(values) == 1 and isinstance(values[0], _CONTAINER_DISPLAYS):
            built = values[0]
    if built is None:
        return None
    if isinstance(built, nodes.Call) and (made := _returned_construction(context, built)) is not None:
        built, substitutions = made
    items = [(path, held) for path, held, _container in classes.stored_items(built, substitutions)[1:]]
    return built, items


def _returned_construction(context: FileContext, call: nodes.Call) -> tuple[nodes.Call, dict] | None:
    """The one construction a project function called by ``call`` returns, with its
    parameters standing for ``call``'s arguments."""
    classes = context.classes
    function = classes.function_called(call)
    if function is None:
        return None
    returns = returned_values(function)
    if len(returns) != 1 or not isinstance(returns[0], nodes.Call) or classes.function_called(returns[0]) is not None:
        return None
    return returns[0], _bound_parameters(context, function, call)


def _bound_parameters(context: FileContext, function: nodes.FunctionDef, call: nodes.Call) -> dict:
    """``(function, parameter) -> ref`` of what ``call`` passes for each parameter (None: unknown)."""
    found = {}
    for parameter in function.args.args or []:
        argument = argument_for(function, call, parameter.name)
        found[(function, parameter.name)] = context.classes.ref_of(argument) if argument is not None else None
    return found


@dataclass(frozen=True)
class OpaqueBuilder:
    """A value built by a call whose code the analysis cannot read (see :func:`opaque_builder`)."""

    call: nodes.Call
    #: The callee as written (``make_optimizer``).
    callee: str
    #: True: a name imported from a package outside the project; False: a callable the
    #: analysis cannot follow (a parameter, a computed callable).
    outside: bool
    #: What the call is given whose identity is known: ``(argument, ref)``.
    passed: tuple[tuple[nodes.NodeNG, Ref], ...]


def opaque_builder(context: FileContext, expression: nodes.NodeNG | None) -> OpaqueBuilder | None:
    """The call that built ``expression`` (itself, or the one value a name is bound to) when
    the analysis cannot see what the result keeps: not a project function, method or class,
    nor flax's or a numeric library's (``optimizer = make_optimizer(model)`` with
    ``make_optimizer`` imported from another package). Its result may hold what it is given:
    audit mode reports the arguments of a transform that may alias through it."""
    values = bound_values(expression) if isinstance(expression, nodes.Name) else [expression]
    if len(values) != 1 or not isinstance(values[0], nodes.Call):
        return None
    call = values[0]
    classes = context.classes
    name = classes.resolver_for(call).qualified_name(call.func)
    if name and name.split(".")[0] in _KNOWN_ROOTS:
        return None
    if classes.callee(call, name) is not None or classes.class_of(call) is not None:
        return None  # the project's own code: held_items and the class model read it
    if isinstance(call.func, nodes.Attribute) and classes.ref_of(call.func.expr) is not None:
        return None  # a method of an object at hand (`model.split(...)`): not a builder from outside
    outside = bool(name)
    passed = []
    for argument in [*call.args, *[k.value for k in call.keywords or []]]:
        ref = classes.ref_of(argument.value if isinstance(argument, nodes.Starred) else argument)
        if ref is not None:
            passed.append((argument, ref))
    return OpaqueBuilder(call, call.func.as_string(), outside, tuple(passed)) if passed else None

