"""The class model: what a Module class stores, and which class an expression has.

Built from the tree alone (no inference into flax): for a class, every
``self.<path> = <value>`` in ``__init__``, in the ``self.<helper>()`` methods it calls
(transitively), and in base classes' ``__init__`` (project classes, same file or other
files through :class:`nnx_lint.analysis.project.Project`). Expressions are typed only where the
code says so — a constructor call, an annotation, a plain assignment, a stored
attribute — and are "unknown" (None) otherwise: rules stay silent on unknowns.

:class:`ClassModel` is one per-file service made of parts, one module each:

- this module: resolving classes, what a class stores, and the class of an expression
  (:meth:`ClassModel.class_of`, the classes call sites pass);
- :mod:`nnx_lint.analysis.refs`: object identity (for aliasing rules) —
  :meth:`ClassModel.ref_of` maps an expression to a :class:`~nnx_lint.analysis.refs.Ref` (where
  the object comes from — ``self``, a parameter, one construction — plus an attribute path), so
  that two expressions denoting the same object, or an object and a part of it, can be
  recognised; :meth:`ClassModel.kind_of` says whether such an object holds NNX state (a
  Module, a Variable, an ``Rngs``, a State view);
- :mod:`nnx_lint.analysis.class_kinds`: what a class's instances hold
  (:meth:`ClassModel.class_kind`), and the classes of parameters;
- :mod:`nnx_lint.analysis.construction`: :meth:`ClassModel.construction` replays a class's
  construction in order (stores, deletions, helper and ``super().__init__`` calls with their
  arguments, constructor arguments stored by child classes);
- :mod:`nnx_lint.analysis.aliases`: the aliases and self references a construction creates;
- :mod:`nnx_lint.analysis.class_info`: the base types (:class:`ClassRef`, :class:`ClassInfo`)
  and shared tree helpers.
"""
from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.flax_table import nnx_api
from nnx_lint.analysis.aliases import AliasQueries
from nnx_lint.analysis.call_sites import argument_for, calls_of, parameter_of
from nnx_lint.analysis.class_info import (MAX_DEPTH, ClassInfo, ClassRef, Store, bind_arguments,
                                          is_static_method, self_store)
from nnx_lint.analysis.class_kinds import ClassKinds
from nnx_lint.analysis.construction import Construction, ConstructionReplay
from nnx_lint.analysis.factories import FactoryReturns
from nnx_lint.analysis.flow import bound_values, class_definitions, default_fallback, lookup, unpacked_binding
from nnx_lint.analysis.names import base_classes
from nnx_lint.analysis.refs import Alias, RefQueries
from nnx_lint.base.node_index import nodes_of_class
from nnx_lint.flax_table.names import CLASS_PRESERVING_CALLS, NNX_MODULE_BASES, NNX_PREFIX

if TYPE_CHECKING:
    from nnx_lint.analysis.context import FileContext


#: The methods a test framework runs before each test method (unittest, pytest's classes): what
#: they store on ``self`` is there in every test, as if ``__init__`` stored it.
_TEST_SETUPS = ("setUp", "setup_method")


