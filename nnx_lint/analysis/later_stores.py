"""What is stored onto an object after it is built, where it is used.

A class's holdings come from its ``__init__``. Code also stores onto an object from the
outside once it exists, and the object then holds that value too:

- ``model.rngs = nnx.Rngs(1)`` and ``setattr(model, "rngs", nnx.Rngs(1))``;
- ``model.set_attributes(noise_rngs=nnx.Rngs(0))``: flax's ``Module.set_attributes``
  sets the attribute on the Module and on every nested Module that has it (google/qwix
  hands LoRA dropout RNGs to its layers this way).

Measured with flax 0.12.8: an ``nnx.Rngs`` stored any of these ways makes ``nnx.grad``
over the whole Module raise ``TypeError: grad requires real- or complex-valued inputs`` in
Tree Mode (the RNG counter is an integer), while graph mode differentiates the Params only.

The object is followed by name: the statements of the scope that binds the name, the plain
functions of the same file it is passed to (``attach_rngs(model)``), and, for a parameter, the
arguments its callers pass (in this file or another project file), a few calls deep. Only stores in the same scope as the binding and before the use count (a store
inside a nested function may never run).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from astroid import nodes

from nnx_lint.analysis.call_sites import argument_for, calls_of, parameter_of
from nnx_lint.analysis.class_info import self_store
from nnx_lint.analysis.flow import lookup
from nnx_lint.base.node_index import nodes_of_class

if TYPE_CHECKING:
    from nnx_lint.analysis.project import Project

#: How many callers deep a parameter is followed.
_MAX_DEPTH = 3


class LaterStore(NamedTuple):
    """One value stored onto the object after its construction."""

    #: The attribute's name (for ``set_attributes``, the name on whichever nested Module has it).
    attribute: str
    value: nodes.NodeNG
    #: The statement or call that stores it.
    node: nodes.NodeNG


def stores_onto(expression: nodes.NodeNG, project: Project | None = None, depth: int = 0) -> list[LaterStore]:
    """The values stored onto the object ``expression`` denotes after it was built."""
    if not isinstance(expression, nodes.Name) or depth > _MAX_DEPTH:
        return []
    found = parameter_of(expression)
    if found is not None:
        function, parameter = found
        if isinstance(function.parent, nodes.ClassDef) and function.args.args \
                and function.args.args[0].name == parameter:
            return []  # `self`: what a method stores on its own object is the class's business
        stores: list[LaterStore] = []
        for call in calls_of(function, project):
            argument = argument_for(function, call, parameter)
            if argument is not None:
                stores.extend(stores_onto(argument, project, depth + 1))
        return stores
    _scope, bindings = lookup(expression)
    if not bindings:
        return []
    return [LaterStore(found.attribute, found.value, found.node)
            for found in _stores_in_scope(expression.scope(), expression.name)
            if (found.node.lineno or 0) <= (expression.lineno or 0) and set(lookup(found.name_node)[1]) == set(bindings)]


class _Found(NamedTuple):
    attribute: str
    value: nodes.NodeNG
    node: nodes.NodeNG
    name_node: nodes.Name


def _stores_in_scope(scope: nodes.NodeNG, name: str, depth: int = 0) -> list[_Found]:
    found: list[_Found] = []
    for node in nodes_of_class(scope, (nodes.Assign, nodes.Call), skip_klass=(nodes.FunctionDef, nodes.Lambda, nodes.ClassDef)):
        if node.scope() is not scope:
            continue
        if isinstance(node, nodes.Assign):
            for target in node.targets:
                if isinstance(target, nodes.AssignAttr) and isinstance(target.expr, nodes.Name) and target.expr.name == name:
                    found.append(_Found(target.attrname, node.value, node, target.expr))
            continue
        func = node.func
        if isinstance(func, nodes.Attribute) and func.attrname == "set_attributes" \
                and isinstance(func.expr, nodes.Name) and func.expr.name == name:
            found.extend(_Found(keyword.arg, keyword.value, node, func.expr)
                         for keyword in node.keywords or [] if keyword.arg and keyword.arg != "raise_if_not_found")
        elif (stored := self_store(node, name)) is not None:  # setattr(name, "attribute", value)
            (attribute,), value = stored
            found.append(_Found(attribute, value, node, node.args[0]))
        elif depth < _MAX_DEPTH:
            found.extend(_stores_by_helper(node, name, depth))
    return found


def _stores_by_helper(call: nodes.Call, name: str, depth: int) -> list[_Found]:
    """``attach_rngs(model)``: the stores a plain function of this file makes onto the
    parameter that receives ``name``, each counted at this call (where the object gets the
    value); a stored parameter of the helper stands for the argument this call passes."""
    passed = next((argument for argument in [*call.args, *(k.value for k in call.keywords or [])]
                   if isinstance(argument, nodes.Name) and argument.name == name), None)
    if passed is None or not isinstance(call.func, nodes.Name):
        return []
    _scope, definitions = lookup(call.func)
    if len(definitions) != 1 or not isinstance(definitions[0], nodes.FunctionDef) \
            or isinstance(definitions[0].parent, nodes.ClassDef):
        return []
    helper = definitions[0]
    parameter = next((p for p in helper.argnames() if argument_for(helper, call, p) is passed), None)
    if parameter is None:
        return []
    found = []
    for inner in _stores_in_scope(helper, parameter, depth + 1):
        value = inner.value
        if isinstance(value, nodes.Name) and value.name in helper.argnames():
            value = argument_for(helper, call, value.name) or value
        found.append(_Found(inner.attribute, value, call, passed))
    return found
