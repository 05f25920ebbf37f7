"""The class model: what a Module class stores, and which class an expression has.

Built from the tree alone (no inference into flax): for a class, every
``self.<path> = <value>`` in ``__init__``, in the ``self.<helper>()`` methods it calls
(transitively), and in base classes' ``__init__`` (project classes, same file or other
files through :class:`nnx_lint.analysis.project.Project`). Expressions are typed only where the
code says so — a constructor call, an annotation, a plain assignment, a stored
attribute — and are "unknown" (None) otherwise: rules stay silent on unknowns.

Object identity (for aliasing rules): :meth:`ClassModel.ref_of` maps an expression to a
:class:`Ref` — where the object comes from (``self``, a parameter, one construction)
plus an attribute path — so that two expressions denoting the same object, or an object
and a part of it, can be recognised; :meth:`ClassModel.kind_of` says whether such an
object holds NNX state (a Module, a Variable, an ``Rngs``, a State view);
:meth:`ClassModel.construction` replays a class's construction in order (stores,
deletions, helper and ``super().__init__`` calls with their arguments, constructor
arguments stored by child classes) and finds the aliases it creates.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.base import bounds
from nnx_lint.flax_table import nnx_api
from nnx_lint.analysis.call_sites import argument_for, calls_of, parameter_of
from nnx_lint.flax_table.flax_layers import FLAX_STORED_ARGUMENTS, FLAX_SUBMODULE_ATTRIBUTES, FLAX_VARIABLE_ATTRIBUTES
from nnx_lint.analysis.flow import bound_values, default_fallback, lookup, resolved_default, unpacked_binding
from nnx_lint.analysis.names import base_classes
from nnx_lint.base.node_index import nodes_of_class

if TYPE_CHECKING:
    from nnx_lint.engine.walk import FileContext

#: Bases that make a class an NNX Module (or pytree object) in flax.nnx.
NNX_MODULE_BASES = frozenset({"flax.nnx.Module", "flax.nnx.Object", "flax.nnx.Pytree"})
_MAX_DEPTH = 6
#: Calls whose result has the class of one argument (its position).
_CLASS_PRESERVING = {
    "flax.nnx.clone": 0, "flax.nnx.compat.clone": 0,
    "flax.nnx.fori_loop": 3, "flax.nnx.compat.fori_loop": 3,
    "flax.nnx.while_loop": 2, "flax.nnx.compat.while_loop": 2,
    "flax.nnx.view": 0, "flax.nnx.compat.view": 0,
    # a copy of the tree with its Variables converted (``ref=True``, ``hijax=True``)
    "flax.nnx.with_vars": 0, "flax.nnx.vars_as": 0,
}


@dataclass(frozen=True)
class ClassRef:
    """A class an expression is known to have: its qualified name and, for project
    classes, its definition (None for flax.nnx and other external classes)."""

    qualified_name: str
    definition: nodes.ClassDef | None = None

    @property
    def short_name(self) -> str:
        return self.qualified_name.rpartition(".")[2]


@dataclass
class Store:
    """One ``self.<path> = value`` found while following a class's construction."""

    path: str
    value: nodes.NodeNG | None
    target: nodes.NodeNG
    method: str
    #: The class whose code holds the store (a base class for inherited stores).
    owner: str


@dataclass
class ClassInfo:
    """What one class stores during construction."""

    ref: ClassRef
    bases: list[ClassRef] = field(default_factory=list)
    stores: list[Store] = field(default_factory=list)
    is_nnx_module: bool = False

    def stores_of(self, path: str) -> list[Store]:
        return [store for store in self.stores if store.path == path]

    def add_inherited(self, stores: list[Store]) -> None:
        """Add a base class's stores, each store statement once: in a diamond (``class
        C(A, B)``, both deriving from ``Base``) ``Base``'s stores reach ``C`` through both
        bases, and keeping every copy doubles the list at each level of a deep diamond."""
        present = {id(store) for store in self.stores}
        self.stores.extend(store for store in stores if id(store) not in present)

    def attribute_names(self) -> list[str]:
        return list(dict.fromkeys(s.path.split(".")[0] for s in self.stores))