class ClassModel(RefQueries, ClassKinds, ConstructionReplay, AliasQueries, FactoryReturns):
    """Per-file service (``context.classes``): class infos and expression classes."""

    def __init__(self, context: FileContext) -> None:
        self.context = context
        #: Per function: the parameters it hands to an API that takes a Module (kind from use).
        self._module_uses: dict[int, set[str]] = {}
        self._infos: dict[int, ClassInfo] = {}
        self._constructions: dict[int, Construction] = {}
        self._lines_of: dict[str, tuple[list[int], list[nodes.NodeNG]]] = {}
        #: Memoised answers (every call-site rule asks about every call): the classes of
        #: expressions asked at depth 0, and a name resolver per other module.
        self._classes_of: dict[nodes.NodeNG, ClassRef | None] = {}
        self._classes_of_self: dict[nodes.NodeNG, ClassRef | None] = {}
        self._call_site_classes: dict[tuple[nodes.NodeNG, str, int], tuple[tuple[ClassRef, nodes.Call], ...]] = {}
        self._resolvers: dict[nodes.Module, object] = {}
        #: Classes whose kind is being worked out: one that holds itself through its stores
        #: (``A`` stores a ``B()``, ``B`` an ``A()``) must not recurse without end.
        self._kinds_in_progress: set[int] = set()
        self._variable_free_aliases: dict[int, list[Alias]] = {}
        #: Methods replayed and store events kept by this file's constructions (bounded:
        #: :attr:`nnx_lint.base.bounds.Limits.replay_steps`).
        self.replay_work = 0

    # -- resolving classes -------------------------------------------------------------
    def resolve(self, qualified_name: str | None, at: nodes.NodeNG | None = None) -> ClassRef | None:
        """A :class:`ClassRef` for a qualified name that denotes a class (best effort).

        ``at``: where the name is used; when this file defines the class several times
        (notebooks redefine classes from cell to cell), the definition in force there wins.
        """
        if not qualified_name:
            return None
        definition = self._definition(qualified_name, at)
        if definition is not None:
            return ClassRef(qualified_name, definition)
        if qualified_name.startswith(NNX_PREFIX) and qualified_name.rpartition(".")[2][:1].isupper():
            return ClassRef(qualified_name)
        return None

    def _definition(self, qualified_name: str, at: nodes.NodeNG | None = None) -> nodes.ClassDef | None:
        module_name, _, name = qualified_name.rpartition(".")
        if module_name == self.context.module.name:
            found = self.context.module.locals.get(name) or []
            node = found[-1] if found else None
            if at is not None and len(found) > 1 and at.root() is self.context.module:
                node = self._in_force_at(name, found, at.lineno or 0) or node
        else:
            node = self.context.project.definition(qualified_name)
        return node if isinstance(node, nodes.ClassDef) else None

    def _in_force_at(self, name: str, found: list[nodes.NodeNG], line: int) -> nodes.NodeNG | None:
        """The last of this module's bindings of ``name`` on or before ``line`` (bisection
        over an index built once per name: a file may define one class thousands of times)."""
        index = self._lines_of.get(name)
        if index is None:
            ordered = sorted(found, key=lambda d: d.lineno or 0)
            index = self._lines_of[name] = ([d.lineno or 0 for d in ordered], ordered)
        lines, ordered = index
        position = bisect.bisect_right(lines, line)
        return ordered[position - 1] if position else None

    def ref_of_definition(self, classdef: nodes.ClassDef) -> ClassRef:
        root = classdef.root()
        if classdef.parent is root:
            return ClassRef(f"{root.name}.{classdef.name}", classdef)
        return ClassRef(f"{root.name}.<local>.{classdef.name}", classdef)

    # -- class contents -----------------------------------------------------------------
    def info(self, classdef: nodes.ClassDef, depth: int = 0) -> ClassInfo:
        """Stores, bases and NNX-ness of a class (memoised)."""
        key = id(classdef)
        if key in self._infos:
            return self._infos[key]
        info = ClassInfo(self.ref_of_definition(classdef))
        self._infos[key] = info  # placed before recursion: guards against cycles
        resolver = self.resolver_for(classdef)
        for base in base_classes(classdef):
            name = resolver.qualified_name(base)
            ref = self._resolve_in(classdef, name) or self._local_class(base)
            if ref is None:
                continue
            info.bases.append(ref)
            if ref.qualified_name in NNX_MODULE_BASES:
                info.is_nnx_module = True
            elif ref.definition is not None and depth < MAX_DEPTH:
                base_info = self.info(ref.definition, depth + 1)
                info.is_nnx_module = info.is_nnx_module or base_info.is_nnx_module
                info.add_inherited(base_info.stores)
            elif ref.qualified_name.startswith(NNX_PREFIX):
                info.is_nnx_module = True  # nnx.Linear, nnx.Sequential, ... are Modules
        init = classdef.locals.get("__init__")
        if init and isinstance(init[-1], nodes.FunctionDef):
            info.stores.extend(self._stores_in(init[-1], classdef, set()))
        if not info.is_nnx_module:
            for name in _TEST_SETUPS:
                # a test case's fixtures: what every test method of the class finds on `self`
                setup = classdef.locals.get(name)
                if setup and isinstance(setup[-1], nodes.FunctionDef):
                    info.stores.extend(self._stores_in(setup[-1], classdef, set()))
        return info

    def resolver_for(self, node: nodes.NodeNG):
        """The name resolver of the module ``node`` belongs to (the linted module's, or one
        per project module the analysis reads)."""
        root = node.root()
        if root is self.context.module:  # the common case: every qualified name of the file asks
            return self.context.resolver
        resolver = self._resolvers.get(root)
        if resolver is None:
            from nnx_lint.analysis.names import NameResolver

            resolver = self._resolvers[root] = NameResolver(root, self.context.project)
        return resolver

    def _resolve_in(self, node: nodes.NodeNG, qualified_name: str | None) -> ClassRef | None:
        return self.resolve(qualified_name)

    def _stores_in(self, method: nodes.FunctionDef, classdef: nodes.ClassDef, seen: set[str]) -> list[Store]:
        seen.add(method.name)
        if not method.args.args:
            return []
        self_name = method.args.args[0].name
        stores: list[Store] = []
        for node in nodes_of_class(method, (nodes.AssignAttr, nodes.Call)):
            stored = self_store(node, self_name)
            if stored is not None:
                path, value = stored
                stores.append(Store(".".join(path), value, node, method.name, classdef.name))
            elif isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute) \
                    and isinstance(node.func.expr, nodes.Name):
                # self.helper(...) called during construction: follow it once.
                if node.func.expr.name == self_name and node.func.attrname not in seen:
                    helper = classdef.locals.get(node.func.attrname)
                    if helper and isinstance(helper[-1], nodes.FunctionDef):
                        stores.extend(self._stores_in(helper[-1], classdef, seen))
        return stores

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
            if self._nnx_name(expression) == "merge" and len(expression.args) >= 2:
                # the class of what was split to make the state, else to make the GraphDef
                return self._class_of_merged(expression.args[1], None, depth) \
                    or self._class_of_merged(expression.args[0], None, depth, graphdef=True)
            name = self.resolver_for(expression).qualified_name(expression.func)
            carried = CLASS_PRESERVING_CALLS.get(name or "")
            if carried is not None:
                # nnx.clone(m) / nnx.view(m) / nnx.fori_loop(..., m) / nnx.while_loop(..., m): m's class
                argument = expression.args[carried] if len(expression.args) > carried else None
                return self.class_of(argument, depth + 1)
            return (self.resolve(name, at=expression) or self._local_class(expression.func)
                    or self.returned_class(expression, None, depth, name))
        if isinstance(expression, nodes.Name):
            annotated = self._annotation_of(expression)
            if annotated is not None and annotated.qualified_name in NNX_MODULE_BASES:
                # `model: nnx.Module` says only "a Module": the callers may say which one
                return self._specific(annotated, self._class_from_call_sites(expression, depth))
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
                    return self.returned_class(unpacked[0], unpacked[1], depth)
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
                    for store in self.info(owner.definition).stores_of(expression.attrname)
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
            if len(values) == 1 and isinstance(values[0], nodes.Call) and self._nnx_name(values[0]) == "graphdef" \
                    and values[0].args:
                return [values[0].args[0]]
            return []
        found = parameter_of(state)
        if found is None:
            return []
        function, parameter = found
        arguments = []
        for call in calls_of(function, self.context.project):
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
                and self._nnx_name(value) == "split":
            return value
        return None

    def _unpacked_merge(self, name: nodes.Name) -> tuple[nodes.Call, int] | None:
        """``(merge call, position)`` when ``name`` is bound only by unpacking an
        ``nnx.merge(graphdef, state)`` (``model, optimizer = nnx.merge(graphdef, state)``)."""
        unpacked = unpacked_binding(name)
        if unpacked is None:
            return None
        value, position = unpacked
        if isinstance(value, nodes.Call) and self._nnx_name(value) == "merge" and len(value.args) >= 2:
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
        stores = self.info(owner.definition).stores_of(expression.attrname)
        arguments = {self._constructor_argument(store, expression.expr, owner.definition, 0) for store in stores}
        return arguments.pop() if len(arguments) == 1 else None

    def _constructor_argument(self, store: Store, holder: nodes.NodeNG, owner: nodes.ClassDef,
                              depth: int) -> nodes.NodeNG | None:
        """What the construction of ``holder`` passes for the ``__init__`` parameter ``store``
        stores as it is, None when that is not how the value got there."""
        if not isinstance(store.value, nodes.Name):
            return None
        init = store.value.scope()
        if init is not self.init_of(owner):
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
            receiver = self.builder_receiver(expression, depth)
            if receiver is None:
                return expression
            expression = receiver
        return None

    def _class_from_call_sites(self, name: nodes.Name, depth: int) -> ClassRef | None:
        """An unannotated parameter's class, from what this file's calls pass for it (a
        method's: what the module's calls of that method pass)."""
        found = parameter_of(name) or self.method_parameter(name)
        return self.call_site_class(*found, depth) if found is not None else None

    def call_site_class(self, function: nodes.NodeNG, parameter: str, depth: int = 0) -> ClassRef | None:
        """The class this file's calls of ``function`` pass for ``parameter``.

        Callers whose argument is unknown are passed over (the known ones still run);
        callers that disagree leave the parameter unknown.
        """
        candidates = self.call_site_classes(function, parameter, depth)
        return candidates[0][0] if len(candidates) == 1 else None

    def call_site_classes(self, function: nodes.NodeNG, parameter: str, depth: int = 0) -> list[tuple[ClassRef, nodes.Call]]:
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
                passed = self.method_arguments(function, parameter, depth)
            else:  # this file's calls, then other files'
                passed = [(argument_for(function, call, parameter), call)
                          for call in calls_of(function, self.context.project)]
            for argument, call in passed:
                if argument is not None and not function.parent_of(argument):
                    ref = self.class_of(argument, depth + 1)
                    if ref is not None:
                        found.setdefault(ref, call)
            known = self._call_site_classes[key] = tuple(found.items())
        return list(known)

    def function_called(self, call: nodes.Call, qualified_name: str | None = None) -> nodes.FunctionDef | None:
        """The plain project function (not a method) ``call`` calls by name, in this file or
        imported from another project file; None for methods, builtins and libraries."""
        if not isinstance(call.func, (nodes.Name, nodes.Attribute)):
            return None
        if qualified_name is None:
            qualified_name = self.resolver_for(call).qualified_name(call.func)
        if qualified_name and (qualified_name.split(".")[0] in nnx_api.EXTERNAL_PACKAGES
                               or qualified_name.startswith("builtins.")):
            return None
        if isinstance(call.func, nodes.Name):
            _scope, assignments = lookup(call.func)
            if len(assignments) == 1 and isinstance(assignments[0], nodes.FunctionDef):
                function = assignments[0]
                return None if isinstance(function.parent, nodes.ClassDef) else function
        definition = self.context.project.definition(qualified_name) if qualified_name else None
        if isinstance(definition, nodes.FunctionDef) and not isinstance(definition.parent, nodes.ClassDef):
            return definition
        return None

    def _local_class(self, expression: nodes.NodeNG) -> ClassRef | None:
        """A class defined inside a function (``def test(): class Foo(nnx.Module): ...``)."""
        if not isinstance(expression, nodes.Name) or not class_definitions(expression):
            return None
        _scope, assignments = lookup(expression)
        return self.ref_of_definition(assignments[0]) if len(assignments) == 1 else None

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
                return self.ref_of_definition(function.parent)
            if function is not expression.root():
                # `self` of an enclosing method, read in a nested function or lambda
                _scope, assignments = lookup(expression)
                if len(assignments) == 1 and isinstance(assignments[0], nodes.AssignName) \
                        and isinstance(assignments[0].parent, nodes.Arguments):
                    method = assignments[0].parent.parent
                    if method is not function and isinstance(method, nodes.FunctionDef) \
                            and isinstance(method.parent, nodes.ClassDef) and method.args.args \
                            and method.args.args[0] is assignments[0] and not is_static_method(method):
                        return self.ref_of_definition(method.parent)
        return self.class_of(expression)

    def _annotation_of(self, name: nodes.Name) -> ClassRef | None:
        """The class ``name``'s annotation names (a parameter's, or ``x: Cls = ...``)."""
        _scope, assignments = lookup(name)
        for assignment in assignments:
            if isinstance(assignment, nodes.AssignName) and isinstance(assignment.parent, nodes.Arguments):
                arguments = assignment.parent
                for index, argument in enumerate(arguments.args):
                    if argument is assignment and arguments.annotations[index] is not None:
                        return self._annotated_class(arguments.annotations[index])
                for index, argument in enumerate(arguments.kwonlyargs):
                    if argument is assignment and arguments.kwonlyargs_annotations[index] is not None:
                        return self._annotated_class(arguments.kwonlyargs_annotations[index])
            elif isinstance(assignment, nodes.AssignName) and isinstance(assignment.parent, nodes.AnnAssign):
                return self._annotated_class(assignment.parent.annotation)
        return None

    def _annotated_class(self, annotation: nodes.NodeNG) -> ClassRef | None:
        """The class an annotation names: a resolved name, or a class defined in the enclosing
        function (``def step(m: _LearnableScale)`` next to ``class _LearnableScale`` in a test)."""
        return (self.resolve(self.resolver_for(annotation).qualified_name(annotation), at=annotation)
                or self._local_class(annotation))
