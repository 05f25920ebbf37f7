"""What the solver asks about the program's classes and definitions: summaries (memoised per
scope for the whole run), methods along the bases (in any project file), instance kinds, and
the objects of names, literals and parameters no analysed caller reaches."""
from __future__ import annotations

from astroid import nodes

from nnx_lint.analysis.annotations import annotation_head
from nnx_lint.analysis.class_info import class_fields, stored_fields
from nnx_lint.analysis.names import decorator_names
import nnx_lint.analysis.objects.abstract as kinds
from nnx_lint.analysis.objects.abstract import AbstractObject, constant
from nnx_lint.analysis.objects.field_reads import fills_instances
from nnx_lint.analysis.objects.summary import Alloc, Parameter, Summary, summarize
from nnx_lint.flax_table.names import NOT_PROJECT_PREFIXES
from nnx_lint.flax_table import object_relations as relations

#: How far up a class hierarchy methods are looked for.
_MAX_BASES = 12
#: The attribute of a scope node that keeps its summary for the run (see :meth:`World.summary`).
_SUMMARY_ATTRIBUTE = "_nnx_lint_summary"


class World:
    """The solver's view of one linted file's project (``context``: the file's FileContext)."""

    def __init__(self, context) -> None:
        self.context = context
        self.classes = context.classes
        self._methods: dict[tuple[int, str], nodes.FunctionDef | None] = {}
        self._kinds: dict[int, str] = {}
        self._fills: dict[int, bool] = {}
        self._fixed: dict[int, tuple[Alloc, AbstractObject | None]] = {}

    # -- summaries -------------------------------------------------------------------------
    def summary(self, scope: nodes.NodeNG) -> Summary | None:
        """The scope's summary, made once per run: every file's model that reaches a project
        function reads the one summary kept on its node (so it lives and dies with its tree),
        for the project it was made with (the run's; the language server keeps one project
        per workspace, and a changed buffer is a new tree)."""
        kept = scope.__dict__.get(_SUMMARY_ATTRIBUTE)
        if kept is not None and kept[0] is self.context.project:
            return kept[1]
        found = summarize(scope, self.classes.resolver_for(scope).qualified_name)
        scope.__dict__[_SUMMARY_ATTRIBUTE] = (self.context.project, found)
        return found

    # -- classes ---------------------------------------------------------------------------
    def bases(self, classdef: nodes.ClassDef) -> list[nodes.ClassDef]:
        return [base.definition for base in self.classes.info(classdef).bases if base.definition is not None]

    def method(self, classdef: nodes.ClassDef, name: str) -> nodes.FunctionDef | None:
        """``name`` defined by ``classdef`` or the first base that defines it (depth first, bounded)."""
        key = (id(classdef), name)
        if key not in self._methods:
            self._methods[key] = self._search([classdef], name)
        return self._methods[key]

    def method_after(self, classdef: nodes.ClassDef, name: str) -> nodes.FunctionDef | None:
        """What ``super().name`` runs in a method of ``classdef``: the bases' definition."""
        return self._search(self.bases(classdef), name)

    def _search(self, start: list[nodes.ClassDef], name: str) -> nodes.FunctionDef | None:
        stack, seen = list(reversed(start)), set()
        while stack and len(seen) < _MAX_BASES:
            classdef = stack.pop()
            if id(classdef) in seen:
                continue
            seen.add(id(classdef))
            found = classdef.locals.get(name)
            if found and isinstance(found[-1], nodes.FunctionDef):
                return found[-1]
            stack.extend(reversed(self.bases(classdef)))
        return None

    def instance_kind(self, classdef: nodes.ClassDef) -> str:
        """Module (NNX walks it), dataclass (a pytree's fields) or plain (static to NNX)."""
        kind = self._kinds.get(id(classdef))
        if kind is None:
            if self.classes.info(classdef).is_nnx_module:
                kind = kinds.MODULE
            elif class_fields(classdef):
                kind = kinds.DATACLASS
            else:
                kind = kinds.PLAIN
            self._kinds[id(classdef)] = kind
        return kind

    def dataclass_fields(self, classdef: nodes.ClassDef) -> list[str]:
        return list(stored_fields(classdef))

    def instance(self, classdef: nodes.ClassDef, site, context) -> AbstractObject:
        return AbstractObject(self.instance_kind(classdef), site, context, class_name=self._name(classdef),
                              definition=classdef)

    def _name(self, classdef: nodes.ClassDef) -> str:
        return self.classes.ref_of_definition(classdef).qualified_name

    def is_static(self, function: nodes.NodeNG) -> bool:
        return isinstance(function, nodes.FunctionDef) and "staticmethod" in decorator_names(function)

    def is_property(self, function: nodes.FunctionDef) -> bool:
        return bool(decorator_names(function) & {"property", "cached_property"})

    def fills_instances(self, function: nodes.NodeNG) -> bool:
        """Whether ``function`` may make or fill instances of its class by itself
        (:func:`~nnx_lint.analysis.objects.field_reads.fills_instances`; a lambda: yes), once per function."""
        key = id(function)
        found = self._fills.get(key)
        if found is None:
            found = self._fills[key] = fills_instances(function)
        return found

    def is_method(self, scope: nodes.NodeNG) -> bool:
        return isinstance(scope, nodes.FunctionDef) and isinstance(scope.parent, nodes.ClassDef) \
            and not self.is_static(scope)

    def method_object(self, method: nodes.FunctionDef, receiver: AbstractObject,
                      bound_to_class: bool = False) -> AbstractObject:
        """``obj.method``: bound to ``obj`` (a static method stays a plain function; on a class,
        only a classmethod is bound)."""
        decorators = decorator_names(method)
        if "staticmethod" in decorators or (bound_to_class and "classmethod" not in decorators):
            return AbstractObject(kinds.FUNCTION, method, None, definition=method)
        return AbstractObject(kinds.BOUND, method, None, definition=method, target=receiver)

    # -- objects of names, literals and parameters ------------------------------------------
    def allocate(self, alloc: Alloc, context) -> AbstractObject | None:
        kind = alloc.kind
        if kind == "container":
            return AbstractObject(kinds.CONTAINER, alloc.site, context, class_name=alloc.value)
        if kind == "function":
            return AbstractObject(kinds.FUNCTION, alloc.site, context, definition=alloc.site)
        # The other kinds are one object whatever the context: made once per file, not once per
        # instance of the function (a constant or a class name in a layer's `__init__` that the
        # file builds sixteen times; `named` looks the name up in the project). Keyed by the
        # allocation's identity, and kept with it so that the identity is never reused.
        known = self._fixed.get(id(alloc))
        if known is None:
            known = self._fixed[id(alloc)] = (alloc, self._context_free(alloc))
        return known[1]

    def _context_free(self, alloc: Alloc) -> AbstractObject | None:
        kind = alloc.kind
        if kind == "constant":
            return constant(alloc.value)
        if kind == "definition":  # a module-level definition: one object, whatever the context
            if isinstance(alloc.site, nodes.ClassDef):
                return AbstractObject(kinds.CLASS, alloc.site, None, class_name=self._name(alloc.site),
                                      definition=alloc.site)
            return AbstractObject(kinds.FUNCTION, alloc.site, None, definition=alloc.site)
        if kind == "class":
            return AbstractObject(kinds.CLASS, alloc.site, None, class_name=self._name(alloc.site),
                                  definition=alloc.site)
        return self.named(alloc.value)

    def named(self, qualified_name: str) -> AbstractObject | None:
        """The object an imported name denotes: a project function or class, or a library value."""
        definition = None
        if not qualified_name.startswith(NOT_PROJECT_PREFIXES):
            try:
                definition = self.context.project.definition(qualified_name)
            except Exception:  # an unreadable module: the name stays a library value
                definition = None
        if isinstance(definition, nodes.ClassDef):
            return AbstractObject(kinds.CLASS, definition, None, class_name=self._name(definition),
                                  definition=definition)
        if isinstance(definition, nodes.FunctionDef):
            return AbstractObject(kinds.FUNCTION, definition, None, definition=definition)
        return AbstractObject(kinds.LIBRARY, None, class_name=qualified_name, definition=qualified_name)

    def outside_self(self, method: nodes.FunctionDef) -> AbstractObject:
        """``self`` of a method no analysed call reaches: one object per class, unproven."""
        classdef = method.parent
        if "classmethod" in decorator_names(method):
            return AbstractObject(kinds.CLASS, classdef, None, class_name=self._name(classdef), definition=classdef)
        return AbstractObject(self.instance_kind(classdef), classdef, None, class_name=self._name(classdef),
                              definition=classdef, proven=False)

    def outside_parameter(self, parameter: Parameter, scope: nodes.NodeNG) -> AbstractObject:
        """A parameter no analysed caller reaches: an object of its annotated class, or unknown."""
        site = parameter.binding[1]
        name = None
        if parameter.annotation is not None:
            name = self.classes.resolver_for(scope).qualified_name(annotation_head(parameter.annotation))
        if name in relations.FRESH_RNGS:
            return AbstractObject(kinds.RNGS, site, None, class_name=name, proven=False)
        ref = self.classes.resolve(name) if name else None
        if ref is not None and ref.definition is not None:
            return AbstractObject(self.instance_kind(ref.definition), site, None, class_name=ref.qualified_name,
                                  definition=ref.definition, proven=False)
        return AbstractObject(kinds.OUTSIDE, site, None, class_name=name, proven=False)