class ClassModel:
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
        if qualified_name.startswith("flax.nnx.") and qualified_name.rpartition(".")[2][:1].isupper():
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
            elif ref.definition is not None and depth < _MAX_DEPTH:
                base_info = self.info(ref.definition, depth + 1)
                info.is_nnx_module = info.is_nnx_module or base_info.is_nnx_module
                info.add_inherited(base_info.stores)
            elif ref.qualified_name.startswith("flax.nnx."):
                info.is_nnx_module = True  # nnx.Linear, nnx.Sequential, ... are Modules
        init = classdef.locals.get("__init__")
        if init and isinstance(init[-1], nodes.FunctionDef):
            info.stores.extend(self._stores_in(init[-1], classdef, set()))
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
        if expression is None or depth > _MAX_DEPTH:
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
            carried = _CLASS_PRESERVING.get(name or "")
            if carried is not None:
                # nnx.clone(m) / nnx.view(m) / nnx.fori_loop(..., m) / nnx.while_loop(..., m): m's class
                argument = expression.args[carried] if len(expression.args) > carried else None
                return self.class_of(argument, depth + 1)
            return (self.resolve(name, at=expression) or self._local_class(expression.func)
                    or self._factory_class(expression, name, depth))
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
        if not isinstance(state, nodes.Name) or depth > _MAX_DEPTH:
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
            if argument is not None and not _within(argument, function):
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
        if found is not None or not isinstance(store.value, nodes.Name):
            return found
        init = store.value.scope()
        if init is not self.init_of(owner):
            return None  # stored by a helper or a base __init__: its arguments are not the call's
        construction = self._construction_call(holder)  # only now: most attribute reads never get here
        if construction is None:
            return None
        parameters = [a.name for a in init.args.args or []][1:]
        if store.value.name not in parameters or any(isinstance(a, nodes.Starred) for a in construction.args):
            return None
        bound = _bind_arguments(init, construction)
        argument = bound.get(store.value.name)
        return self.class_of(argument, depth + 1) if argument is not None else None

    def _construction_call(self, expression: nodes.NodeNG) -> nodes.Call | None:
        """``Bundle(net)`` for itself or for a name bound (once) to it."""
        if isinstance(expression, nodes.Call):
            return expression
        if isinstance(expression, nodes.Name):
            values = bound_values(expression)
            if len(values) == 1 and isinstance(values[0], nodes.Call):
                return values[0]
        return None

    def _class_from_call_sites(self, name: nodes.Name, depth: int) -> ClassRef | None:
        """An unannotated parameter's class, from what this file's calls pass for it."""
        found = parameter_of(name)
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
        if not isinstance(function, nodes.FunctionDef) or depth > _MAX_DEPTH:
            return []
        # Memoised: every read of an unannotated parameter asks (a parameter read twenty times
        # in its function asked twenty times). The questions it asks are one level deeper, so
        # it never waits on itself.
        key = (function, parameter, depth)
        known = self._call_site_classes.get(key)
        if known is None:
            found: dict[ClassRef, nodes.Call] = {}
            for call in calls_of(function, self.context.project):  # this file's, then other files'
                argument = argument_for(function, call, parameter)
                if argument is not None and not _within(argument, function):
                    ref = self.class_of(argument, depth + 1)
                    if ref is not None:
                        found.setdefault(ref, call)
            known = self._call_site_classes[key] = tuple(found.items())
        return list(known)

    def _factory_class(self, call: nodes.Call, qualified_name: str | None, depth: int) -> ClassRef | None:
        """``make_model(...)`` where the project function returns one class on every path
        (``return Model(...)``, also through a local name): that class."""
        function = self.function_called(call, qualified_name)
        if function is None:
            return None
        returns = [node.value for node in nodes_of_class(function,
            nodes.Return, skip_klass=(nodes.FunctionDef, nodes.Lambda, nodes.ClassDef)) if node.scope() is function]
        if not returns or any(value is None for value in returns):
            return None
        refs = {self.class_of(value, depth + 1) for value in returns}
        return refs.pop() if len(refs) == 1 and None not in refs else None

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
        if not isinstance(expression, nodes.Name):
            return None
        _scope, assignments = lookup(expression)
        if len(assignments) == 1 and isinstance(assignments[0], nodes.ClassDef):
            return self.ref_of_definition(assignments[0])
        return None

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
                            and method.args.args[0] is assignments[0] and not _is_static(method):
                        return self.ref_of_definition(method.parent)
        return self.class_of(expression)

    def _annotation_of(self, name: nodes.Name) -> ClassRef | None:
        _scope, assignments = lookup(name)
        for assignment in assignments:
            if isinstance(assignment, nodes.AssignName) and isinstance(assignment.parent, nodes.Arguments):
                arguments = assignment.parent
                for index, argument in enumerate(arguments.args):
                    if argument is assignment and arguments.annotations[index] is not None:
                        annotation = arguments.annotations[index]
                        return self.resolve(self.resolver_for(annotation).qualified_name(annotation), at=annotation)
                for index, argument in enumerate(arguments.kwonlyargs):
                    if argument is assignment and arguments.kwonlyargs_annotations[index] is not None:
                        annotation = arguments.kwonlyargs_annotations[index]
                        return self.resolve(self.resolver_for(annotation).qualified_name(annotation), at=annotation)
            elif isinstance(assignment, nodes.AssignName) and isinstance(assignment.parent, nodes.AnnAssign):
                annotation = assignment.parent.annotation
                return self.resolve(self.resolver_for(annotation).qualified_name(annotation), at=annotation)
        return None

    # -- object identity (aliasing) ----------------------------------------------------
    def ref_of(
        self, expression: nodes.NodeNG | None, substitutions: dict | None = None, depth: int = 0
    ) -> Ref | None:
        """The object ``expression`` denotes, as a :class:`Ref`, or None when unknown.

        ``substitutions`` maps ``(function, parameter name)`` to the :class:`Ref` (or None)
        of the argument a caller passed, for replaying helper and base ``__init__`` calls.
        """
        ref = self._raw_ref(expression, depth)
        if ref is None or not substitutions or ref.root[0] != "param":
            return ref
        key = (ref.root[1], ref.root[2])
        if key not in substitutions:
            return ref
        replacement = substitutions[key]
        if replacement is None:
            return None
        return Ref(replacement.root, replacement.path + ref.path)

    def _raw_ref(self, expression: nodes.NodeNG | None, depth: int) -> Ref | None:
        if expression is None or depth > _MAX_REF_DEPTH:
            return None
        if isinstance(expression, nodes.Name):
            _scope, assignments = lookup(expression)
            # `if rngs is None: rngs = self.rngs`: on the default path it is the replacement
            resolved = resolved_default(assignments)
            if resolved is not None:
                assignments = [resolved]
            refs = set()
            for assignment in assignments:
                ref = self._ref_of_binding(assignment, depth + 1)
                if ref is None:
                    return None
                refs.add(ref)
            return refs.pop() if len(refs) == 1 else None
        if isinstance(expression, nodes.Attribute):
            base = self._raw_ref(expression.expr, depth + 1)
            return base.child(expression.attrname) if base is not None else None
        if isinstance(expression, nodes.Subscript):
            index = expression.slice
            if isinstance(expression.value, nodes.Call) and self._nnx_name(expression.value) == "split":
                if isinstance(index, nodes.Const) and isinstance(index.value, int):
                    return self._split_element(expression.value, index.value, depth)
                return None
            base = self._raw_ref(expression.value, depth + 1)
            if base is None or not isinstance(index, nodes.Const):
                return None
            if isinstance(index.value, str):
                return base.child(index.value)
            if isinstance(index.value, int) and not isinstance(index.value, bool):
                return base.child(f"[{index.value}]")
            return None
        if isinstance(expression, nodes.NamedExpr):
            return self._raw_ref(expression.value, depth + 1)
        if isinstance(expression, nodes.Call):
            return self._ref_of_call(expression, depth)
        if isinstance(expression, (nodes.IfExp, nodes.BoolOp)):
            # `rngs if rngs is not None else self.rngs`, `rngs or self.rngs`: the object the
            # default path uses (measured: with `self.rngs`, `nnx.vmap(f)(self, xs, rngs)`
            # raises Duplicate RngCount in Tree Mode)
            fallback = default_fallback(expression)
            return self._raw_ref(fallback, depth + 1) if fallback is not None else None
        return None

    def _nnx_name(self, call: nodes.Call) -> str | None:
        name = self.resolver_for(call).qualified_name(call.func)
        if name and name.startswith("flax.nnx.") and not name.startswith("flax.nnx.compat."):
            return name[len("flax.nnx."):]
        if name and name.startswith("flax.nnx.compat."):
            return name[len("flax.nnx.compat."):]
        return None

    def _ref_of_call(self, call: nodes.Call, depth: int) -> Ref | None:
        nnx_name = self._nnx_name(call)
        if nnx_name in ("data", "view") and call.args:
            # nnx.view(m, deterministic=True) is a copy of m's tree holding m's own Variables
            # (measured: `nnx.jit(f)(m, nnx.view(m))` raises Duplicate Param in Tree Mode)
            return self._raw_ref(call.args[0], depth + 1)
        if nnx_name in ("state", "variables") and call.args:
            base = self._raw_ref(call.args[0], depth + 1)
            if base is None:
                return None
            filters = call.args[1:]
            return base.child(_view_part(filters)) if filters else base
        if nnx_name == "merge" and len(call.args) >= 2 and not _keyword_may_be_true(call, "copy"):
            merged = self._merged(call, depth)
            if merged is not None:
                return merged
        if isinstance(call.func, nodes.Attribute) and call.func.attrname == "fork" and not call.args:
            return Ref(("new", call))
        if call.args and self.resolver_for(call).qualified_name(call.func) == "dataclasses.replace" \
                and not any(self._field_holds_variables(call.args[0], k.arg) for k in call.keywords or []):
            # dataclasses.replace(c, steps=...) keeps every other field: it still holds c's objects
            return self._raw_ref(call.args[0], depth + 1)
        copied = self._copied_container(call)
        if copied is not None:
            return self._raw_ref(copied, depth + 1)
        # Any other call: one object per evaluation — what it is stays unknown (kind None),
        # but two names bound to the same call result denote the same object.
        return Ref(("new", call))

    def _copied_container(self, call: nodes.Call) -> nodes.NodeNG | None:
        """The receiver of ``state.replace(step=...)`` (a ``flax.struct`` dataclass or
        ``PyTreeNode``) or ``point._replace(...)`` (a NamedTuple) when the copy keeps every
        field that holds NNX state: the copy still holds the receiver's objects (measured with
        flax 0.12.8: ``nnx.jit`` returning ``state.replace(step=...)`` of its input raises
        Duplicate Param in Tree Mode). Only classes known to be such containers, and without
        a method of that name of their own, count."""
        func = call.func
        if not isinstance(func, nodes.Attribute) or func.attrname not in ("replace", "_replace") or call.args:
            return None
        cls = self.class_of(func.expr)
        if cls is None or cls.definition is None or func.attrname in cls.definition.locals:
            return None
        if func.attrname == "_replace" and not _is_named_tuple(cls.definition):
            return None
        if not _fields(cls.definition) or any(k.arg is None or self._field_holds_variables(func.expr, k.arg)
                                               for k in call.keywords or []):
            return None
        return func.expr

    def _merged(self, call: nodes.Call, depth: int) -> Ref | None:
        """``nnx.merge(graphdef, state, *states)`` without ``copy=True``: the object whose
        Variables are the states' own (measured with flax 0.12.8: a transform returning the
        merge of its state input, or the split of that merge, raises Duplicate Param in Tree Mode).

        Several states that are parts of one object (``nnx.split(model, nnx.Param, ...)``'s
        groups) denote that object (their common part); states of different objects denote
        the first one's (the Params, as a rule), and the others' Variables are not followed.
        None (a new object) when the first state is unknown or unpacked (``*states``).
        """
        states = call.args[1:]
        if isinstance(states[0], nodes.Starred):
            return None
        first = self._raw_ref(states[0], depth + 1)
        if first is None:
            return None
        path = first.path
        for state in states[1:]:
            other = self._raw_ref(state, depth + 1) if not isinstance(state, nodes.Starred) else None
            if other is None or other.root != first.root:
                break
            common = 0
            while common < min(len(path), len(other.path)) and path[common] == other.path[common]:
                common += 1
            path = path[:common]
        return Ref(first.root, path)

    def _split_element(self, call: nodes.Call, index: int, depth: int) -> Ref | None:
        """``nnx.split(x, *filters)[index]``: the graphdef (no state) or one state group."""
        if index <= 0 or not call.args:
            return None
        base = self._raw_ref(call.args[0], depth + 1)
        if base is None:
            return None
        filters = call.args[1:]
        if len(filters) <= 1:
            return base.child(_view_part(filters)) if filters else base
        if index - 1 < len(filters):
            return base.child(_view_part([filters[index - 1]]))
        return None

    def _ref_of_binding(self, assignment: nodes.NodeNG, depth: int) -> Ref | None:
        if not isinstance(assignment, nodes.AssignName):
            return None
        parent = assignment.parent
        if isinstance(parent, nodes.Arguments):
            function = parent.parent
            if (
                isinstance(function, nodes.FunctionDef)
                and isinstance(function.parent, nodes.ClassDef)
                and parent.args
                and parent.args[0] is assignment
                and not _is_static(function)
            ):
                return Ref(("self", function.parent))
            return Ref(("param", function, assignment.name))
        if isinstance(parent, nodes.Assign) and assignment in parent.targets:
            return self._raw_ref(parent.value, depth + 1)
        if isinstance(parent, nodes.AnnAssign) and parent.value is not None:
            return self._raw_ref(parent.value, depth + 1)
        if isinstance(parent, (nodes.Tuple, nodes.List)) and isinstance(parent.parent, nodes.Assign):
            position = parent.elts.index(assignment)
            value = parent.parent.value
            if isinstance(value, (nodes.Tuple, nodes.List)) and len(value.elts) == len(parent.elts):
                return self._raw_ref(value.elts[position], depth + 1)
            if isinstance(value, nodes.Call) and self._nnx_name(value) == "split":
                return self._split_element(value, position, depth)
        return None

    def kind_of(self, ref: Ref | None, depth: int = 0) -> str | None:
        """What the object holds: "module", "variable", "rngs", "state", "ref" or None (unknown).

        The first four hold NNX Variables; "ref" is a raw mutable array (``jax.new_ref``),
        which Tree Mode may not reach twice either (:data:`SHARED_KINDS`). The aliasing
        rules ignore everything else.
        """
        if ref is None or depth > _MAX_REF_DEPTH:
            return None
        origin = ref.root[0]
        if origin == "self":
            return self._descend(self.ref_of_definition(ref.root[1]), ref.path, None, depth)
        if origin == "new":
            call = ref.root[1]
            if isinstance(call.func, nodes.Attribute) and call.func.attrname == "fork":
                return "rngs"
            if not ref.path and self.resolver_for(call).qualified_name(call.func) in MUTABLE_ARRAY_CONSTRUCTORS:
                return "ref"
            return self._descend(self.class_of(call), ref.path, call, depth)
        if origin == "param":
            function, name = ref.root[1], ref.root[2]
            known = self.parameter_class(function, name, depth)
            if known is not None:
                return self._descend(known, ref.path, None, depth)
            if not ref.path and self._annotation_name(function, name) in MUTABLE_ARRAY_TYPES:
                return "ref"
            if self.parameter_is_rngs(function, name, depth):  # unknown class: the naming convention
                return "rngs"
            if not ref.path and self.used_as_module(function, name):
                return "module"
        return None

    def used_as_module(self, function: nodes.NodeNG, name: str) -> bool:
        """Whether ``function`` uses its parameter ``name`` as an NNX Module (kind from use):
        hands it to an API that takes one (the model of ``nnx.Optimizer`` /
        ``nnx.ModelAndOptimizer``), or reads or writes Variables through its attributes
        (``name.w.value``, ``name.w.get_value()``, ``name.w[...] = v``)."""
        key = id(function)
        if key not in self._module_uses:  # one walk per function, whatever is asked of it
            self._module_uses[key] = self._module_uses_in(function)
        return name in self._module_uses[key]

    def _module_uses_in(self, function: nodes.NodeNG) -> set[str]:
        names = {
            call.args[0].name for call in nodes_of_class(function, nodes.Call)
            if call.args and isinstance(call.args[0], nodes.Name) and call.scope() is function
            and self._nnx_name(call) in OPTIMIZER_CLASSES
        }
        for node in nodes_of_class(function, (nodes.Attribute, nodes.Subscript)):
            if node.scope() is not function:
                continue
            if isinstance(node, nodes.Attribute) and node.attrname in _VARIABLE_ACCESSORS:
                held = node.expr
            elif isinstance(node, nodes.Subscript) and _is_subscript_store(node):
                held = node.value
            else:
                continue
            if not isinstance(held, nodes.Attribute):
                continue  # `m.value` / `m[...] = v` on the parameter itself: m may be the Variable
            while isinstance(held, nodes.Attribute):
                held = held.expr
            if isinstance(held, nodes.Name):
                names.add(held.name)
        return names

    def _specific(self, generic: ClassRef | None, candidate: ClassRef | None) -> ClassRef | None:
        """``candidate`` (a class the callers pass) when it is an NNX class narrowing the
        ``generic`` annotation (``nnx.Module``; None: no annotation), else ``generic``."""
        if candidate is None or generic is None:
            return candidate or generic
        if candidate.definition is not None:
            return candidate if self.info(candidate.definition).is_nnx_module else generic
        return candidate if candidate.qualified_name.startswith("flax.nnx.") else generic

    def parameter_class(self, function: nodes.NodeNG, name: str, depth: int = 0) -> ClassRef | None:
        """The class of ``function``'s parameter ``name``: its annotation, narrowed by what the
        project's calls pass when the annotation says only "a Module" (or is missing)."""
        known = self._parameter_annotation(function, name)
        if known is None or known.qualified_name in NNX_MODULE_BASES:
            known = self._specific(known, self.call_site_class(function, name, depth))
        return known

    def parameter_is_rngs(self, function: nodes.NodeNG, name: str, depth: int = 0) -> bool:
        """The one answer to "is this parameter an ``nnx.Rngs``?" that every rule gets (the
        shared-reference rules through :meth:`kind_of`, the grad rules through what a Module
        holds): an Rngs, an RngStream or an RNG Variable by its class (:meth:`parameter_class`),
        else, when nothing says its class, by the naming convention (:func:`names_rngs`)."""
        known = self.parameter_class(function, name, depth)
        if known is not None:
            return known.qualified_name in RNG_TYPES or self.class_kind(known) == "rngs"
        annotation = _annotation_node(function, name)
        if annotation is not None:  # a stated type (`int`, `nnx.Rngs | None`): does it name an Rngs?
            resolver = self.resolver_for(annotation)
            return any(resolver.qualified_name(part) in RNG_TYPES
                       for part in (annotation, *annotation.nodes_of_class((nodes.Name, nodes.Attribute))))
        return names_rngs(name)

    def _parameter_annotation(self, function: nodes.NodeNG, name: str) -> ClassRef | None:
        annotation = _annotation_node(function, name)
        if annotation is None:
            return None
        return self.resolve(self.resolver_for(annotation).qualified_name(annotation), at=annotation)

    def _annotation_name(self, function: nodes.NodeNG, name: str) -> str | None:
        """The qualified name a parameter's annotation spells (``jax.Ref``), class or not."""
        annotation = _annotation_node(function, name)
        return self.resolver_for(annotation).qualified_name(annotation) if annotation is not None else None

    def class_kind(self, ref: ClassRef | None, call: nodes.Call | None = None) -> str | None:
        """The kind of an instance of class ``ref`` (see :meth:`kind_of`)."""
        if ref is None:
            return None
        name = ref.short_name
        if ref.definition is None:
            if not ref.qualified_name.startswith("flax.nnx."):
                return None
            if name in RNG_CLASSES:
                return "rngs"
            if name in VARIABLE_CLASSES:
                return "variable"
            if name in nnx_api.STATELESS_MODULE_CLASSES:  # a Dropout without rngs holds no state
                return "module" if call is not None and _has_keyword(call, "rngs") else None
            if nnx_api.holds_variables(ref.qualified_name):
                return "module"
            return None
        if self._derives_from(ref.definition, VARIABLE_CLASSES):
            return "variable"
        if self._derives_from(ref.definition, RNG_CLASSES):
            return "rngs"
        if id(ref.definition) in self._kinds_in_progress:
            return None  # the class again, below itself: its other stores decide
        self._kinds_in_progress.add(id(ref.definition))
        try:
            info = self.info(ref.definition)
            arguments = self._init_arguments(ref.definition, call)
            if info.is_nnx_module and (self._flax_base_holds_variables(info)
                                       or any(self._store_may_hold_variables(store, info, arguments)
                                              for store in info.stores)):
                return "module"
            if not info.is_nnx_module and any(self._field_kind(ref.definition, name)
                                              for name in _stored_fields(ref.definition)):
                return "module"  # a dataclass holder (a registered pytree) with a Module/Variable field
            return None  # a Module storing only constants and plain arrays holds no Variables
        finally:
            self._kinds_in_progress.discard(id(ref.definition))

    def _flax_bases(self, info: ClassInfo, depth: int = 0) -> list[ClassRef]:
        """The ``flax.nnx`` classes a project class derives from, directly or through project bases."""
        found = []
        for base in info.bases:
            if base.definition is None:
                if base.qualified_name.startswith("flax.nnx."):
                    found.append(base)
            elif depth < _MAX_DEPTH:
                found.extend(self._flax_bases(self.info(base.definition), depth + 1))
        return found

    def _flax_base_holds_variables(self, info: ClassInfo) -> bool:
        """Whether a ``flax.nnx`` class that holds Variables is a base (``class
        MyAccuracy(nnx.metrics.Accuracy)`` adding only methods holds Accuracy's). The generic
        bases (``nnx.Module``, ``nnx.Pytree``, ``nnx.List``, ...) hold only what the class stores."""
        return any(nnx_api.holds_variables(base.qualified_name) for base in self._flax_bases(info)
                   if base.qualified_name not in NNX_MODULE_BASES and base.qualified_name not in nnx_api.CONTAINER_MODULES)

    def _init_arguments(self, classdef: nodes.ClassDef, call: nodes.Call | None) -> tuple | None:
        """``(__init__, {parameter: argument})`` for one construction ``call`` of ``classdef``:
        a store of a parameter holds what this call passes (``Foo(10)`` with ``self.d = d``
        holds an int, not "anything"). None when there is no call or no ``__init__``."""
        if call is None:
            return None
        init = self.init_of(classdef)
        if init is None:
            return None
        # `Foo(*xs)` / `Foo(**cfg)` may pass any parameter: only the ones bound by name count
        unpacked = any(isinstance(a, nodes.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords or [])
        return init, _bind_arguments(init, call), unpacked

    def _field_kind(self, classdef: nodes.ClassDef, name: str) -> str | None:
        """The kind an annotated dataclass field holds (``net: nnx.Module`` -> module)."""
        annotation = _stored_fields(classdef).get(name)
        if annotation is None:
            return None
        ref = self.resolve(self.resolver_for(annotation).qualified_name(annotation), at=annotation)
        kind = self.class_kind(ref) if ref is not None and ref.definition is not classdef else None
        if kind is None and ref is not None and ref.qualified_name in ("flax.nnx.Module", "flax.nnx.Pytree"):
            kind = "module"
        return kind if kind in STATEFUL_KINDS else None

    def _field_holds_variables(self, holder: nodes.NodeNG, field: str | None) -> bool:
        """Whether replacing ``field`` of ``holder``'s dataclass replaces a stateful object
        (unknown classes and fields count as not)."""
        ref = self.class_of(holder)
        return field is not None and ref is not None and ref.definition is not None \
            and self._field_kind(ref.definition, field) is not None

    def _store_may_hold_variables(self, store: Store, info: ClassInfo, arguments: tuple | None,
                                  seen: frozenset[str] = frozenset()) -> bool:
        """:meth:`_may_hold_variables` for one store of a class, for one construction
        (``arguments``: :meth:`_init_arguments`); ``self.right = self.left`` holds what the
        class stores at ``left`` (an alias, not an unknown value)."""
        value = store.value
        if isinstance(value, nodes.Attribute):
            root, parts = _attribute_chain(value)
            owner, _ = _attribute_chain(store.target) if isinstance(store.target, nodes.AssignAttr) else (None, ())
            path = ".".join(parts)
            aliased = [other for other in info.stores_of(path) if other is not store]
            if isinstance(root, nodes.Name) and isinstance(owner, nodes.Name) and root.name == owner.name \
                    and aliased and path not in seen:
                return any(self._store_may_hold_variables(other, info, arguments, seen | {path}) for other in aliased)
        return self._may_hold_variables(_argument_stored(value, arguments))

    def _may_hold_variables(self, value: nodes.NodeNG | None, depth: int = 0) -> bool:
        """Whether a stored value may be or hold an NNX Variable: unknown values may.

        Literals, functions and plain arrays (``jnp.array(1.0)``, ``np.zeros(3)``,
        ``jax.random.normal(...)``) never do: sharing them runs in Tree Mode (a pytree may
        hold one array twice), so a class storing only those is not stateful. A construction
        of a project class holds Variables exactly when that class does, and so does an
        ``nnx.Dropout`` (only when given ``rngs``).
        """
        if _is_static_value(value):
            return False
        if isinstance(value, nodes.Call) and depth <= _MAX_DEPTH:
            name = self.resolver_for(value).qualified_name(value.func) or ""
            if name.startswith(_ARRAY_MODULES):
                return False
            ref = self.resolve(name, at=value)
            if ref is not None and ref.definition is not None and not self._derives_from(
                    ref.definition, VARIABLE_CLASSES | RNG_CLASSES):
                return self.class_kind(ref, value) is not None
            if ref is not None and ref.definition is None and ref.qualified_name.startswith(f"{nnx_api.NNX}.") \
                    and ref.short_name in nnx_api.STATELESS_MODULE_CLASSES:
                return self.class_kind(ref, value) is not None  # `nnx.Dropout(0.5)`: no rngs, no state
        return True

    def is_instance_of(self, ref: ClassRef | None, short_names: frozenset[str]) -> bool:
        """Whether an instance of ``ref`` is one of the flax.nnx classes named ``short_names``:
        the class itself, or a project class deriving from it."""
        if ref is None:
            return False
        if ref.definition is None:
            return ref.qualified_name.startswith("flax.nnx.") and ref.short_name in short_names
        return self._derives_from(ref.definition, short_names)

    def _derives_from(self, classdef: nodes.ClassDef, short_names: frozenset[str], depth: int = 0) -> bool:
        for base in self.info(classdef).bases:
            if base.definition is None:
                if base.qualified_name.startswith("flax.nnx.") and base.short_name in short_names:
                    return True
            elif depth < _MAX_DEPTH and self._derives_from(base.definition, short_names, depth + 1):
                return True
        return False

    def _descend(self, cls: ClassRef | None, path: tuple[str, ...], call: nodes.Call | None, depth: int) -> str | None:
        kind = self.class_kind(cls, call)
        if not path or kind is None:
            return kind
        if kind == "rngs":
            return "rngs"  # a stream of an Rngs shares its RngKey/RngCount
        if kind != "module":
            return None  # attributes of a Variable are arrays
        head = path[0]
        if head.startswith("<"):
            return "state"
        if cls.definition is not None:
            # Alternative stores (`if`/`else`) mean "may be": the one stateful kind some
            # branch that can run gives is the answer; branches that never run don't count.
            kinds = {self.kind_of(_extend(self.ref_of(store.value), path[1:]), depth + 1)
                     for store in self.info(cls.definition).stores_of(head) if not _never_runs(store.target)}
            kinds.discard(None)
            if kinds or len(path) != 1:
                return kinds.pop() if len(kinds) == 1 else None
            # not stored by the project class: an attribute its flax base stores (`MyLinear.kernel`)
            return next(filter(None, (self._flax_attribute_kind(base, head) for base in self._flax_bases(
                self.info(cls.definition)))), None)
        if len(path) == 1:
            return self._flax_attribute_kind(cls, head)
        return None

    @staticmethod
    def _flax_attribute_kind(cls: ClassRef, head: str) -> str | None:
        """The kind of attribute ``head`` of an instance of the flax class ``cls``."""
        if head in FLAX_VARIABLE_ATTRIBUTES.get(cls.short_name, ()):
            return "variable"
        if head in FLAX_SUBMODULE_ATTRIBUTES.get(cls.short_name, ()):
            return "module"
        return None

    # -- construction replay ------------------------------------------------------------
    def init_of(self, classdef: nodes.ClassDef, depth: int = 0) -> nodes.FunctionDef | None:
        """The ``__init__`` that builds instances of ``classdef`` (its own or a project base's)."""
        found = classdef.locals.get("__init__")
        if found and isinstance(found[-1], nodes.FunctionDef):
            return found[-1]
        if depth >= _MAX_DEPTH:
            return None
        for base in self.info(classdef).bases:
            if base.definition is not None:
                init = self.init_of(base.definition, depth + 1)
                if init is not None:
                    return init
        return None

    def construction(self, classdef: nodes.ClassDef, depth: int = 0) -> Construction:
        """Replay how ``classdef`` builds an instance: stores in order, and the aliases."""
        key = id(classdef)
        if key in self._constructions:
            return self._constructions[key]
        result = Construction(classdef)
        self._constructions[key] = result  # placed before recursion: guards against cycles
        if depth > _MAX_DEPTH:
            return result
        init = result.init = self.init_of(classdef)
        if init is not None:
            replay = _Replay(self, classdef, result, depth)
            replay.method(init, (), {}, None, frozenset())
            self.replay_work += len(result.events)  # kept with the construction, for the file
        result.aliases = self._find_aliases(result)
        result.self_references = self._find_self_references(result)
        return result

    def stored_items(
        self, value: nodes.NodeNG | None, substitutions: dict | None = None, depth: int = 0
    ) -> list[tuple[tuple[str, ...], Ref | None, nodes.NodeNG | None]]:
        """What storing ``value`` puts into the tree: ``(relative path, ref, container)``.

        The value itself at ``()``, then container elements (``nnx.List([...])``,
        ``nnx.Sequential(...)``, list/tuple/dict literals, ``[x] * n``, comprehensions
        repeating an outer object: listed twice) and the constructor arguments a
        child class stores (``Noise(rngs)`` when ``Noise`` keeps ``self.rngs = rngs``).
        """
        items: list[tuple[tuple[str, ...], Ref | None, nodes.NodeNG | None]] = []
        if value is None:
            return [((), None, None)]
        items.append(((), self.ref_of(value, substitutions), None))
        self._expand(value, (), substitutions or {}, items, depth, None)
        return items

    def _expand(self, value, prefix, substitutions, items, depth, container) -> None:
        """Add what ``value`` places below ``prefix``; ``container`` is the outermost
        container expression (``nnx.List(...)``, a list literal, ...) the items sit in."""
        if depth > _MAX_DEPTH:
            return
        inner = container if container is not None else value
        if isinstance(value, nodes.Call):
            name = self._nnx_name(value)
            if name == "data" and value.args:
                self._expand(value.args[0], prefix, substitutions, items, depth + 1, container)
                return
            if name == "List" and value.args:
                self._sequence([value.args[0]], prefix, substitutions, items, depth, inner, unpack=True)
                return
            if name == "Sequential":
                self._sequence(value.args, prefix + ("layers",), substitutions, items, depth, inner)
                return
            if name == "Dict":
                for keyword in value.keywords or []:
                    if keyword.arg:
                        self._element(keyword.value, prefix + (keyword.arg,), substitutions, items, depth, inner)
                for entry in value.args[:1]:
                    self._expand(entry, prefix, substitutions, items, depth + 1, inner)
                return
            if _is_builtin_dict(value.func) and not value.args:
                for keyword in value.keywords or []:  # dict(a=x, b=y): a dict literal
                    if keyword.arg:
                        self._element(keyword.value, prefix + (keyword.arg,), substitutions, items, depth, inner)
                return
            if name in FLAX_STORED_ARGUMENTS:
                for position, keyword, path in FLAX_STORED_ARGUMENTS[name]:
                    argument = _argument(value, position, keyword)
                    if argument is not None:
                        self._element(argument, prefix + path, substitutions, items, depth, container)
                return
            cls = (self.resolve(self.resolver_for(value).qualified_name(value.func))
                   or self._local_class(value.func))
            if cls is not None and cls.definition is not None:
                init = self.init_of(cls.definition)
                if init is None:
                    self._dataclass_fields(value, cls.definition, prefix, substitutions, items, container)
                    return
                stored = self.construction(cls.definition, depth + 1).stored_parameters()
                bound = _bind_arguments(init, value)
                for parameter, entries in stored.items():
                    if parameter not in bound:
                        continue
                    argument_ref = self.ref_of(bound[parameter], substitutions)
                    for path, part in entries:
                        ref = Ref(argument_ref.root, argument_ref.path + part) if argument_ref else None
                        items.append((prefix + path, ref, container))
            return
        if isinstance(value, (nodes.List, nodes.Tuple)):
            self._sequence([value], prefix, substitutions, items, depth, inner, unpack=True)
        elif isinstance(value, nodes.Dict):
            for key, element in value.items:
                if isinstance(key, nodes.Const) and isinstance(key.value, str):
                    self._element(element, prefix + (key.value,), substitutions, items, depth, inner)
        elif isinstance(value, (nodes.BinOp, nodes.ListComp)):
            self._sequence([value], prefix, substitutions, items, depth, inner, unpack=True)
        elif isinstance(value, nodes.Name):
            # `block = Block(rngs)` then `self.blocks.append(block)`: what the bound value stores
            bindings = bound_values(value)
            if len(bindings) == 1 and not isinstance(bindings[0], nodes.Name):
                self._expand(bindings[0], prefix, substitutions, items, depth + 1, container)
        elif isinstance(value, nodes.IfExp):
            # `Child(rngs) if rate > 0 else Identity()`: what either branch would store
            for branch in (value.body, value.orelse):
                self._expand(branch, prefix, substitutions, items, depth + 1, container)

    def _dataclass_fields(self, call: nodes.Call, classdef: nodes.ClassDef, prefix, substitutions, items,
                          container) -> None:
        """``Foo(a=v, b=v)`` for a dataclass (no ``__init__`` in the source): each argument is
        stored at its field, positional arguments in field order."""
        fields = list(_fields(classdef))
        bound = dict(zip(fields, call.args))
        bound.update({k.arg: k.value for k in call.keywords or [] if k.arg in fields})
        if any(isinstance(a, nodes.Starred) for a in call.args):
            return
        stored = _stored_fields(classdef)
        for name, argument in bound.items():
            if name in stored:
                items.append((prefix + (name,), self.ref_of(argument, substitutions), container))

    def _element(self, element, path, substitutions, items, depth, container) -> None:
        items.append((path, self.ref_of(element, substitutions), container))
        self._expand(element, path, substitutions, items, depth + 1, container)

    def _sequence(self, elements, prefix, substitutions, items, depth, container, unpack=False) -> None:
        """Elements of a sequence, flattened; repeated ones (``[x] * n``) listed twice."""
        flat: list[tuple[nodes.NodeNG, nodes.NodeNG | None]] = []  # (element, loop it repeats in)
        for element in elements:
            flat.extend(_flatten(element, unpack))
        index = 0
        for element, repeated_in in flat:
            copies = 2 if repeated_in is not None else 1
            for copy in range(copies):
                path = prefix + (f"[{index}]",)
                index += 1
                if copy == 0:
                    self._element(element, path, substitutions, items, depth, container)
                    continue
                # Later iterations: objects created inside the repetition are new ones.
                sub: list = []
                self._element(element, path, substitutions, sub, depth, container)
                for item_path, ref, item_container in sub:
                    if ref is not None and _created_within(ref, repeated_in):
                        ref = None
                    items.append((item_path, ref, item_container))

    def _find_self_references(self, construction: Construction) -> list[SelfReference]:
        """Stores of the instance (or a node inside it) below itself that stay until the end
        of construction, where every object between the node and the store is a graph node
        (a Module, a Pytree, an NNX container or a list/dict element): a plain Python object
        in between is a static leaf to flax, and a ``weakref.ref`` is no reference to walk."""
        events = construction.events
        found: list[SelfReference] = []
        step = f"looking for stores of class `{construction.classdef.name}` below itself"
        for position, event in enumerate(events):
            bounds.checkpoint(step)
            ref = event.ref
            if ref is None or event.deleted or ref.root != ("self", construction.classdef):
                continue
            target = ref.path
            if len(target) >= len(event.path) or event.path[:len(target)] != target:
                continue
            if _overwritten(events, event, position + 1, len(events)):
                continue
            own = _store_target_path(event.node)
            if own is not None and target[:len(own)] == own:
                continue  # `self.stride = (self.stride, 2)`: the old object, placed below its replacement
            if not all(self._graph_node_at(construction, event.path[:length], position)
                       for length in range(len(target), len(event.path))):
                continue
            found.append(SelfReference(event, target))
        return found

    def graph_node(self, ref: Ref | None) -> bool:
        """Whether the object ``ref`` denotes is an NNX graph node (a Module or Pytree,
        also one holding no Variables, or an ``Rngs``): what Tree Mode flattens into."""
        if ref is None:
            return False
        if ref.path:
            return self.kind_of(ref) in ("module", "rngs")
        if ref.root[0] == "self":
            return self.info(ref.root[1]).is_nnx_module
        cls = None
        if ref.root[0] == "new" and isinstance(ref.root[1], nodes.Call):
            cls = self.class_of(ref.root[1])
        elif ref.root[0] == "param":
            cls = self._parameter_annotation(ref.root[1], ref.root[2]) or self.call_site_class(ref.root[1], ref.root[2])
        if cls is None:
            return self.kind_of(ref) in ("module", "rngs")
        if cls.definition is not None:
            return self.info(cls.definition).is_nnx_module
        return cls.qualified_name.startswith("flax.nnx.") and (
            nnx_api.holds_variables(cls.qualified_name) or cls.short_name in RNG_CLASSES
            or cls.short_name in nnx_api.STATELESS_MODULE_CLASSES
            or cls.qualified_name in nnx_api.CONTAINER_MODULES)

    def _graph_node_at(self, construction: Construction, path: tuple[str, ...], before: int) -> bool:
        """Whether the object stored at ``path`` (by the latest store before event
        ``before``) is a graph node; ``()`` is the instance itself."""
        if not path:
            return self.info(construction.classdef).is_nnx_module
        for event in reversed(construction.events[:before]):
            if event.path == path and not event.deleted:
                if self.graph_node(event.ref):
                    return True
                # a list or dict literal holding nodes: flax walks its elements
                return event.ref is None and any(
                    e.path[:len(path)] == path and len(e.path) > len(path) and e.path[len(path)].startswith("[")
                    for e in construction.events)
        return False

    def variable_free_aliases(self, classdef: nodes.ClassDef) -> list[Alias]:
        """Graph nodes holding no Variables that an instance of ``classdef`` reaches at two
        paths (``self.left = Shared(); self.right = self.left``), kind ``node``: Tree Mode
        accepts them, but its traversals walk them once per path (NNX111). Memoised."""
        key = id(classdef)
        if key not in self._variable_free_aliases:
            self._variable_free_aliases[key] = self._find_aliases(self.construction(classdef), variable_free=True)
        return self._variable_free_aliases[key]

    def variable_free_node(self, ref: Ref | None) -> bool:
        """Whether ``ref`` is a graph node (a Module or Pytree of a known class) that holds no
        Variables: what Tree Mode takes reachable twice, rebuilding it once per path."""
        return ref is not None and not ref.path and self.graph_node(ref) and self.kind_of(ref) is None

    def _find_aliases(self, construction: Construction, variable_free: bool = False) -> list[Alias]:
        """Objects holding Variables (or raw refs) stored at two paths; with
        ``variable_free``, graph nodes holding none (:meth:`variable_free_aliases`)."""
        events = construction.events
        aliases: list[Alias] = []
        step = f"looking for objects stored twice by class `{construction.classdef.name}`"
        for position, event in enumerate(events):
            bounds.checkpoint(step)  # quadratic in the events
            if event.ref is None or event.deleted:
                continue
            if variable_free:
                kind = "node" if self.variable_free_node(_stored_object(events, position, construction)) else None
            else:
                kind = self.kind_of(event.ref)
            if kind not in SHARED_KINDS and kind != "node":
                continue
            ref = event.ref
            if ref.root == ("self", construction.classdef) and event.path[:len(ref.path)] == ref.path:
                continue  # the instance (or a node of it) stored below itself: a cycle, not an alias
            found: Alias | None = None
            ref = event.ref
            if ref.root[0] == "self" and ref.root[1] is construction.classdef and ref.path:
                first_path = ref.path
                holder = _live_store_at(events, position, first_path)
                if holder is not None and not _prefix_related(first_path, event.path):
                    if not _exclusive(holder.guards, event.guards):
                        found = Alias(holder, first_path, event, ref, kind)
            if found is None:
                for earlier in events[:position]:
                    if earlier.ref is None or earlier.deleted or not earlier.ref.overlaps(ref):
                        continue
                    if _prefix_related(earlier.path, event.path) or _exclusive(earlier.guards, event.guards):
                        continue
                    if _overwritten(events, earlier, events.index(earlier) + 1, position):
                        continue
                    if len(earlier.ref.path) > len(ref.path):
                        if variable_free:
                            continue  # a part of the stored object: not the node itself
                        # `self.config = m.config` then `self.model = m`: what is held twice
                        # is the part, `m.config`; only a part that holds Variables matters.
                        part_kind = self.kind_of(earlier.ref)
                        if part_kind not in STATEFUL_KINDS:
                            continue
                        kind = part_kind
                    if earlier.container is not None and earlier.container is event.container and (
                        len(earlier.path) and len(event.path)
                    ):
                        pass  # two elements of one container: still an alias (A3)
                    found = Alias(earlier, earlier.path, event, ref, kind)
                    break
            if found is None:
                continue
            end = len(events)
            if _overwritten(events, event, position + 1, end):
                continue
            if found.first is not None and _overwritten(events, found.first, position + 1, end, path=found.first_path,
                                                        guards=event.guards):
                continue
            aliases.append(found)
        return aliases


def self_store(node: nodes.NodeNG, self_name: str) -> tuple[tuple[str, ...], nodes.NodeNG | None] | None:
    """``(path, value)`` when ``node`` stores on ``self``: the one definition of a store.

    ``self.a.b = v`` (also in tuple unpacking and augmented assignment) gives
    ``(("a", "b"), v)``; ``setattr(self, "a", v)`` with a literal name gives ``(("a",), v)``
    (the name is one part, whatever characters it holds). Both store models of
    this module (:attr:`ClassInfo.stores` and the construction replay) read stores here.
    """
    if isinstance(node, nodes.AssignAttr):
        path = _self_path(node, self_name)
        return (tuple(path.split(".")), assigned_value(node)) if path is not None else None
    if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Name) and node.func.name == "setattr" \
            and len(node.args) >= 3 and isinstance(node.args[0], nodes.Name) and node.args[0].name == self_name:
        name = node.args[1]
        if isinstance(name, nodes.Const) and isinstance(name.value, str):
            return (name.value,), node.args[2]
    return None


