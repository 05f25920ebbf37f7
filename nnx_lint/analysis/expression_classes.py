"""The class of an expression, a part of the class model: what the code says an expression is
an instance of — a constructor call, an annotation, a plain assignment, a stored attribute, a
``nnx.merge`` of what was split, what a factory returns — and, for an unannotated parameter,
the classes this file's (and the project's) calls pass for it. Unknown is None: rules stay
silent on unknowns.

:class:`ExpressionClasses` is a part of :class:`nnx_lint.analysis.classes.ClassModel`. It asks
:class:`~nnx_lint.analysis.class_hierarchy.ClassHierarchy` about classes by name, and
:class:`~nnx_lint.analysis.factories.FactoryReturns` what calls return (which asks back the
class of the returned expressions: the two are wired to each other, :meth:`ExpressionClasses.connect`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.analysis.annotations import binding_annotation
from nnx_lint.analysis.call_sites import argument_for, calls_of, parameter_of
from nnx_lint.analysis.class_hierarchy import ClassHierarchy
from nnx_lint.analysis.class_info import MAX_DEPTH, ClassRef, Store, bind_arguments, is_static_method
from nnx_lint.analysis.flow import bound_values, default_fallback, lookup, unpacked_binding
from nnx_lint.analysis.project import Project
from nnx_lint.flax_table.names import CLASS_PRESERVING_CALLS, NNX_MODULE_BASES

if TYPE_CHECKING:
    from nnx_lint.analysis.factories import FactoryReturns


class ExpressionClasses:
    """Which class an expression has (a part of the class model); memoised per file."""

    def __init__(self, hierarchy: ClassHierarchy, project: Project) -> None:
        self.hierarchy = hierarchy
        self.project = project
        #: What a call returns: set by :meth:`connect` (it asks this part back).
        self.factories: FactoryReturns | None = None
        #: Memoised answers (every call-site rule asks about every call): the classes of
        #: expressions asked at depth 0, of receivers, and of what callers pass.
        self._classes_of: dict[nodes.NodeNG, ClassRef | None] = {}
        self._classes_of_self: dict[nodes.NodeNG, ClassRef | None] = {}
        self._call_site_classes: dict[tuple[nodes.NodeNG, str, int], tuple[tuple[ClassRef, nodes.Call], ...]] = {}

    def connect(self, factories: FactoryReturns) -> None:
        """Wire the part that answers what a call returns (built after this one: it asks this
        part the class of what is returned)."""
        self.factories = factories

    # -- typing expressions -------------------------------------------------------------
    def class_of(self, expression: nodes.NodeNG | None, depth: int = 0) -> ClassRef | None:
        """The class ``expression`` is known to evaluate to an instance of, or None."""
        if expression is None or depth > MAX_DEPTH:
            return None
        if depth == 0:  # a depth-0 answer depends on the expression alone: memoised
            if expression not in self._classes_of:
                self._classes_of[expression] = self._class_of(expression, 0)
            return self._classes_of[expression]
        return self._class_of(expression, depth)

    def _class_of(self, expression: nodes.NodeNG, depth: int) -> ClassRef | None:
        if isinstance(expression, nodes.Call):
            if self.hierarchy.nnx_name(expression) == "merge" and len(expression.args) >= 2:
                # the class of what was split to make the state, else to make the GraphDef
                return self._class_of_merged(expression.args[1], None, depth) \
                    or self._class_of_merged(expression.args[0], None, depth, graphdef=True)
            name = self.hierarchy.resolver_for(expression).qualified_name(expression.func)
            carried = CLASS_PRESERVING_CALLS.get(name or "")
            if carried is not None:
                # nnx.clone(m) / nnx.view(m) / nnx.fori_loop(..., m) / nnx.while_loop(..., m): m's class
                argument = expression.args[carried] if len(expression.args) > carried else None
                return self.class_of(argument, depth + 1)
            return (self.hierarchy.resolve(name, at=expression) or self.hierarchy.local_class(expression.func)
                    or self.factories.returned_class(expression, None, depth, name))
        if isinstance(expression, nodes.Name):
            annotated = self.annotated_class_of(expression)
            if annotated is not None and annotated.qualified_name in NNX_MODULE_BASES:
                # `model: nnx.Module` says only "a Module": the callers may say which one
                return self.hierarchy.narrowed(annotated, self._class_from_call_sites(expression, depth))
            if annotated is not None:
                return annotated
            values = bound_values(expression)
            if not values:
                unpacked = self._unpacked_merge(expression)
                if unpacked is not None:  # `model, optimizer = nnx.merge(graphdef, state)`
                    merge, position = unpacked
                    return self._class_of_merged(merge.args[1], position, depth)
                unpacked = unpacked_binding(expression)
                if unpacked is not None and isinstance(unpacked[0], nodes.Call):
                    # `model, x, y = self._make_model_and_data(16)`: what the factory returns there
                    return self.factories.returned_class(unpacked[0], unpacked[1], depth)
                return self._class_from_call_sites(expression, depth)
            refs = {self.class_of(value, depth + 1) for value in values}
            refs.discard(None)
            return refs.pop() if len(refs) == 1 else None
        if isinstance(expression, (nodes.IfExp, nodes.BoolOp)):
            # `model if model is not None else Model(...)`: the class the default path uses
            fallback = default_fallback(expression)
            return self.class_of(fallback, depth + 1) if fallback is not None else None
        if isinstance(expression, nodes.Attribute):
            owner = self.class_of_self(expression.expr)
            if owner is not None and owner.definition is not None:
                values = {
                    self._stored_class(store, expression.expr, owner.definition, depth)
                    for store in self.hierarchy.info(owner.definition).stores_of(expression.attrname)
                }
                values.discard(None)
                return values.pop() if len(values) == 1 else None
        return None

    def _class_of_merged(self, state: nodes.NodeNG, position: int | None, depth: int,
                         graphdef: bool = False) -> ClassRef | None:
        """The class ``nnx.merge(graphdef, state, ...)`` rebuilds: that of the object whose
        ``nnx.split`` made ``state`` (or, with ``position``, of element ``position`` of the
        tuple or list that was split), when every split that reaches ``state`` agrees.
        ``graphdef``: ``state`` is the GraphDef argument (``nnx.split``'s first result, or
        ``nnx.graphdef(x)``)."""
        refs = set()
        for split in self._split_arguments(state, depth, graphdef):
            if position is not None:
                values = bound_values(split) if isinstance(split, nodes.Name) else [split]
                if len(values) != 1 or not isinstance(values[0], (nodes.Tuple, nodes.List)) \
                        or position >= len(values[0].elts):
                    return None
                split = values[0].elts[position]
            refs.add(self.class_of(split, depth + 1))
        return refs.pop() if len(refs) == 1 else None

    def _split_arguments(self, state: nodes.NodeNG, depth: int, graphdef: bool = False) -> list[nodes.NodeNG]:
        """What was split to make ``state``: ``x`` for a state group bound by ``graphdef,
        state = nnx.split(x, ...)``, also through the callers of a function that takes ``state``
        as a parameter (``step(graphdef, state)``); with ``graphdef``, for a GraphDef this scope
        binds by ``nnx.split`` or ``nnx.graphdef(x)``."""
        if not isinstance(state, nodes.Name) or depth > MAX_DEPTH:
            return []
        split = self.split_making(state, graphdef=graphdef)
        if split is not None:
            return [split.args[0]]
        if graphdef:
            # only where this scope binds it: the callers were already asked about the state
            values = bound_values(state)
            if len(values) == 1 and isinstance(values[0], nodes.Call) \
                    and self.hierarchy.nnx_name(values[0]) == "graphdef" \
                    and values[0].args:
                return [values[0].args[0]]
            return []
        found = parameter_of(state)
        if found is None:
            return []
        function, parameter = found
        arguments = []
        for call in calls_of(function, self.project):
            argument = argument_for(function, call, parameter)
            # (a recursive call passes the parameter to itself)
            if argument is not None and not function.parent_of(argument):
                arguments.extend(self._split_arguments(argument, depth + 1))
        return arguments

    def split_making(self, name: nodes.Name, *, graphdef: bool = False) -> nodes.Call | None:
        """The ``nnx.split(x, ...)`` call when ``name`` is bound (only) to one of its state
        groups by ``graphdef, state = nnx.split(x)`` (with ``graphdef``: to its GraphDef)."""
        unpacked = unpacked_binding(name)
        if unpacked is None:
            return None
        value, position = unpacked
        if isinstance(value, nodes.Call) and value.args and (position == 0 if graphdef else position >= 1) \
                and self.hierarchy.nnx_name(value) == "split":
            return value
        return None

    def _unpacked_merge(self, name: nodes.Name) -> tuple[nodes.Call, int] | None:
        """``(merge call, position)`` when ``name`` is bound only by unpacking an
        ``nnx.merge(graphdef, state)`` (``model, optimizer = nnx.merge(graphdef, state)``)."""
        unpacked = unpacked_binding(name)
        if unpacked is None:
            return None
        value, position = unpacked
        if isinstance(value, nodes.Call) and self.hierarchy.nnx_name(value) == "merge" and len(value.args) >= 2:
            return value, position
        return None

    def _stored_class(self, store: Store, holder: nodes.NodeNG, owner: nodes.ClassDef,
                      depth: int) -> ClassRef | None:
        """The class of a stored value; a constructor argument stored as it is (``self.model
        = model``) has the class of what the construction of ``holder`` passes
        (``Bundle(net).model``)."""
        found = self.class_of(store.value, depth + 1)
        if (found is not None and found.qualified_name not in NNX_MODULE_BASES) \
                or not isinstance(store.value, nodes.Name):
            return found
        generic = found  # `self.model = model` with `model: nnx.Module`: the construction may say which
        argument = self._constructor_argument(store, holder, owner, depth)
        passed = self.class_of(argument, depth + 1) if argument is not None else None
        return passed if passed is not None else generic

    def stored_argument(self, expression: nodes.NodeNG) -> nodes.NodeNG | None:
        """For ``holder.attr`` whose every store is ``self.attr = param`` in ``__init__``: the
        argument the construction of ``holder`` passes for ``param`` (``model`` in
        ``state = TrainState(model, opt)`` for ``state.model``), else None."""
        if not isinstance(expression, nodes.Attribute):
            return None
        owner = self.class_of_self(expression.expr)
        if owner is None or owner.definition is None:
            return None
        stores = self.hierarchy.info(owner.definition).stores_of(expression.attrname)
        arguments = {self._constructor_argument(store, expression.expr, owner.definition, 0) for store in stores}
        return arguments.pop() if len(arguments) == 1 else None

    def _constructor_argument(self, store: Store, holder: nodes.NodeNG, owner: nodes.ClassDef,
                              depth: int) -> nodes.NodeNG | None:
        """What the construction of ``holder`` passes for the ``__init__`` parameter ``store``
        stores as it is, None when that is not how the value got there."""
        if not isinstance(store.value, nodes.Name):
            return None
        init = store.value.scope()
        if init is not self.hierarchy.init_of(owner):
            return None  # stored by a helper or a base __init__: its arguments are not the call's
        construction = self._construction_call(holder, depth)  # only now: most attribute reads never get here
        if construction is None:
            return None
        parameters = [a.name for a in init.args.args or []][1:]
        if store.value.name not in parameters or any(isinstance(a, nodes.Starred) for a in construction.args):
            return None
        return bind_arguments(init, construction).get(store.value.name)

    def _construction_call(self, expression: nodes.NodeNG, depth: int = 0) -> nodes.Call | None:
        """``Bundle(net)`` for itself or for a name bound (once) to it; through builder
        methods that return ``self`` (``Trainer(model).with_loss(f)``)."""
        for _ in range(MAX_DEPTH):
            if isinstance(expression, nodes.Name):
                values = bound_values(expression)
                expression = values[0] if len(values) == 1 else None
            if not isinstance(expression, nodes.Call):
                return None
            receiver = self.factories.builder_receiver(expression, depth)
            if receiver is None:
                return expression
            expression = receiver
        return None

    def _class_from_call_sites(self, name: nodes.Name, depth: int) -> ClassRef | None:
        """An unannotated parameter's class, from what this file's calls pass for it (a
        method's: what the module's calls of that method pass)."""
        found = parameter_of(name) or self.factories.method_parameter(name)
        return self.call_site_class(*found, depth) if found is not None else None

    def call_site_class(self, function: nodes.NodeNG, parameter: str, depth: int = 0) -> ClassRef | None:
        """The class this file's calls of ``function`` pass for ``parameter``.

        Callers whose argument is unknown are passed over (the known ones still run);
        callers that disagree leave the parameter unknown.
        """
        candidates = self.call_site_classes(function, parameter, depth)
        return candidates[0][0] if len(candidates) == 1 else None

    def call_site_classes(self, function: nodes.NodeNG, parameter: str,
                          depth: int = 0) -> list[tuple[ClassRef, nodes.Call]]:
        """Every known class this file's calls of ``function`` pass for ``parameter``, each
        with the first call that passes it (in source order): the candidates a rule checks
        one by one ("flag if one of them breaks, and name it")."""
        if not isinstance(function, nodes.FunctionDef) or depth > MAX_DEPTH:
            return []
        # Memoised: every read of an unannotated parameter asks (a parameter read twenty times
        # in its function asked twenty times). The questions it asks are one level deeper, so
        # it never waits on itself.
        key = (function, parameter, depth)
        known = self._call_site_classes.get(key)
        if known is None:
            found: dict[ClassRef, nodes.Call] = {}
            if isinstance(function.parent, nodes.ClassDef):  # a method: its calls in its module
                passed = self.factories.method_arguments(function, parameter, depth)
            else:  # this file's calls, then other files'
                passed = [(argument_for(function, call, parameter), call)
                          for call in calls_of(function, self.project)]
            for argument, call in passed:
                if argument is not None and not function.parent_of(argument):
                    ref = self.class_of(argument, depth + 1)
                    if ref is not None:
                        found.setdefault(ref, call)
            known = self._call_site_classes[key] = tuple(found.items())
        return list(known)

    def class_of_self(self, expression: nodes.NodeNG) -> ClassRef | None:
        """For ``self`` inside a method: the enclosing class; else :meth:`class_of`."""
        if expression not in self._classes_of_self:
            self._classes_of_self[expression] = self._class_of_self(expression)
        return self._classes_of_self[expression]

    def _class_of_self(self, expression: nodes.NodeNG) -> ClassRef | None:
        if isinstance(expression, nodes.Name):
            function = expression.scope()
            if (
                isinstance(function, nodes.FunctionDef)
                and isinstance(function.parent, nodes.ClassDef)
                and function.args.args
                and function.args.args[0].name == expression.name
            ):
                return self.hierarchy.ref_of_definition(function.parent)
            if function is not expression.root():
                # `self` of an enclosing method, read in a nested function or lambda
                _scope, assignments = lookup(expression)
                if len(assignments) == 1 and isinstance(assignments[0], nodes.AssignName) \
                        and isinstance(assignments[0].parent, nodes.Arguments):
                    method = assignments[0].parent.parent
                    if method is not function and isinstance(method, nodes.FunctionDef) \
                            and isinstance(method.parent, nodes.ClassDef) and method.args.args \
                            and method.args.args[0] is assignments[0] and not is_static_method(method):
                        return self.hierarchy.ref_of_definition(method.parent)
        return self.class_of(expression)

    def annotated_class_of(self, name: nodes.Name) -> ClassRef | None:
        """The class ``name``'s annotation names (a parameter's, or ``x: Cls = ...``)."""
        _scope, assignments = lookup(name)
        for assignment in assignments:
            annotation = binding_annotation(assignment)
            if annotation is not None:
                return self.hierarchy.annotated_class(annotation)
        return None
