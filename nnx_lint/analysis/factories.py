"""Factories, a part of the class model: the class of what a project function or method returns.

``model = make_model(cfg)``, ``model, x, y = self._make_model_and_data(16)``,
``model = Model.create(cfg)`` and ``trainer = Trainer(model).with_loss(f)`` all name their
class only inside the function they call. :meth:`FactoryReturns.returned_class` reads it
there: the class every ``return`` gives (the whole value, or one position of a returned
tuple for an unpacking assignment), when every path agrees. A method's own ``self`` (or
``cls(...)`` in a class method) returned is the receiver's class, so a builder method that
returns ``self`` keeps the class of what it was called on.

Followed: plain project functions called by name (in this file or imported), and methods
called on ``self`` / ``cls`` of the enclosing class, on a class by name (class and static
methods), or on an object whose class the model knows. Anything else is unknown, and rules
stay silent on unknowns (audit mode reports them).

:class:`FactoryReturns` is a part of :class:`nnx_lint.analysis.classes.ClassModel`: it asks
:class:`~nnx_lint.analysis.class_hierarchy.ClassHierarchy` about classes and methods by name, and
:class:`~nnx_lint.analysis.expression_classes.ExpressionClasses` the class of a returned expression.
"""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from nnx_lint.analysis.annotations import parameter_annotation
from nnx_lint.analysis.call_sites import method_calls_in_other_files
from nnx_lint.analysis.class_hierarchy import ClassHierarchy
from nnx_lint.analysis.class_info import MAX_DEPTH, ClassRef, bind_arguments
from nnx_lint.analysis.expression_classes import ExpressionClasses
from nnx_lint.analysis.flow import bound_values, lookup
from nnx_lint.analysis.project import Project
from nnx_lint.base.file_memo import file_memo
from nnx_lint.base.node_index import nodes_of_class
from nnx_lint.flax_table.names import NNX_MODULE_BASES

_NESTED = (nodes.FunctionDef, nodes.Lambda, nodes.ClassDef)


@dataclass(frozen=True)
class Callee:
    """The project function or method a call runs."""

    function: nodes.FunctionDef
    #: For a method: the class it is called on (the receiver's, or the class named).
    receiver: ClassRef | None = None
    #: The receiver expression of an instance method call (``trainer`` in ``trainer.fit()``).
    instance: nodes.NodeNG | None = None


def returned_values(function: nodes.FunctionDef) -> list[nodes.NodeNG | None]:
    """The values of ``function``'s own ``return`` statements (None for a bare ``return``)."""
    return [node.value for node in nodes_of_class(function, nodes.Return, skip_klass=_NESTED)
            if node.scope() is function]


def method_kind(function: nodes.FunctionDef) -> str:
    """``"static"``, ``"class"`` or ``"instance"``: how a method binds its first parameter."""
    decorators = function.decorators.nodes if function.decorators else []
    names = {d.name for d in decorators if isinstance(d, nodes.Name)}
    return "static" if "staticmethod" in names else "class" if "classmethod" in names else "instance"


