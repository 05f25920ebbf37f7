"""The class model: what a Module class stores, and which class an expression has.

Built from the tree alone (no inference into flax): for a class, every
``self.<path> = <value>`` in ``__init__``, in the ``self.<helper>()`` methods it calls
(transitively), and in base classes' ``__init__`` (project classes, same file or other
files through :class:`nnx_lint.analysis.project.Project`). Expressions are typed only where the
code says so — a constructor call, an annotation, a plain assignment, a stored
attribute — and are "unknown" (None) otherwise: rules stay silent on unknowns.

:class:`ClassModel` is one per-file service, a façade over parts. Each part is a class that
owns its state (its memo tables), is given the parts it asks at construction, and answers
through public methods; no part reads another's private state:

- :class:`~nnx_lint.analysis.class_hierarchy.ClassHierarchy`: classes by name and annotation,
  what a class stores (:class:`~nnx_lint.analysis.class_info.ClassInfo`), its methods and
  ``__init__``, the project function a call runs; it asks no other part;
- :class:`~nnx_lint.analysis.expression_classes.ExpressionClasses`: the class of an expression
  (:meth:`ClassModel.class_of`) and the classes call sites pass;
- :class:`~nnx_lint.analysis.factories.FactoryReturns`: the class of what a project function or
  method returns;
- :class:`~nnx_lint.analysis.refs.RefQueries`: object identity — :meth:`ClassModel.ref_of`
  maps an expression to a :class:`~nnx_lint.analysis.refs.Ref` (where the object comes from —
  ``self``, a parameter, one construction — plus an attribute path), so that two expressions
  denoting the same object, or an object and a part of it, can be recognised;
- :class:`~nnx_lint.analysis.class_kinds.ClassKinds`: what an object or a class's instances
  hold (:meth:`ClassModel.kind_of`: a Module, a Variable, an ``Rngs``, a State view), and the
  classes of parameters;
- :class:`~nnx_lint.analysis.construction.ConstructionReplay`: a class's construction replayed
  in order (stores, deletions, helper and ``super().__init__`` calls with their arguments,
  constructor arguments stored by child classes);
- :class:`~nnx_lint.analysis.aliases.AliasQueries`: the aliases and self references a
  construction creates (:meth:`ClassModel.construction`).

Two pairs of parts ask each other (the class of a call's result depends on the class of what
the callee returns, and whether a copy holds the same objects depends on what its fields
hold): those are wired after both exist, with the part's ``connect``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.analysis.aliases import AliasQueries
from nnx_lint.analysis.class_hierarchy import ClassHierarchy
from nnx_lint.analysis.class_info import ClassInfo, ClassRef
from nnx_lint.analysis.class_kinds import ClassKinds
from nnx_lint.analysis.construction import Construction, ConstructionReplay
from nnx_lint.analysis.expression_classes import ExpressionClasses
from nnx_lint.analysis.factories import Callee, FactoryReturns
from nnx_lint.analysis.names import NameResolver
from nnx_lint.analysis.refs import Alias, Ref, RefQueries

if TYPE_CHECKING:
    from nnx_lint.analysis.context import FileContext


class ClassModel:
    """Per-file service (``context.classes``): class infos, expression classes, object
    identity and kinds, construction replays; each answer comes from the part that owns it."""

    def __init__(self, context: FileContext) -> None:
        self.hierarchy = ClassHierarchy(context.module, context.resolver, context.project)
        self.expressions = ExpressionClasses(self.hierarchy, context.project)
        self.factories = FactoryReturns(self.hierarchy, self.expressions, context.project)
        self.expressions.connect(self.factories)
        self.kinds = ClassKinds(self.hierarchy, self.expressions)
        self.refs = RefQueries(self.hierarchy, self.expressions, self.kinds)
        self.kinds.connect(self.refs)
        self.replay = ConstructionReplay(self.hierarchy, self.refs)
        self.aliases = AliasQueries(self.replay, self.hierarchy, self.expressions, self.kinds)

    # -- classes by name (ClassHierarchy) ------------------------------------------------
    def resolve(self, qualified_name: str | None, at: nodes.NodeNG | None = None) -> ClassRef | None:
        """:meth:`ClassHierarchy.resolve`: the class a qualified name denotes."""
        return self.hierarchy.resolve(qualified_name, at)

    def resolver_for(self, node: nodes.NodeNG) -> NameResolver:
        """:meth:`ClassHierarchy.resolver_for`: the name resolver of ``node``'s module."""
        return self.hierarchy.resolver_for(node)

    def ref_of_definition(self, classdef: nodes.ClassDef) -> ClassRef:
        """:meth:`ClassHierarchy.ref_of_definition`: the :class:`ClassRef` of a class definition."""
        return self.hierarchy.ref_of_definition(classdef)

    def info(self, classdef: nodes.ClassDef, depth: int = 0) -> ClassInfo:
        """:meth:`ClassHierarchy.info`: stores, bases and NNX-ness of a class."""
        return self.hierarchy.info(classdef, depth)

    def annotated_class(self, annotation: nodes.NodeNG | None) -> ClassRef | None:
        """:meth:`ClassHierarchy.annotated_class`: the class an annotation names."""
        return self.hierarchy.annotated_class(annotation)

    def init_of(self, classdef: nodes.ClassDef, depth: int = 0) -> nodes.FunctionDef | None:
        """:meth:`ClassHierarchy.init_of`: the ``__init__`` instances of ``classdef`` run."""
        return self.hierarchy.init_of(classdef, depth)

    def function_called(self, call: nodes.Call, qualified_name: str | None = None) -> nodes.FunctionDef | None:
        """:meth:`ClassHierarchy.function_called`: the plain project function ``call`` calls."""
        return self.hierarchy.function_called(call, qualified_name)

    # -- the class of an expression (ExpressionClasses, FactoryReturns) -------------------
    def class_of(self, expression: nodes.NodeNG | None, depth: int = 0) -> ClassRef | None:
        """:meth:`ExpressionClasses.class_of`: the class ``expression`` is an instance of."""
        return self.expressions.class_of(expression, depth)

    def class_of_self(self, expression: nodes.NodeNG) -> ClassRef | None:
        """:meth:`ExpressionClasses.class_of_self`: ``self``'s class inside a method, else :meth:`class_of`."""
        return self.expressions.class_of_self(expression)

    def annotated_class_of(self, name: nodes.Name) -> ClassRef | None:
        """:meth:`ExpressionClasses.annotated_class_of`: the class ``name``'s annotation names."""
        return self.expressions.annotated_class_of(name)

    def call_site_classes(self, function: nodes.NodeNG, parameter: str,
                          depth: int = 0) -> list[tuple[ClassRef, nodes.Call]]:
        """:meth:`ExpressionClasses.call_site_classes`: the classes callers pass for a parameter."""
        return self.expressions.call_site_classes(function, parameter, depth)

    def split_making(self, name: nodes.Name, *, graphdef: bool = False) -> nodes.Call | None:
        """:meth:`ExpressionClasses.split_making`: the ``nnx.split`` whose result ``name`` holds."""
        return self.expressions.split_making(name, graphdef=graphdef)

    def stored_argument(self, expression: nodes.NodeNG) -> nodes.NodeNG | None:
        """:meth:`ExpressionClasses.stored_argument`: the constructor argument ``holder.attr`` holds."""
        return self.expressions.stored_argument(expression)

    def callee(self, call: nodes.Call, qualified_name: str | None = None, depth: int = 0) -> Callee | None:
        """:meth:`FactoryReturns.callee`: the project function or method ``call`` runs."""
        return self.factories.callee(call, qualified_name, depth)

    def method_parameter(self, name: nodes.Name) -> tuple[nodes.FunctionDef, str] | None:
        """:meth:`FactoryReturns.method_parameter`: the method parameter ``name`` reads."""
        return self.factories.method_parameter(name)

    # -- identity and kinds (RefQueries, ClassKinds) -------------------------------------
    def ref_of(self, expression: nodes.NodeNG | None, substitutions: dict | None = None,
               depth: int = 0) -> Ref | None:
        """:meth:`RefQueries.ref_of`: the object ``expression`` denotes."""
        return self.refs.ref_of(expression, substitutions, depth)

    def kind_of(self, ref: Ref | None, depth: int = 0) -> str | None:
        """:meth:`ClassKinds.kind_of`: what the object ``ref`` denotes holds."""
        return self.kinds.kind_of(ref, depth)

    def class_kind(self, ref: ClassRef | None, call: nodes.Call | None = None) -> str | None:
        """:meth:`ClassKinds.class_kind`: what an instance of class ``ref`` holds."""
        return self.kinds.class_kind(ref, call)

    def is_instance_of(self, ref: ClassRef | None, short_names: frozenset[str]) -> bool:
        """:meth:`ClassKinds.is_instance_of`: whether an instance of ``ref`` is one of those flax classes."""
        return self.kinds.is_instance_of(ref, short_names)

    def parameter_is_rngs(self, function: nodes.NodeNG, name: str, depth: int = 0) -> bool:
        """:meth:`ClassKinds.parameter_is_rngs`: whether a parameter is an ``nnx.Rngs``."""
        return self.kinds.parameter_is_rngs(function, name, depth)

    def used_as_module(self, function: nodes.NodeNG, name: str) -> bool:
        """:meth:`ClassKinds.used_as_module`: whether ``function`` uses a parameter as a Module."""
        return self.kinds.used_as_module(function, name)

    # -- constructions (ConstructionReplay, AliasQueries) ---------------------------------
    def construction(self, classdef: nodes.ClassDef) -> Construction:
        """:meth:`AliasQueries.construction`: how ``classdef`` builds an instance, with its aliases."""
        return self.aliases.construction(classdef)

    def stored_items(self, value: nodes.NodeNG | None, substitutions: dict | None = None,
                     depth: int = 0) -> list[tuple[tuple[str, ...], Ref | None, nodes.NodeNG | None]]:
        """:meth:`ConstructionReplay.stored_items`: what storing ``value`` puts into the tree."""
        return self.replay.stored_items(value, substitutions, depth)

    @property
    def replay_work(self) -> int:
        """Methods replayed and store events kept by this file's constructions (bounded)."""
        return self.replay.replay_work

    def graph_node(self, ref: Ref | None) -> bool:
        """:meth:`AliasQueries.graph_node`: whether ``ref`` is an NNX graph node."""
        return self.aliases.graph_node(ref)

    def variable_free_node(self, ref: Ref | None) -> bool:
        """:meth:`AliasQueries.variable_free_node`: a graph node that holds no Variables."""
        return self.aliases.variable_free_node(ref)

    def variable_free_aliases(self, classdef: nodes.ClassDef) -> list[Alias]:
        """:meth:`AliasQueries.variable_free_aliases`: Variable-free nodes reached at two paths."""
        return self.aliases.variable_free_aliases(classdef)
