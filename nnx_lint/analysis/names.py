"""Name resolution: which fully qualified name does an expression denote?

Resolution reads the file's own import statements through astroid's scope lookup and
never infers into imported packages, so astroid never loads flax or jax (that would
cost seconds per process). Supported spellings::

    from flax import nnx            nnx.vmap                -> flax.nnx.vmap
    import flax.nnx as nn           nn.vmap                 -> flax.nnx.vmap
    from flax.nnx import vmap as V  V                       -> flax.nnx.vmap
    import flax                     flax.nnx.vmap           -> flax.nnx.vmap
    from flax.nnx import compat     compat.vmap             -> flax.nnx.compat.vmap
    from flax.nnx import *          vmap                    -> flax.nnx.vmap
    axes_cls = nnx.StateAxes        axes_cls                -> flax.nnx.StateAxes

and re-exports through modules of the project being linted (``from .common import
nnx``), which are read with :mod:`nnx_lint.analysis.project`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.flax_table.names import jax_counterpart
from nnx_lint.flax_table.nnx_api import EXTERNAL_PACKAGES, NNX, PUBLIC_NAMES, canonical

if TYPE_CHECKING:
    from nnx_lint.analysis.project import Project

_MAX_DEPTH = 8


class NameResolver:
    """Resolves expressions of one file to canonical qualified names (memoised)."""

    def __init__(self, module: nodes.Module, project: Project | None = None) -> None:
        self.module = module
        self.project = project
        self._memo: dict[int, str | None] = {}
        self._scope_memo: dict[tuple[int, str], str | None] = {}
        #: Parameters of parameterised tests read as one NNX function, by the parameter's id: the
        #: case's value and the parameter's name (:func:`nnx_lint.analysis.case_notes.case_notes`).
        self.case_choices: dict[int, tuple[nodes.NodeNG, str]] = {}
        self._star_modules = [
            canonical(node.modname)
            for node in module.body
            if isinstance(node, nodes.ImportFrom) and node.names and node.names[0][0] == "*"
        ]

    def qualified_name(self, node: nodes.NodeNG | None, depth: int = 0) -> str | None:
        """The canonical qualified name ``node`` denotes, or None when unknown."""
        if node is None or depth > _MAX_DEPTH:
            return None
        key = id(node)
        if key in self._memo:
            return self._memo[key]
        result: str | None = None
        if isinstance(node, nodes.Name):
            result = self._resolve_name(node.name, node, depth)
        elif isinstance(node, nodes.Attribute):
            base = self.qualified_name(node.expr, depth + 1)
            if base is not None:
                result = canonical(f"{base}.{node.attrname}")
                if self.project is not None and not is_external(base):
                    # `import mypkg.common as c; c.nnx.vmap`: follow the re-export.
                    result = self.project.resolve_attribute(base, node.attrname) or result
        self._memo[key] = result
        return result

    def _resolve_name(self, name: str, node: nodes.NodeNG, depth: int) -> str | None:
        """Resolve a bare name through the bindings of the scope that defines it.

        All bindings of the name in that scope must agree (an import with a fallback
        import of the same module is fine; a name rebound to something else is unknown).
        Memoised per (scope, name): this runs for every call in the file.
        """
        scope = self.defining_scope(name, node)
        if scope is None:
            return self._from_star_import(name)
        key = (id(scope), name)
        if key in self._scope_memo:
            return self._scope_memo[key]
        self._scope_memo[key] = None  # guards against `a = b; b = a` cycles
        candidates = {self.resolve_assignment(a, name, depth) for a in scope.locals[name]}
        candidates.discard(None)
        result = candidates.pop() if len(candidates) == 1 else None
        self._scope_memo[key] = result
        return result

    @staticmethod
    def defining_scope(name: str, node: nodes.NodeNG) -> nodes.NodeNG | None:
        """The innermost scope binding ``name`` as Python sees it from ``node``."""
        try:
            scope = node.scope()
        except Exception:
            return None
        first = True
        while scope is not None:
            # A class body's names are not visible from the methods nested in it.
            if (first or not isinstance(scope, nodes.ClassDef)) and name in scope.locals:
                return scope
            first = False
            parent = scope.parent
            scope = parent.scope() if parent is not None else None
        return None

    def resolve_assignment(self, assignment: nodes.NodeNG, name: str, depth: int = 0) -> str | None:
        """The qualified name bound to ``name`` by one assignment (import, alias)."""
        if isinstance(assignment, nodes.Import):
            for module_name, alias in assignment.names:
                if alias == name:
                    return canonical(module_name)
                if alias is None and module_name.split(".")[0] == name:
                    return name
            return None
        if isinstance(assignment, nodes.ImportFrom):
            module_name = self._absolute_module(assignment)
            if assignment.names and assignment.names[0][0] == "*":
                # Only when astroid expanded the star itself (pylint's builder does).
                return self._from_star_import(name)
            for original, alias in assignment.names:
                if (alias or original) == name:
                    if module_name is None:
                        return None
                    if self.project is not None and not is_external(module_name):
                        reexport = self.project.resolve_attribute(module_name, original)
                        if reexport is not None:
                            return reexport
                    return canonical(f"{module_name}.{original}")
            return None
        if isinstance(assignment, (nodes.ClassDef, nodes.FunctionDef)) and assignment.parent is self.module:
            return f"{self.module.name}.{assignment.name}"
        if isinstance(assignment, nodes.AssignName):
            parent = assignment.parent
            if isinstance(parent, (nodes.Assign, nodes.AnnAssign)) and parent.value is not None:
                targets = parent.targets if isinstance(parent, nodes.Assign) else [parent.target]
                if len(targets) == 1 and targets[0] is assignment:
                    if isinstance(parent.value, (nodes.Name, nodes.Attribute)):
                        return self.qualified_name(parent.value, depth + 1)
            if isinstance(parent, nodes.Arguments):
                return self._case_parameter(assignment, depth)
        return None

    def _case_parameter(self, assignment: nodes.AssignName, depth: int) -> str | None:
        """A parameter of a parameterised test (:mod:`nnx_lint.analysis.test_cases`): the NNX API
        its cases give it, when every case gives that API or JAX's function of the same name (the
        rules' findings hold in the NNX cases, as for a name bound so on alternative paths)."""
        from nnx_lint.analysis.test_cases import case_values

        values = case_values(assignment, lambda node: self.qualified_name(node, depth + 1))
        if values is None:
            return None
        named = {self.qualified_name(value, depth + 1): value for value in reversed(values)}  # first value per name
        nnx_names = {name for name in named if name is not None and name.startswith(NNX + ".")}
        if len(nnx_names) != 1:
            return None
        (found,) = nnx_names
        if not named.keys() - nnx_names <= {jax_counterpart(found.rsplit(".", 1)[1])}:
            return None
        self.case_choices[id(assignment)] = (named[found], assignment.name)
        return found

    def _absolute_module(self, node: nodes.ImportFrom) -> str | None:
        if not node.level:
            return canonical(node.modname)
        if self.project is None:
            return None
        return self.project.absolute_module(self.module, node.modname, node.level)

    def _from_star_import(self, name: str) -> str | None:
        for module_name in self._star_modules:
            if module_name == NNX and name in PUBLIC_NAMES:
                return canonical(f"{NNX}.{name}")
            if self.project is not None and not is_external(module_name):
                found = self.project.resolve_attribute(module_name, name)
                if found:
                    return found
        return None