class FactoryReturns:
    """The class of what a call returns, a part of :class:`nnx_lint.analysis.classes.ClassModel`."""

    def __init__(self, hierarchy: ClassHierarchy, expressions: ExpressionClasses, project: Project) -> None:
        self.hierarchy = hierarchy
        self.expressions = expressions
        self.project = project

    def callee(self, call: nodes.Call, qualified_name: str | None = None, depth: int = 0) -> Callee | None:
        """The project function or method ``call`` runs (see the module's docstring), or None."""
        function = self.hierarchy.function_called(call, qualified_name)
        if function is not None:
            return Callee(function)
        func = call.func
        if not isinstance(func, nodes.Attribute):
            return None
        named = self._named_class(func.expr)
        if named is not None:  # `Model.create(cfg)`: a class or static method of a named class
            method = self.hierarchy.method_of(named.definition, func.attrname) if named.definition is not None else None
            if method is None or method_kind(method) == "instance":
                return None
            return Callee(method, named)
        receiver = self._receiver_class(func.expr, depth)
        if receiver is None or receiver.definition is None:
            return None
        method = self.hierarchy.method_of(receiver.definition, func.attrname)
        if method is None:
            return None
        return Callee(method, receiver, func.expr if method_kind(method) == "instance" else None)

    def method_parameter(self, name: nodes.Name) -> tuple[nodes.FunctionDef, str] | None:
        """``(method, parameter)`` when ``name`` reads a parameter of a method other than its
        ``self`` / ``cls`` (``model`` in ``def _train_step(self, model: nnx.Module, x)``)."""
        _scope, assignments = lookup(name)
        if len(assignments) != 1 or not isinstance(assignments[0], nodes.AssignName) \
                or not isinstance(assignments[0].parent, nodes.Arguments):
            return None
        method = assignments[0].parent.parent
        if not isinstance(method, nodes.FunctionDef) or not isinstance(method.parent, nodes.ClassDef):
            return None
        first = _first_parameter(method)
        return (method, name.name) if name.name != first else None

    def method_arguments(self, method: nodes.FunctionDef, parameter: str,
                         depth: int = 0) -> list[tuple[nodes.NodeNG, nodes.Call]]:
        """What the calls of ``method`` pass for ``parameter``: calls in its own module, then (for
        a parameter annotated only ``nnx.Module``) in the other project files that import it (:func:`~nnx_lint.analysis.call_sites.
        method_calls_in_other_files`), that the class model resolves to that very method
        (``self._train_step(self.model, ...)``, ``trainer._train_step(...)`` on a known class,
        ``Model.create(...)``), in source order. ``depth`` is how deep the question that asks this
        already is: resolving a call's receiver asks one level deeper, so two methods whose calls'
        receivers are each other's parameters end at ``MAX_DEPTH`` instead of recursing for ever."""
        found = []
        implicit_first = method_kind(method) != "static"
        calls = _attribute_calls(method.root()).get(method.name, [])
        if self._generic_parameter(method, parameter):
            # only for `model: nnx.Module`: reading other files for every method parameter a
            # rule asks about costs more than it finds (measured on maxtext: +25 % cold time)
            calls = [*calls, *method_calls_in_other_files(method, self.project)]
        for call in calls:
            if method.parent_of(call):
                continue  # a recursive call passes the parameter to itself
            callee = self.callee(call, depth=depth)
            if callee is None or callee.function is not method:
                continue
            argument = bind_arguments(method, call, skip_first=implicit_first).get(parameter)
            if argument is not None:
                found.append((argument, call))
        return found

    def _generic_parameter(self, method: nodes.FunctionDef, parameter: str) -> bool:
        """Whether ``parameter`` of ``method`` is annotated only as a Module (``nnx.Module``)."""
        annotated = self.hierarchy.annotated_class(parameter_annotation(method, parameter))
        return annotated is not None and annotated.qualified_name in NNX_MODULE_BASES

    def _receiver_class(self, expression: nodes.NodeNG, depth: int) -> ClassRef | None:
        """The class of what a method is called on: the enclosing class for the method's own
        ``self`` / ``cls``, else what the model knows of the expression (one level deeper:
        ``a = b.f()`` and ``b = a.g()`` in a loop must not ask about each other for ever)."""
        if isinstance(expression, nodes.Name):
            _scope, assignments = lookup(expression)
            if len(assignments) == 1 and isinstance(assignments[0], nodes.AssignName) \
                    and isinstance(assignments[0].parent, nodes.Arguments):
                method = assignments[0].parent.parent
                if isinstance(method, nodes.FunctionDef) and isinstance(method.parent, nodes.ClassDef) \
                        and method.args.args and method.args.args[0] is assignments[0] \
                        and method_kind(method) != "static":
                    return self.hierarchy.ref_of_definition(method.parent)
        return self.expressions.class_of(expression, depth + 1)

    def _named_class(self, expression: nodes.NodeNG) -> ClassRef | None:
        """The project class ``expression`` names (``Model`` in ``Model.create(...)``)."""
        if not isinstance(expression, (nodes.Name, nodes.Attribute)):
            return None
        if isinstance(expression, nodes.Name):
            local = self.hierarchy.local_class(expression)
            if local is not None:
                return local
        ref = self.hierarchy.resolve(self.hierarchy.resolver_for(expression).qualified_name(expression), at=expression)
        return ref if ref is not None and ref.definition is not None else None

    def returned_class(self, call: nodes.Call, position: int | None = None, depth: int = 0,
                       qualified_name: str | None = None) -> ClassRef | None:
        """The class of what ``call`` returns (``position``: of that element of the returned
        tuple), when every ``return`` of the function it runs gives one class."""
        if depth > MAX_DEPTH:
            return None
        callee = self.callee(call, qualified_name, depth)
        if callee is None:
            return None
        returns = returned_values(callee.function)
        if not returns:
            return None
        refs = set()
        for value in returns:
            if position is not None:
                value = _element(value, position)
            if value is None:
                return None
            refs.add(self._returned_value_class(callee, value, depth))
            if None in refs or len(refs) > 1:
                return None
        return refs.pop()

    def _returned_value_class(self, callee: Callee, value: nodes.NodeNG, depth: int) -> ClassRef | None:
        first = _first_parameter(callee.function)
        if first is not None and callee.receiver is not None:
            # `return self` (an instance method) and `return cls(...)` (a class method): the
            # receiver's class, a subclass the method's own class does not know about
            if isinstance(value, nodes.Name) and value.name == first and method_kind(callee.function) == "instance":
                return callee.receiver
            if isinstance(value, nodes.Call) and isinstance(value.func, nodes.Name) and value.func.name == first \
                    and method_kind(callee.function) == "class":
                return callee.receiver
        return self.expressions.class_of(value, depth + 1)

    def builder_receiver(self, call: nodes.Call, depth: int = 0) -> nodes.NodeNG | None:
        """For ``obj.with_x(...)`` where the instance method returns ``self`` on every path
        (a builder), the receiver ``obj``; the object is the one it was called on."""
        if depth > MAX_DEPTH or not isinstance(call.func, nodes.Attribute):
            return None
        callee = self.callee(call, depth=depth)
        if callee is None or callee.instance is None:
            return None
        first = _first_parameter(callee.function)
        returns = returned_values(callee.function)
        if returns and all(isinstance(v, nodes.Name) and v.name == first for v in returns):
            return callee.instance
        return None