def _self_path(node: nodes.AssignAttr, self_name: str) -> str | None:
    """``self.a.b = ...`` -> ``"a.b"``; None when the chain does not start at ``self``."""
    base, parts = _attribute_chain(node)
    if isinstance(base, nodes.Name) and base.name == self_name:
        return ".".join(parts)
    return None


def _attribute_chain(node: nodes.AssignAttr | nodes.Attribute) -> tuple[nodes.NodeNG, tuple[str, ...]]:
    """``x.a.b = ...`` -> ``(x, ("a", "b"))``: the expression the chain starts at, and its names."""
    parts = [node.attrname]
    current = node.expr
    while isinstance(current, nodes.Attribute):
        parts.insert(0, current.attrname)
        current = current.expr
    return current, tuple(parts)


def _store_target_path(node: nodes.NodeNG) -> tuple[str, ...] | None:
    """``("a", "b")`` for the statement ``<self>.a.b = ...`` (the attribute chain it assigns,
    whatever the first name); None for other kinds of stores."""
    return _attribute_chain(node)[1] if isinstance(node, nodes.AssignAttr) else None


def assigned_value(target: nodes.AssignAttr) -> nodes.NodeNG | None:
    """The value stored into ``target`` (also one element of a tuple-to-tuple assignment)."""
    parent = target.parent
    if isinstance(parent, (nodes.Assign, nodes.AnnAssign, nodes.AugAssign)):
        return parent.value
    if isinstance(parent, (nodes.Tuple, nodes.List)) and isinstance(parent.parent, nodes.Assign):
        value = parent.parent.value
        if isinstance(value, (nodes.Tuple, nodes.List)) and len(value.elts) == len(parent.elts):
            return value.elts[parent.elts.index(target)]
    return None


