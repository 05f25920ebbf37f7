"""The class model: what a Module class stores, and which class an expression has.

Built from the tree alone (no inference into flax): for a class, every
``self.<path> = <value>`` in ``__init__``, in the ``self.<helper>()`` methods it calls
(transitively), and in base classes' ``__init__`` (project classes, same file or other
files through :class:`nnx_lint.project.Project`). Expressions are typed only where the
code says so — a constructor call, an annotation, a plain assignment, a stored
attribute — and are "unknown" (None) otherwise: rules stay silent on unknowns.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.flow import bound_values

if TYPE_CHECKING:
    from nnx_lint.engine import FileContext

#: Bases that make a class an NNX Module (or pytree object) in flax.nnx.
NNX_MODULE_BASES = frozenset({"flax.nnx.Module", "flax.nnx.Object", "flax.nnx.Pytree"})
_MAX_DEPTH = 6


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

    def attribute_names(self) -> list[str]:
        return list(dict.fromkeys(s.path.split(".")[0] for s in self.stores))


class ClassModel:
    """Per-file service (``context.classes``): class infos and expression classes."""

    def __init__(self, context: FileContext) -> None:
        self.context = context
        self._infos: dict[int, ClassInfo] = {}

    # -- resolving classes -------------------------------------------------------------
    def resolve(self, qualified_name: str | None) -> ClassRef | None:
        """A :class:`ClassRef` for a qualified name that denotes a class (best effort)."""
        if not qualified_name:
            return None
        definition = self._definition(qualified_name)
        if definition is not None:
            return ClassRef(qualified_name, definition)
        if qualified_name.startswith("flax.nnx.") and qualified_name.rpartition(".")[2][:1].isupper():
            return ClassRef(qualified_name)
        return None

    def _definition(self, qualified_name: str) -> nodes.ClassDef | None:
        module_name, _, name = qualified_name.rpartition(".")
        if module_name == self.context.module.name:
            found = self.context.module.locals.get(name)
            node = found[-1] if found else None
        else:
            node = self.context.project.definition(qualified_name)
        return node if isinstance(node, nodes.ClassDef) else None

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
        resolver = self._resolver_for(classdef)
        for base in classdef.bases:
            name = resolver.qualified_name(base)
            ref = self._resolve_in(classdef, name)
            if ref is None:
                continue
            info.bases.append(ref)
            if ref.qualified_name in NNX_MODULE_BASES:
                info.is_nnx_module = True
            elif ref.definition is not None and depth < _MAX_DEPTH:
                base_info = self.info(ref.definition, depth + 1)
                info.is_nnx_module = info.is_nnx_module or base_info.is_nnx_module
                info.stores.extend(base_info.stores)
            elif ref.qualified_name.startswith("flax.nnx."):
                info.is_nnx_module = True  # nnx.Linear, nnx.Sequential, ... are Modules
        init = classdef.locals.get("__init__")
        if init and isinstance(init[-1], nodes.FunctionDef):
            info.stores.extend(self._stores_in(init[-1], classdef, set()))
        return info

    def _resolver_for(self, node: nodes.NodeNG):
        from nnx_lint.names import NameResolver

        root = node.root()
        if root is self.context.module:
            return self.context.resolver
        return NameResolver(root, self.context.project)

    def _resolve_in(self, node: nodes.NodeNG, qualified_name: str | None) -> ClassRef | None:
        return self.resolve(qualified_name)

    def _stores_in(self, method: nodes.FunctionDef, classdef: nodes.ClassDef, seen: set[str]) -> list[Store]:
        seen.add(method.name)
        if not method.args.args:
            return []
        self_name = method.args.args[0].name
        stores: list[Store] = []
        for node in method.nodes_of_class((nodes.AssignAttr, nodes.Call)):
            if isinstance(node, nodes.AssignAttr):
                path = _self_path(node, self_name)
                if path is not None:
                    stores.append(Store(path, _assigned_value(node), node, method.name, classdef.name))
            elif isinstance(node.func, nodes.Attribute) and isinstance(node.func.expr, nodes.Name):
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
        if isinstance(expression, nodes.Call):
            ref = self.resolve(self._resolver_for(expression).qualified_name(expression.func))
            return ref
        if isinstance(expression, nodes.Name):
            annotated = self._annotation_of(expression)
            if annotated is not None:
                return annotated
            refs = {self.class_of(value, depth + 1) for value in bound_values(expression)}
            refs.discard(None)
            return refs.pop() if len(refs) == 1 else None
        if isinstance(expression, nodes.Attribute):
            owner = self.class_of_self(expression.expr)
            if owner is not None and owner.definition is not None:
                values = {
                    self.class_of(store.value, depth + 1)
                    for store in self.info(owner.definition).stores_of(expression.attrname)
                }
                values.discard(None)
                return values.pop() if len(values) == 1 else None
        return None

    def class_of_self(self, expression: nodes.NodeNG) -> ClassRef | None:
        """For ``self`` inside a method: the enclosing class; else :meth:`class_of`."""
        if isinstance(expression, nodes.Name):
            function = expression.scope()
            if (
                isinstance(function, nodes.FunctionDef)
                and isinstance(function.parent, nodes.ClassDef)
                and function.args.args
                and function.args.args[0].name == expression.name
            ):
                return self.ref_of_definition(function.parent)
        return self.class_of(expression)

    def _annotation_of(self, name: nodes.Name) -> ClassRef | None:
        try:
            _scope, assignments = name.lookup(name.name)
        except Exception:
            return None
        for assignment in assignments:
            if isinstance(assignment, nodes.AssignName) and isinstance(assignment.parent, nodes.Arguments):
                arguments = assignment.parent
                for index, argument in enumerate(arguments.args):
                    if argument is assignment and arguments.annotations[index] is not None:
                        annotation = arguments.annotations[index]
                        return self.resolve(self._resolver_for(annotation).qualified_name(annotation))
                for index, argument in enumerate(arguments.kwonlyargs):
                    if argument is assignment and arguments.kwonlyargs_annotations[index] is not None:
                        annotation = arguments.kwonlyargs_annotations[index]
                        return self.resolve(self._resolver_for(annotation).qualified_name(annotation))
            elif isinstance(assignment, nodes.AssignName) and isinstance(assignment.parent, nodes.AnnAssign):
                annotation = assignment.parent.annotation
                return self.resolve(self._resolver_for(annotation).qualified_name(annotation))
        return None


def _self_path(node: nodes.AssignAttr, self_name: str) -> str | None:
    """``self.a.b = ...`` -> ``"a.b"``; None when the chain does not start at ``self``."""
    parts = [node.attrname]
    current = node.expr
    while isinstance(current, nodes.Attribute):
        parts.insert(0, current.attrname)
        current = current.expr
    if isinstance(current, nodes.Name) and current.name == self_name:
        return ".".join(parts)
    return None


def _assigned_value(target: nodes.AssignAttr) -> nodes.NodeNG | None:
    parent = target.parent
    if isinstance(parent, (nodes.Assign, nodes.AnnAssign, nodes.AugAssign)):
        return parent.value
    if isinstance(parent, (nodes.Tuple, nodes.List)) and isinstance(parent.parent, nodes.Assign):
        value = parent.parent.value
        if isinstance(value, (nodes.Tuple, nodes.List)) and len(value.elts) == len(parent.elts):
            return value.elts[parent.elts.index(target)]
    return None