#: Per module: its calls of attributes (``x.name(...)``) by the attribute's name.
_ATTRIBUTE_CALLS: dict = file_memo()


def _attribute_calls(module: nodes.Module) -> dict[str, list[nodes.Call]]:
    found = _ATTRIBUTE_CALLS.get(module)
    if found is None:
        found = _ATTRIBUTE_CALLS[module] = {}
        for call in nodes_of_class(module, nodes.Call):
            if isinstance(call.func, nodes.Attribute):
                found.setdefault(call.func.attrname, []).append(call)
    return found


def _first_parameter(function: nodes.FunctionDef) -> str | None:
    if not isinstance(function.parent, nodes.ClassDef) or method_kind(function) == "static":
        return None
    arguments = function.args.posonlyargs or function.args.args or []
    return arguments[0].name if arguments else None


def _element(value: nodes.NodeNG | None, position: int) -> nodes.NodeNG | None:
    """Element ``position`` of a returned tuple or list display (also through the one name
    bound to it), None when the return is not such a display."""
    if isinstance(value, nodes.Name):
        bound = bound_values(value)
        value = bound[0] if len(bound) == 1 else None
    if not isinstance(value, (nodes.Tuple, nodes.List)) or position >= len(value.elts):
        return None
    if any(isinstance(e, nodes.Starred) for e in value.elts[:position + 1]):
        return None
    return value.elts[position]