# ---------------------------------------------------------------------------------------
# Object identity and construction replay
# ---------------------------------------------------------------------------------------

_MAX_REF_DEPTH = 12
#: flax.nnx optimizers: their first argument must be a Module (what they optimise).
OPTIMIZER_CLASSES = frozenset({"Optimizer", "ModelAndOptimizer"})
#: Attributes and methods that read or write a Variable's value (``m.w.value``, ``m.w.get_value()``).
_VARIABLE_ACCESSORS = frozenset({"value", "get_value", "set_value"})


def _is_subscript_store(node: nodes.Subscript) -> bool:
    """``x[...] = v`` / ``x[i] += v``: an in-place Variable write (jax arrays cannot be written)."""
    parent = node.parent
    return (isinstance(parent, nodes.Assign) and node in parent.targets) or (
        isinstance(parent, nodes.AugAssign) and parent.target is node)

#: Kinds of objects that hold NNX Variables (and so may not be reachable twice).
STATEFUL_KINDS = frozenset({"module", "variable", "rngs", "state"})
#: Kinds of objects Tree Mode may not reach twice: those holding Variables, and raw mutable
#: array refs (``jax.new_ref``): flax's graph APIs raise "Duplicate Ref ... does not support
#: shared references", and its transforms hand the tree to JAX, which rejects one ref passed
#: twice ("only one reference to a mutable array may be passed"). Graph mode deduplicates both.
SHARED_KINDS = STATEFUL_KINDS | {"ref"}
#: Calls that make a raw mutable array ref (``jax.experimental.mutable_array`` before jax 0.7).
MUTABLE_ARRAY_CONSTRUCTORS = frozenset({"jax.new_ref", "jax.ref.new_ref", "jax.experimental.mutable_array"})
#: The type of those refs, as annotations name it (``def f(m: jax.Ref)``).
MUTABLE_ARRAY_TYPES = frozenset({"jax.Ref", "jax.ref.Ref"})
RNG_CLASSES = nnx_api.RNG_OBJECTS
#: Qualified names of what holds RNG state: the Rngs objects and the RNG Variables.
RNG_TYPES = nnx_api.qualified(nnx_api.RNG_OBJECTS | nnx_api.variable_types("rng"))


