"""Classes by name, a part of the class model: which class a name or an annotation denotes
(in this file, another project file or ``flax.nnx``), what a class stores during construction
(:class:`~nnx_lint.analysis.class_info.ClassInfo`, with its bases), the methods and the
``__init__`` its instances run, and the project function a call runs by name.

:class:`ClassHierarchy` is the part every other part of
:class:`nnx_lint.analysis.classes.ClassModel` stands on; it asks none of them.
"""
from __future__ import annotations

import bisect

from astroid import nodes

from nnx_lint.analysis.annotations import annotation_head
from nnx_lint.analysis.class_info import MAX_DEPTH, ClassInfo, ClassRef, Store, self_store
from nnx_lint.analysis.flow import class_definitions, lookup
from nnx_lint.analysis.names import NameResolver, base_classes
from nnx_lint.analysis.project import Project
from nnx_lint.base.node_index import nodes_of_class
from nnx_lint.flax_table import nnx_api
from nnx_lint.flax_table.names import NNX_MODULE_BASES, NNX_PREFIX

#: The methods a test framework runs before each test method (unittest, pytest's classes): what
#: they store on ``self`` is there in every test, as if ``__init__`` stored it.
_TEST_SETUPS = ("setUp", "setup_method")


class ClassHierarchy:
    """Classes by name and what they store, for one analysed file (a part of the class model)."""

    def __init__(self, module: nodes.Module, resolver: NameResolver, project: Project) -> None:
        self.module = module
        self.resolver = resolver
        self.project = project
        self._infos: dict[int, ClassInfo] = {}
        self._lines_of: dict[str, tuple[list[int], list[nodes.NodeNG]]] = {}
        #: A name resolver per other module the analysis reads.
        self._resolvers: dict[nodes.Module, NameResolver] = {}

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
        if module_name == self.module.name:
            found = self.module.locals.get(name) or []
            node = found[-1] if found else None
            if at is not None and len(found) > 1 and at.root() is self.module:
                node = self._in_force_at(name, found, at.lineno or 0) or node
        else:
            node = self.project.definition(qualified_name)
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
        """The :class:`ClassRef` of a class definition (a local class gets ``<local>`` in its name)."""
        root = classdef.root()
        if classdef.parent is root:
            return ClassRef(f"{root.name}.{classdef.name}", classdef)
        return ClassRef(f"{root.name}.<local>.{classdef.name}", classdef)

    def local_class(self, expression: nodes.NodeNG) -> ClassRef | None:
        """A class defined inside a function (``def test(): class Foo(nnx.Module): ...``)."""
        if not isinstance(expression, nodes.Name) or not class_definitions(expression):
            return None
        _scope, assignments = lookup(expression)
        return self.ref_of_definition(assignments[0]) if len(assignments) == 1 else None

    def annotated_class(self, annotation: nodes.NodeNG | None) -> ClassRef | None:
        """The class an annotation names (:func:`~nnx_lint.analysis.annotations.annotation_head`):
        a resolved name, or a class defined in the enclosing function (``def step(m:
        _LearnableScale)`` next to ``class _LearnableScale`` in a test)."""
        head = annotation_head(annotation)
        if head is None:
            return None
        return self.resolve(self.resolver_for(head).qualified_name(head), at=annotation) or self.local_class(head)

    def annotation_qualified_name(self, annotation: nodes.NodeNG | None) -> str | None:
        """The qualified name the head of an annotation spells (``jax.Ref``), class or not."""
        head = annotation_head(annotation)
        return self.resolver_for(head).qualified_name(head) if head is not None else None

    def resolver_for(self, node: nodes.NodeNG) -> NameResolver:
        """The name resolver of the module ``node`` belongs to (the linted module's, or one
        per project module the analysis reads)."""
        root = node.root()
        if root is self.module:  # the common case: every qualified name of the file asks
            return self.resolver
        resolver = self._resolvers.get(root)
        if resolver is None:
            resolver = self._resolvers[root] = NameResolver(root, self.project)
        return resolver

    def nnx_name(self, call: nodes.Call) -> str | None:
        """The short ``flax.nnx`` name ``call`` calls (``split``, ``merge``, ...), or None."""
        return nnx_api.short_name(self.resolver_for(call).qualified_name(call.func))

    def narrowed(self, generic: ClassRef | None, candidate: ClassRef | None) -> ClassRef | None:
        """``candidate`` (a class the callers pass) when it is an NNX class narrowing the
        ``generic`` annotation (``nnx.Module``; None: no annotation), else ``generic``."""
        if candidate is None or generic is None:
            return candidate or generic
        if candidate.definition is not None:
            return candidate if self.info(candidate.definition).is_nnx_module else generic
        return candidate if candidate.qualified_name.startswith(NNX_PREFIX) else generic

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
            ref = self.resolve(resolver.qualified_name(base)) or self.local_class(base)
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

    def init_of(self, classdef: nodes.ClassDef, depth: int = 0) -> nodes.FunctionDef | None:
        """The ``__init__`` that builds instances of ``classdef`` (its own or a project base's)."""
        found = classdef.locals.get("__init__")
        if found and isinstance(found[-1], nodes.FunctionDef):
            return found[-1]
        if depth >= MAX_DEPTH:
            return None
        for base in self.info(classdef).bases:
            if base.definition is not None:
                init = self.init_of(base.definition, depth + 1)
                if init is not None:
                    return init
        return None

    def method_of(self, classdef: nodes.ClassDef, name: str, depth: int = 0) -> nodes.FunctionDef | None:
        """The method ``name`` instances of ``classdef`` run: its own, else a project base's
        (bases in order, depth first: Python's order for the hierarchies projects write)."""
        found = classdef.locals.get(name)
        if found:
            return found[-1] if isinstance(found[-1], nodes.FunctionDef) else None
        if depth >= MAX_DEPTH:
            return None
        for base in self.info(classdef).bases:
            if base.definition is not None:
                method = self.method_of(base.definition, name, depth + 1)
                if method is not None:
                    return method
        return None

    def derives_from(self, classdef: nodes.ClassDef, short_names: frozenset[str], depth: int = 0) -> bool:
        """Whether ``classdef`` derives (through project bases) from a ``flax.nnx`` class named in ``short_names``."""
        for base in self.info(classdef).bases:
            if base.definition is None:
                if base.qualified_name.startswith(NNX_PREFIX) and base.short_name in short_names:
                    return True
            elif depth < MAX_DEPTH and self.derives_from(base.definition, short_names, depth + 1):
                return True
        return False

    # -- functions ----------------------------------------------------------------------
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
        definition = self.project.definition(qualified_name) if qualified_name else None
        if isinstance(definition, nodes.FunctionDef) and not isinstance(definition.parent, nodes.ClassDef):
            return definition
        return None
