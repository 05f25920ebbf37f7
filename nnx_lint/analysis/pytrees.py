"""Which project classes make objects that are not pytrees: declared ``pytree=False``, or deriving
from ``nnx.Object`` or ``nnx.bridge.Module`` (each name from the flax table). Tree Mode flattens
objects as pytrees, so an NNX API given one of these raises; NNX704 asks it through the value
model (``value_model(context).not_pytree(class_ref)``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.analysis.calls import constant_bool
from nnx_lint.analysis.names import base_classes
from nnx_lint.flax_table.names import BRIDGE_MODULES, NNX_OBJECT

if TYPE_CHECKING:
    from nnx_lint.analysis.class_info import ClassRef
    from nnx_lint.analysis.context import FileContext

#: How many bases up the hierarchy (in the class's own file) are looked at.
_MAX_DEPTH = 6


def not_pytree_reason(context: FileContext, classdef: nodes.ClassDef, depth: int = 0,
                      inherited: bool = False) -> str | None:
    """Why instances of the project class ``classdef`` are not pytrees (``declared with
    pytree=False``, ``an nnx.Object subclass``, ``an nnx.bridge.Module subclass``), or None. A
    base class in the same file is looked into for the bases it names (``pytree=False`` itself is
    not inherited: a subclass that does not repeat it is a pytree, measured with flax 0.12.8)."""
    if depth > _MAX_DEPTH:
        return None
    if not inherited:
        for keyword in classdef.keywords or []:
            if keyword.arg == "pytree" and constant_bool(keyword.value) is False:
                return "declared with pytree=False"
    for base in base_classes(classdef):
        name = context.qualified_name(base)
        if name in BRIDGE_MODULES:
            return "an nnx.bridge.Module subclass"
        if name == NNX_OBJECT:
            return "an nnx.Object subclass"
    for ref in context.classes.info(classdef).bases:
        if ref.definition is not None and ref.definition.root() is classdef.root():
            reason = not_pytree_reason(context, ref.definition, depth + 1, inherited=True)
            if reason is not None:
                return reason
    return None


def not_pytree_part(context: FileContext, ref: ClassRef, levels: int = 2,
                    path: tuple[str, ...] = ()) -> tuple[str, str, str | None] | None:
    """``(class name, reason, part)`` when an instance of the project class ``ref`` is not a
    pytree (``part`` None), or holds one that is not, stored by its ``__init__`` up to ``levels``
    levels down (``part``: the attribute path to it, ``"encoder.legacy"``): Tree Mode flattens the
    whole tree and raises at that part too. ``levels=0`` looks at the object itself only (the
    APIs that visit one level, ``nnx.iter_children``)."""
    if ref.definition is None:
        return None
    reason = not_pytree_reason(context, ref.definition)
    if reason is not None:
        return ref.short_name, reason, ".".join(path) if path else None
    if levels <= 0:
        return None
    classes = context.classes
    for store in classes.info(ref.definition).stores:
        inner = classes.class_of(store.value)
        if inner is not None and inner.definition is not None and inner.definition is not ref.definition:
            found = not_pytree_part(context, inner, levels - 1, (*path, store.path))
            if found is not None:
                return found
    return None