def names_rngs(name: str) -> bool:
    """The naming convention of an ``nnx.Rngs`` parameter whose class nothing states:
    ``rngs``, ``dropout_rngs`` (flax's own layers and examples follow it)."""
    return name == "rngs" or name.endswith("_rngs")
VARIABLE_CLASSES = nnx_api.variable_types()


@dataclass(frozen=True)
class Ref:
    """A statically known object: where it comes from (``root``) and a path within it.

    Roots: ``("self", ClassDef)`` — the instance under construction in a method;
    ``("param", function, name)`` — whatever a caller passed; ``("new", Call)`` — the
    object one construction (or ``.fork()``) made. Two refs *overlap* when they share the
    root and one path is a prefix of the other: the same object, or an object and its part.
    Path parts are attribute names, ``[i]`` for sequence positions and ``<...>`` for
    filtered state views (``nnx.state(m, nnx.Param)``).
    """

    root: tuple
    path: tuple[str, ...] = ()

    def child(self, *parts: str) -> Ref:
        return Ref(self.root, self.path + tuple(parts))

    def overlaps(self, other: Ref) -> bool:
        if self.root != other.root:
            return False
        shorter = min(len(self.path), len(other.path))
        return self.path[:shorter] == other.path[:shorter]

    @property
    def origin(self) -> str:
        return self.root[0]

    def describe(self) -> str:
        """Source-like text: ``self.embed.embedding``, ``rngs.dropout``, ``Linear(...)``."""
        if self.root[0] == "self":
            base = "self"
        elif self.root[0] == "param":
            base = self.root[2]
        else:
            call = self.root[1]
            func = call.func.as_string() if isinstance(call, nodes.Call) else "?"
            base = f"{func}(...)"
        return join_path((base,) + self.path)


