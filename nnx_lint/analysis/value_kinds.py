"""What kind of object a value or a class is, where several rules and services ask the same
question: does an expression hold an ``nnx.Rngs`` (or a stream of one), are a class's instances
NNX Modules. Each question has its one answer here; rules ask it through the value model
(``value_model(context).is_rngs(expression)``, ``.is_module_class(ref)``), and the Variable model
asks it too, so an improvement reaches the grad rules and the API rules alike."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.analysis.flow import lookup
from nnx_lint.analysis.objects import object_model
from nnx_lint.analysis.objects.abstract import RNGS, STREAM
from nnx_lint.analysis.refs import RNG_TYPES, names_rngs
from nnx_lint.flax_table.flax_layers import FLAX_LAYERS
from nnx_lint.flax_table.nnx_api import MODULE_CLASSES

if TYPE_CHECKING:
    from nnx_lint.analysis.class_info import ClassRef
    from nnx_lint.analysis.context import FileContext

#: The object-flow model's kinds for an ``Rngs`` and a stream of one.
_RNG_OBJECT_KINDS = frozenset({RNGS, STREAM})
#: How many attribute or item steps :func:`is_rngs` follows down to the Rngs (``self.rngs.dropout``).
_MAX_DEPTH = 4


def is_rngs(context: FileContext, expression: nodes.NodeNG, candidates: Callable[[nodes.NodeNG], list],
            depth: int = 0) -> bool:
    """The one answer to "does ``expression`` hold an ``nnx.Rngs``, a stream of one or an RNG
    Variable?", for every rule that asks (what a Module holds for the grad rules, the random
    methods ``nnx.tabulate`` wraps, ...):

    - a call: of an RNG class (``nnx.Rngs(0)``, a project subclass of ``nnx.Rngs``);
    - a parameter: the class model's answer (its class, else the naming convention:
      ``parameter_is_rngs``), else what the object-flow model says its callers pass;
    - another name: its class;
    - an attribute or item: a stream of an Rngs (``rngs.dropout``, ``rngs['dropout']``); else,
      for an attribute, its own class, else the object-flow model's objects, else the naming
      convention (``self.rngs``, ``self.dropout_rngs``, ``self.rngs.dropout``).

    ``candidates``: the value model's classes of an expression (``ValueModel.candidates``, which
    asks this module: passed in, not imported).
    """
    classes = context.classes
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expression, nodes.Call):
        return context.qualified_name(expression.func) in RNG_TYPES \
            or is_rng_class(context, classes.class_of(expression))
    if isinstance(expression, nodes.Name):
        _scope, bindings = lookup(expression)
        parameters = [b for b in bindings if isinstance(b, nodes.AssignName) and isinstance(b.parent, nodes.Arguments)]
        if parameters and classes.parameter_is_rngs(parameters[0].parent.parent, expression.name):
            return True
        if is_rng_class(context, classes.class_of(expression)):
            return True
        # a parameter the class model knows nothing of: what only its callers know
        return bool(bindings) and len(parameters) == len(bindings) and any(
            o.kind in _RNG_OBJECT_KINDS for o in object_model(context).objects(expression))
    if isinstance(expression, nodes.Subscript):
        return is_rngs(context, expression.value, candidates, depth + 1)
    if not isinstance(expression, nodes.Attribute):
        return False
    if is_rngs(context, expression.expr, candidates, depth + 1):
        return True
    known = candidates(expression)
    if known:
        return any(is_rng_class(context, candidate.ref) for candidate in known)
    found = object_model(context).objects(expression)
    if found:
        return any(o.kind in _RNG_OBJECT_KINDS for o in found)
    return names_rngs(expression.attrname) or (
        isinstance(expression.expr, nodes.Attribute) and names_rngs(expression.expr.attrname))


def is_rng_class(context: FileContext, ref: ClassRef | None) -> bool:
    """Whether instances of ``ref`` hold RNG state: ``nnx.Rngs``, a stream, an RNG Variable, or a
    project subclass of one (the class model's kinds)."""
    return ref is not None and (ref.qualified_name in RNG_TYPES or context.classes.class_kind(ref) == "rngs")


def is_module_class(context: FileContext, ref: ClassRef | None) -> bool:
    """Whether instances of ``ref`` are NNX Modules for certain: a flax Module class of the flax
    table (``nnx.Linear``, or a project class deriving from one) or a project class deriving from
    ``nnx.Module`` / ``nnx.Pytree``. An unknown class is not."""
    if ref is None:
        return False
    return context.classes.is_instance_of(ref, MODULE_CLASSES) or (
        ref.definition is not None and context.classes.info(ref.definition).is_nnx_module)


def may_hold_a_module(context: FileContext, ref: ClassRef) -> bool:
    """Whether an instance of ``ref`` may hold another Module below itself: a flax layer whose
    table entry has children (``nnx.Sequential``), one the table does not list, or a project
    class with a store of a Module or of a value the class model cannot tell. A flax layer that
    holds none (``nnx.Linear``), or a project class storing none, has only itself."""
    if ref.definition is None:
        spec = FLAX_LAYERS.get(ref.qualified_name)
        return spec is None or bool(spec.children or spec.all_positional)
    classes = context.classes
    return any(store.value is None or classes.kind_of(classes.ref_of(store.value)) == "module"
               for store in classes.info(ref.definition).stores)