def is_external(module_name: str) -> bool:
    """Whether the module belongs to a package nnx-lint never reads (flax, jax, ...)."""
    return module_name.split(".")[0] in EXTERNAL_PACKAGES


def base_classes(classdef: nodes.ClassDef) -> list[nodes.NodeNG]:
    """The expressions naming ``classdef``'s bases, generic subscriptions removed:
    ``class Count(nnx.Variable[A])`` has the base ``nnx.Variable``."""
    return [base.value if isinstance(base, nodes.Subscript) else base for base in classdef.bases]


def decorator_names(function: nodes.FunctionDef) -> set[str]:
    """The last names of ``function``'s decorators (``staticmethod``, ``property``, ``jit`` for
    ``@nnx.jit``), read from the tree: astroid's ``FunctionDef.type`` infers every decorator, which
    cost seconds on maxtext's test files."""
    return {decorator.attrname if isinstance(decorator, nodes.Attribute) else getattr(decorator, "name", "")
            for decorator in (function.decorators.nodes if function.decorators else ())}


def root_name(expression: nodes.NodeNG) -> nodes.Name | None:
    """``self`` for ``self.layers[0].kernel``; None for calls and other roots."""
    current = expression
    while isinstance(current, (nodes.Attribute, nodes.Subscript, nodes.AssignAttr)):
        current = current.expr if not isinstance(current, nodes.Subscript) else current.value
    return current if isinstance(current, nodes.Name) else None