def join_path(parts: tuple[str, ...] | list[str]) -> str:
    """``("layers", "[0]", "bias")`` -> ``layers[0].bias``."""
    text = ""
    for part in parts:
        if part.startswith("[") or not text:
            text += part
        else:
            text += "." + part
    return text


@dataclass
class StoreEvent:
    """One object placed into (or, ``deleted``, removed from) the tree under construction."""

    path: tuple[str, ...]
    ref: Ref | None
    #: The statement's node (an ``AssignAttr``, a ``setattr``/``delattr`` call, ...).
    node: nodes.NodeNG
    #: The node in the replayed class's own code that causes the store: ``node`` itself,
    #: or the ``super().__init__(...)`` call for stores made by a base class.
    origin: nodes.NodeNG
    #: Enclosing branches, ``(id(node), branch)``: a later store only undoes an earlier
    #: one when it runs whenever the earlier one ran.
    guards: frozenset
    #: The container/constructor expression the stored object sits in, if any.
    container: nodes.NodeNG | None = None
    deleted: bool = False

    @property
    def display_path(self) -> str:
        return join_path(self.path)


@dataclass
class Alias:
    """One object reachable at two paths of a constructed instance."""

    first: StoreEvent | None
    first_path: tuple[str, ...]
    second: StoreEvent
    ref: Ref
    kind: str


@dataclass
class SelfReference:
    """A store that puts a graph node below itself: ``self.sub = self``,
    ``self.child = Child(self)`` when ``Child`` keeps ``self.owner = owner``, or
    ``self.block.up = self.block``. ``store.path`` is where the back-reference sits and
    ``target`` the path of the node it points back to (``()``: the instance itself)."""

    store: StoreEvent
    target: tuple[str, ...]


@dataclass
class Construction:
    """The replay of one class's construction (see :meth:`ClassModel.construction`)."""

    classdef: nodes.ClassDef
    #: The ``__init__`` replayed (the class's own or an inherited one), if any.
    init: nodes.FunctionDef | None = None
    events: list[StoreEvent] = field(default_factory=list)
    aliases: list[Alias] = field(default_factory=list)
    #: Stores that make the instance (or a Module inside it) hold itself (see SelfReference).
    self_references: list[SelfReference] = field(default_factory=list)

    def stored_parameters(self) -> dict[str, list[tuple[tuple[str, ...], tuple[str, ...]]]]:
        """``__init__`` parameters stored as they are: name -> [(stored path, part of it)].

        ``self.rngs = rngs`` gives ``{"rngs": [(("rngs",), ())]}``; ``self.r =
        rngs.dropout`` gives ``{"rngs": [(("r",), ("dropout",))]}``. Stores later undone
        (overwritten or deleted unconditionally) are left out.
        """
        result: dict[str, list[tuple[tuple[str, ...], tuple[str, ...]]]] = {}
        for position, event in enumerate(self.events):
            ref = event.ref
            if ref is None or ref.root[0] != "param" or event.deleted or ref.root[1] is not self.init:
                continue
            if _overwritten(self.events, event, position + 1, len(self.events)):
                continue
            result.setdefault(ref.root[2], []).append((event.path, ref.path))
        return result


def _is_static(function: nodes.FunctionDef) -> bool:
    decorators = function.decorators.nodes if function.decorators else []
    return any(isinstance(d, nodes.Name) and d.name in ("staticmethod", "classmethod") for d in decorators)


