"""Transforms applied to a bound method: ``nnx.jit(obj.method)(...)``.

What flax 0.12.8 does (measured in both modes, ``_resolve_bound_callable``):

* ``obj`` an NNX Module (``nnx.jit(model.step)``, ``nnx.grad(self.loss)``): every function
  transform raises ``ValueError: nnx.jit does not support bound methods`` before tracing,
  in graph mode and in Tree Mode alike. The flip changes nothing there, so no rule reports
  it: the transform counts as one the flip leaves as it is, and its method is not traced.
* ``Model.step`` (the method taken from the class, what flax's error message suggests):
  the call passes the Module as ``self`` (``nnx.jit(Model.step)(model, x)``).
* ``obj`` any other object (a plain ``Trainer``, a dataclass): the method is traced with
  ``obj`` closed over and the call's arguments bound to the parameters after ``self``
  (``nnx.jit(trainer.forward)(model, x)``: ``model`` is ``forward``'s ``model``). The rules
  see the method as the transformed function (:mod:`nnx_lint.analysis.transforms`), with ``self``
  of the object's class.

Unknown objects are not assumed to be Modules: the method is then treated as any other
transformed function, as before.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.analysis.flow import class_definitions, lookup
from nnx_lint.flax_table.names import NNX_PREFIX

if TYPE_CHECKING:
    from nnx_lint.analysis.context import FileContext

_NOT_INSTANCE_METHODS = frozenset({"staticmethod", "classmethod", "property"})


def is_bound_module_method(context: FileContext, expression: nodes.NodeNG | None) -> bool:
    """Whether ``expression`` is ``obj.method`` with ``obj`` a known NNX Module instance and
    ``method`` an instance method of its class (``Model.method``, the class itself, is not)."""
    if not isinstance(expression, nodes.Attribute) or _is_class(expression.expr):
        return False
    classes = context.classes
    owner = classes.class_of_self(expression.expr)
    if owner is None:
        return False
    if owner.definition is None:
        # flax's own Modules (``linear.__call__``): a method, as long as it is not an attribute read
        return owner.qualified_name.startswith(NNX_PREFIX) and expression.attrname == "__call__" \
            and classes.class_kind(owner) == "module"
    if not classes.info(owner.definition).is_nnx_module:
        return False
    method = _method(classes, owner.definition, expression.attrname)
    return method is not None and not any(
        (decorator.name if isinstance(decorator, nodes.Name) else getattr(decorator, "attrname", None))
        in _NOT_INSTANCE_METHODS for decorator in (method.decorators.nodes if method.decorators else []))


def unbound_method_class(expression: nodes.NodeNG) -> nodes.ClassDef | None:
    """The class in ``Model.step`` (the method taken from the class: the transformed call
    passes ``self`` first), when ``Model`` names exactly one class definition."""
    if not isinstance(expression, nodes.Attribute) or not isinstance(expression.expr, nodes.Name) \
            or not class_definitions(expression.expr):
        return None
    _scope, assignments = lookup(expression.expr)
    return assignments[0] if len(assignments) == 1 else None  # the one binding, a class


def passes_self(entry_node: nodes.NodeNG, function: nodes.NodeNG) -> bool:
    """Whether the transform call ``entry_node`` (``nnx.jit(Model.step)``) transforms the
    method ``function`` taken from its class, so that the call's first argument is ``self``."""
    if not isinstance(entry_node, nodes.Call) or not isinstance(function, nodes.FunctionDef):
        return False
    candidates = [*entry_node.args, *(entry_node.func.args if isinstance(entry_node.func, nodes.Call) else [])]
    return any(isinstance(a, nodes.Attribute) and a.attrname == function.name and unbound_method_class(a) is not None
               for a in candidates)


def _method(classes, classdef: nodes.ClassDef, name: str, depth: int = 0) -> nodes.FunctionDef | None:
    found = classdef.locals.get(name)
    if found:
        return found[-1] if isinstance(found[-1], (nodes.FunctionDef, nodes.AsyncFunctionDef)) else None
    if depth > 6:
        return None
    for base in classes.info(classdef).bases:
        if base.definition is not None:
            method = _method(classes, base.definition, name, depth + 1)
            if method is not None:
                return method
    return None


def _is_class(expression: nodes.NodeNG) -> bool:
    return isinstance(expression, nodes.Name) and bool(class_definitions(expression))