def _fields(classdef: nodes.ClassDef) -> dict[str, nodes.NodeNG]:
    """Annotated class-body fields of a dataclass-decorated class, a ``flax.struct.PyTreeNode``
    or a ``typing.NamedTuple`` (name -> annotation)."""
    decorators = classdef.decorators.nodes if classdef.decorators else []
    names = {d.attrname if isinstance(d, nodes.Attribute) else getattr(d, "name", None)
             for d in (dd.func if isinstance(dd, nodes.Call) else dd for dd in decorators)}
    if not names & {"dataclass", "struct", "pytree_dataclass"} and not _is_named_tuple(classdef) \
            and not _base_named(classdef, _FIELD_CLASS_BASES):
        return {}
    return {statement.target.name: statement.annotation for statement in classdef.body
            if isinstance(statement, nodes.AnnAssign) and isinstance(statement.target, nodes.AssignName)
            and _annotation_head(statement.annotation) != "ClassVar"}  # not an __init__ parameter


#: Bases whose subclasses are dataclasses (fields from annotations, ``.replace``).
_FIELD_CLASS_BASES = frozenset({"PyTreeNode"})


def _is_named_tuple(classdef: nodes.ClassDef) -> bool:
    """``class Point(NamedTuple)`` / ``typing.NamedTuple``."""
    return _base_named(classdef, frozenset({"NamedTuple"}))


def _base_named(classdef: nodes.ClassDef, names: frozenset[str]) -> bool:
    return any((base.attrname if isinstance(base, nodes.Attribute) else getattr(base, "name", None)) in names
               for base in classdef.bases)


def _stored_fields(classdef: nodes.ClassDef) -> dict[str, nodes.NodeNG]:
    """The dataclass fields an instance keeps: an ``InitVar`` only reaches ``__post_init__``."""
    return {name: annotation for name, annotation in _fields(classdef).items()
            if _annotation_head(annotation) != "InitVar"}


def _annotation_head(annotation: nodes.NodeNG | None) -> str | None:
    """``InitVar`` for ``InitVar[nnx.Rngs]`` / ``dataclasses.InitVar``; the outer name."""
    if isinstance(annotation, nodes.Subscript):
        annotation = annotation.value
    if isinstance(annotation, nodes.Attribute):
        return annotation.attrname
    return getattr(annotation, "name", None)


def _never_runs(node: nodes.NodeNG) -> bool:
    """Whether ``node`` sits in a branch that cannot run: ``if False:``, ``if 0:``, the
    ``else`` of ``if True:``, ``if TYPE_CHECKING:``."""
    child, parent = node, node.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.ClassDef, nodes.Module)):
        if isinstance(parent, nodes.If):
            test = parent.test
            constant = test.value if isinstance(test, nodes.Const) else None
            if isinstance(test, nodes.Name) and test.name == "TYPE_CHECKING":
                constant = True  # the body is for type checkers only
                if child in parent.body:
                    return True
            if isinstance(test, nodes.Const) and child in parent.body and not constant:
                return True
            if isinstance(test, nodes.Const) and child in parent.orelse and constant:
                return True
        child, parent = parent, parent.parent
    return False


def _is_builtin_dict(function: nodes.NodeNG) -> bool:
    """``dict`` not rebound in this file (the name resolver leaves builtins unresolved)."""
    if not isinstance(function, nodes.Name) or function.name != "dict":
        return False
    scope, _assignments = lookup(function)
    return isinstance(scope, nodes.Module) and scope.name == "builtins"


#: Modules whose functions return plain arrays (never Variables).
_ARRAY_MODULES = ("jax.numpy.", "numpy.", "jax.random.", "jax.lax.", "jax.nn.")


def _is_static_value(value: nodes.NodeNG | None) -> bool:
    """Literals and functions: never NNX state."""
    if isinstance(value, (nodes.Const, nodes.JoinedStr, nodes.Lambda)):
        return True
    if isinstance(value, (nodes.Tuple, nodes.List, nodes.Set)):
        return all(_is_static_value(element) for element in value.elts)
    return False


def _has_keyword(call: nodes.Call, name: str) -> bool:
    for keyword in call.keywords or []:
        if keyword.arg == name:
            return not (isinstance(keyword.value, nodes.Const) and keyword.value.value is None)
    return False


def _annotation_node(function: nodes.NodeNG, name: str) -> nodes.NodeNG | None:
    """The annotation of ``function``'s parameter ``name`` (None: none, or a string)."""
    arguments = getattr(function, "args", None)
    if not isinstance(arguments, nodes.Arguments):
        return None
    pairs = list(zip(arguments.args or [], arguments.annotations or []))
    pairs += list(zip(arguments.kwonlyargs or [], arguments.kwonlyargs_annotations or []))
    pairs += list(zip(arguments.posonlyargs or [], arguments.posonlyargs_annotations or []))
    for argument, annotation in pairs:
        if argument.name == name and annotation is not None:
            if isinstance(annotation, nodes.Const) and isinstance(annotation.value, str):
                return None  # string annotations are not resolved
            return annotation
    return None


def _keyword_may_be_true(call: nodes.Call, name: str) -> bool:
    """Whether ``call`` may pass ``name=True``: given as anything but the constant False,
    or possibly inside ``**kwargs``."""
    for keyword in call.keywords or []:
        if keyword.arg is None or keyword.arg == name:
            return not (isinstance(keyword.value, nodes.Const) and keyword.value.value is False)
    return False


def _view_part(filters: list[nodes.NodeNG]) -> str:
    return "<" + ", ".join(f.as_string() for f in filters) + ">"


def _extend(ref: Ref | None, path: tuple[str, ...]) -> Ref | None:
    return Ref(ref.root, ref.path + tuple(path)) if ref is not None else None


def _argument(call: nodes.Call, position: int | None, keyword: str) -> nodes.NodeNG | None:
    for item in call.keywords or []:
        if item.arg == keyword:
            return item.value
    if position is not None and position < len(call.args):
        argument = call.args[position]
        if not any(isinstance(a, nodes.Starred) for a in call.args[: position + 1]):
            return argument
    return None


def _bind_arguments(
    function: nodes.FunctionDef | nodes.Lambda, call: nodes.Call, skip_first: bool = True, argument_offset: int = 0
) -> dict[str, nodes.NodeNG]:
    """Parameter name -> argument expression for a call of ``function`` (best effort).

    ``skip_first``: the function is a method called on an instance (``self`` is implicit);
    ``argument_offset``: leading call arguments that are not the function's (``Base.__init__(self, ...)``).
    """
    arguments = function.args
    positional = list(arguments.posonlyargs or []) + list(arguments.args or [])
    if skip_first and positional:
        positional = positional[1:]
    bound: dict[str, nodes.NodeNG] = {}
    for parameter, argument in zip(positional, call.args[argument_offset:]):
        if isinstance(argument, nodes.Starred):
            break
        bound[parameter.name] = argument
    names = {p.name for p in positional} | {p.name for p in arguments.kwonlyargs or []}
    for keyword in call.keywords or []:
        if keyword.arg in names:
            bound[keyword.arg] = keyword.value
    return bound


def _flatten(element: nodes.NodeNG, unpack: bool) -> list[tuple[nodes.NodeNG, nodes.NodeNG | None]]:
    """Elements of a sequence expression; the second item is the repetition they sit in."""
    if isinstance(element, nodes.Starred):
        return _flatten(element.value, True)
    if not unpack:
        return [(element, None)]
    if isinstance(element, (nodes.List, nodes.Tuple)):
        flat = []
        for item in element.elts:
            flat.extend(_flatten(item, False) if not isinstance(item, nodes.Starred) else _flatten(item, True))
        return flat
    if isinstance(element, nodes.BinOp) and element.op == "*":
        sequence = element.left if isinstance(element.left, (nodes.List, nodes.Tuple)) else element.right
        if isinstance(sequence, (nodes.List, nodes.Tuple)) and not (
            isinstance(element.left, nodes.Const) and isinstance(element.right, nodes.Const)
        ):
            count = element.right if sequence is element.left else element.left
            if isinstance(count, nodes.Const) and isinstance(count.value, int) and count.value < 2:
                return [(item, None) for item in sequence.elts]
            return [(item, element) for item in sequence.elts]
    if isinstance(element, (nodes.ListComp, nodes.GeneratorExp)):
        return [(element.elt, element)]
    return [(element, None)]


def _created_within(ref: Ref, scope: nodes.NodeNG) -> bool:
    """Whether the object ``ref`` denotes is created anew by code inside ``scope``."""
    if ref.root[0] == "new":
        node = ref.root[1]
    elif ref.root[0] == "param":
        node = ref.root[1]  # a lambda/function defined inside: a fresh parameter each time
    else:
        return False
    while node is not None:
        if node is scope:
            return True
        node = node.parent
    return False


def _prefix_related(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


def _exclusive(a: frozenset, b: frozenset) -> bool:
    """Two stores in different branches of one ``if`` can never both run."""
    branches_a = {key: branch for key, branch in a if branch in ("body", "orelse")}
    return any(branches_a.get(key) not in (None, branch) for key, branch in b if branch in ("body", "orelse"))


def _overwritten(
    events: list[StoreEvent], event: StoreEvent, start: int, end: int,
    path: tuple[str, ...] | None = None, guards: frozenset | None = None,
) -> bool:
    """Whether a store/delete in ``events[start:end]`` replaces ``path`` (or a parent) for sure."""
    path = event.path if path is None else path
    guards = event.guards if guards is None else guards
    for later in events[start:end]:
        if later.node is event.node and not later.deleted:
            continue  # items of the same statement
        if len(later.path) <= len(path) and path[: len(later.path)] == later.path and later.guards <= guards:
            return True
    return False


def _argument_stored(value: nodes.NodeNG | None, arguments: tuple | None) -> nodes.NodeNG | None:
    """What a stored ``value`` is for one construction: the argument the call passes when
    ``value`` reads an ``__init__`` parameter unchanged (its default when the call passes
    none), else ``value`` itself (``arguments``: :meth:`ClassModel._init_arguments`)."""
    if arguments is None or not isinstance(value, nodes.Name):
        return value
    init, bound, unpacked = arguments
    _scope, assignments = lookup(value)
    if len(assignments) != 1 or not isinstance(assignments[0], nodes.AssignName) \
            or assignments[0].parent is not init.args:
        return value
    if value.name in bound:
        return bound[value.name]
    if unpacked:
        return value
    try:
        return init.args.default_value(value.name)
    except Exception:  # astroid's NoDefault: a required parameter the call does not show
        return value


def _stored_object(events: list[StoreEvent], position: int, construction: Construction) -> Ref | None:
    """The object event ``position`` stores: its ref, or for ``self.right = self.left`` the
    ref of the store that ``self.left`` holds then (the object itself, not a path to it)."""
    ref = events[position].ref
    if ref is not None and ref.root == ("self", construction.classdef) and ref.path:
        holder = _live_store_at(events, position, ref.path)
        return holder.ref if holder is not None and holder.path == ref.path else None
    return ref


def _live_store_at(events: list[StoreEvent], position: int, path: tuple[str, ...]) -> StoreEvent | None:
    """The latest store before ``position`` whose path holds ``path`` (itself or a parent)."""
    for event in reversed(events[:position]):
        if len(event.path) <= len(path) and path[: len(event.path)] == event.path:
            return None if event.deleted else event
    return None


def _guards(node: nodes.NodeNG, stop: nodes.NodeNG) -> frozenset:
    found = set()
    child, current = node, node.parent
    while current is not None and current is not stop:
        if isinstance(current, nodes.If):
            found.add((id(current), "body" if child in current.body else "orelse" if child in current.orelse else "test"))
        elif isinstance(current, (nodes.For, nodes.While)):
            found.add((id(current), "loop" if child in current.body else "loop-else"))
        elif isinstance(current, nodes.Try if hasattr(nodes, "Try") else nodes.TryExcept):
            found.add((id(current), "try"))
        elif isinstance(current, nodes.ExceptHandler):
            found.add((id(current), "except"))
        elif isinstance(current, nodes.IfExp):
            found.add((id(current), "ifexp"))
        child, current = current, current.parent
    return frozenset(found)


def _walk_nodes(statements: list[nodes.NodeNG]):
    """Nodes of ``statements`` in source order, not entering nested functions/classes."""
    stack = list(reversed(statements))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.Lambda, nodes.ClassDef)):
            continue
        stack.extend(reversed(list(node.get_children())))


class _Replay:
    """Replays one class's ``__init__`` (with helpers and base initialisers) into events."""

    def __init__(self, model: ClassModel, classdef: nodes.ClassDef, result: Construction, depth: int) -> None:
        self.model = model
        self.classdef = classdef
        self.result = result
        self.depth = depth
        self.active: set[int] = set()
        self.step = f"replaying how class `{classdef.name}` is constructed"

    def method(self, method, guards, substitutions, origin, outer: frozenset) -> None:
        if id(method) in self.active or len(self.active) > _MAX_DEPTH or not method.args.args:
            return
        # Initialisers calling base initialisers several times replay them that many times
        # over, up to _MAX_DEPTH deep: the file's replay steps (and the events kept) are counted.
        self.model.replay_work += 1
        bounds.check_count(self.model.replay_work + len(self.result.events), bounds.LIMITS.replay_steps, self.step)
        bounds.checkpoint(self.step)
        self.active.add(id(method))
        self_name = method.args.args[0].name
        events = self.result.events
        for node in _walk_nodes(method.body):
            # the guards are asked for only where an event can come from: most nodes are neither
            stored = self_store(node, self_name)
            if stored is not None:
                path, value = stored
                self._store(path, value, node, origin, outer | _guards(node, method), substitutions)
            elif isinstance(node, nodes.DelAttr):
                path = _self_path(node, self_name)
                if path is not None:
                    events.append(StoreEvent(tuple(path.split(".")), None, node, origin or node,
                                             outer | _guards(node, method), deleted=True))
            elif isinstance(node, nodes.Call):
                self._call(node, method, self_name, outer | _guards(node, method), substitutions, origin)
        self.active.discard(id(method))

    def _store(self, path, value, node, origin, guards, substitutions) -> None:
        for relative, ref, container in self.model.stored_items(value, substitutions, self.depth):
            self.result.events.append(
                StoreEvent(path + relative, ref, node, origin or node, guards, container if relative else None)
            )

    def _call(self, node: nodes.Call, method, self_name, guards, substitutions, origin) -> None:
        func = node.func
        is_self = lambda n: isinstance(n, nodes.Name) and n.name == self_name  # noqa: E731
        if isinstance(func, nodes.Name) and func.name in ("setattr", "delattr") and len(node.args) >= 2:
            target, name = node.args[0], node.args[1]
            if func.name == "delattr" and is_self(target) and isinstance(name, nodes.Const) \
                    and isinstance(name.value, str):
                self.result.events.append(StoreEvent((name.value,), None, node, origin or node, guards, deleted=True))
            return  # setattr is a store: handled by self_store in method()
        if not isinstance(func, nodes.Attribute):
            return
        # self.<path>.append(x): x placed in the list at <path>
        if func.attrname == "append" and len(node.args) == 1:
            path = _attribute_path(func.expr, self_name)
            if path:
                index = sum(1 for e in self.result.events if e.path[:-1] == path and e.path[-1:] and
                            e.path[-1].startswith("["))
                loop = _enclosing_loop(node, method)
                copies = 2 if loop is not None else 1
                for copy in range(copies):
                    items = self.model.stored_items(node.args[0], substitutions, self.depth)
                    for relative, ref, container in items:
                        if copy and ref is not None and _created_within(ref, loop):
                            ref = None
                        self.result.events.append(StoreEvent(
                            path + (f"[{index + copy}]",) + relative, ref, node, origin or node, guards,
                            container if relative else None))
            return
        if func.attrname == "__init__":
            base_init = self._base_init(func.expr, method)
            if base_init is not None:
                explicit_self = not (isinstance(func.expr, nodes.Call))
                args_call = node
                bound = _bind_call(base_init, args_call, skip_self_argument=explicit_self)
                subs = {(base_init, name): self.model.ref_of(arg, substitutions) for name, arg in bound.items()}
                self.method(base_init, (), subs, origin or node, guards)
            return
        if is_self(func.expr):
            helper = self._lookup_method(func.attrname)
            if helper is not None and helper.name != "__init__":
                bound = _bind_call(helper, node, skip_self_argument=False)
                subs = {(helper, name): self.model.ref_of(arg, substitutions) for name, arg in bound.items()}
                helper_origin = origin
                if helper_origin is None and helper.parent is not self.classdef:
                    helper_origin = node  # an inherited helper: report at the call
                self.method(helper, (), subs, helper_origin, guards)

    def _lookup_method(self, name: str) -> nodes.FunctionDef | None:
        classdef = self.classdef
        for _ in range(_MAX_DEPTH):
            found = classdef.locals.get(name)
            if found and isinstance(found[-1], nodes.FunctionDef):
                return found[-1]
            bases = [b.definition for b in self.model.info(classdef).bases if b.definition is not None]
            if not bases:
                return None
            classdef = bases[0]
        return None

    def _base_init(self, expression: nodes.NodeNG, method: nodes.FunctionDef) -> nodes.FunctionDef | None:
        owner = method.parent
        if not isinstance(owner, nodes.ClassDef):
            return None
        if isinstance(expression, nodes.Call) and isinstance(expression.func, nodes.Name) and expression.func.name == "super":
            for base in self.model.info(owner).bases:
                if base.definition is not None:
                    return self.model.init_of(base.definition)
            return None
        name = self.model.resolver_for(expression).qualified_name(expression)
        ref = self.model.resolve(name) or self.model._local_class(expression)
        if ref is not None and ref.definition is not None:
            return self.model.init_of(ref.definition)
        return None


def _within(node: nodes.NodeNG, scope: nodes.NodeNG) -> bool:
    """Whether ``node`` sits inside ``scope`` (a recursive call passes the parameter to itself)."""
    parent = node.parent
    while parent is not None:
        if parent is scope:
            return True
        parent = parent.parent
    return False


def _bind_call(function: nodes.FunctionDef, call: nodes.Call, skip_self_argument: bool) -> dict[str, nodes.NodeNG]:
    """Bind a method call's arguments; ``skip_self_argument`` when ``self`` is passed explicitly."""
    return _bind_arguments(function, call, argument_offset=1 if skip_self_argument else 0)


def _attribute_path(expression: nodes.NodeNG, self_name: str) -> tuple[str, ...] | None:
    parts: list[str] = []
    while isinstance(expression, nodes.Attribute):
        parts.insert(0, expression.attrname)
        expression = expression.expr
    if isinstance(expression, nodes.Name) and expression.name == self_name and parts:
        return tuple(parts)
    return None


def _enclosing_loop(node: nodes.NodeNG, stop: nodes.NodeNG) -> nodes.NodeNG | None:
    current = node.parent
    while current is not None and current is not stop:
        if isinstance(current, (nodes.For, nodes.While)):
            return current
        current = current.parent
    return None
