"""The file being analysed, and every service a rule may ask about it.

:class:`FileContext` is the root of the analysis: the engine builds one per file, and each rule
reads the file's name resolution, graph-mode scope, class model, object-flow model and fact index
through it (and reports through it). It lives in the analysis layer, below the engine that drives
it, so that a rule's view of a file depends on nothing above the analysis.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from astroid import nodes

from nnx_lint.analysis.calls import NNXCall, match_nnx_call
from nnx_lint.analysis.case_notes import case_notes
from nnx_lint.analysis.classes import ClassModel
from nnx_lint.analysis.expected_errors import expects_error
from nnx_lint.analysis.mode import ModeContext
from nnx_lint.analysis.names import NameResolver
from nnx_lint.analysis.objects import ObjectModel
from nnx_lint.analysis.project import Project
from nnx_lint.analysis.rule import Rule
from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.base.facts import Facts
from nnx_lint.base.related import RelatedSpec, anchored
from nnx_lint.base.related import locations as related_locations

_MISSING = object()
T = TypeVar("T")


class FileContext:
    """Everything a rule may ask about the file being linted.

    Services: :meth:`qualified_name` (imports resolved without loading flax),
    :meth:`nnx_call` (NNX API calls in every spelling), :attr:`mode` (is graph mode kept
    here?), :attr:`classes` (what a class stores, which class an expression has),
    :attr:`project` (other modules of the project), :meth:`report`.
    """

    def __init__(self, module: nodes.Module, path: str, project: Project) -> None:
        self.module = module
        self.path = path
        self.project = project
        self.resolver = NameResolver(module, project)
        self.mode = ModeContext(module, self.resolver)
        #: The class model: what classes store, which class an expression has.
        self.classes = ClassModel(self)
        self.diagnostics: list[Diagnostic] = []
        #: Each call's :meth:`nnx_call` answer (the transform resolver's matching of this module shares it).
        self.matched_calls: dict[int, NNXCall | None] = {}
        self._services: dict[Callable, object] = {}

    def service(self, factory: Callable[[FileContext], T]) -> T:
        """The file's one instance of the per-file analysis ``factory(context)``, built on
        first use and shared by every rule that asks (the transformed-code service, the
        Variable model, a family's shared analysis)."""
        found = self._services.get(factory)
        if found is None:
            found = self._services[factory] = factory(self)
        return found  # type: ignore[return-value]

    def release(self) -> None:
        """The walk is over: each service that can empty its tables does (``release()``), and the
        services are dropped. A question asked after this builds a service afresh."""
        services = list(self._services.values())
        self._services.clear()
        for service in services:
            release = getattr(service, "release", None)
            if release is not None:
                release()

    @property
    def objects(self):
        """The file's object-flow model (:class:`nnx_lint.analysis.objects.ObjectModel`), built on first use."""
        return self.service(ObjectModel)

    def qualified_name(self, node: nodes.NodeNG | None) -> str | None:
        """Canonical qualified name of ``node`` (``flax.nnx.vmap``), or None; a node of
        another project module (a helper the analysis followed a value into) is resolved
        with that module's imports."""
        if node is None:
            return None
        return self.classes.resolver_for(node).qualified_name(node)

    def nnx_call(self, node: nodes.NodeNG) -> NNXCall | None:
        """The :class:`NNXCall` if ``node`` is a call of the flax.nnx API, else None."""
        if not isinstance(node, nodes.Call):
            return None
        key = id(node)
        found = self.matched_calls.get(key, _MISSING)
        if found is _MISSING:
            found = self.matched_calls[key] = match_nnx_call(node, self.resolver)
        return found  # type: ignore[return-value]

    def keeps_graph_mode(self, call: NNXCall) -> bool:
        """Whether this NNX call explicitly keeps graph semantics (flags, compat, scope)."""
        return self.mode.keeps_graph_mode(call)

    def flip_changes(self, call: NNXCall) -> bool:
        """Whether flipping the defaults changes this call: it neither keeps graph mode nor
        already chooses Tree Mode explicitly (``graph=False`` / ``graph_updates=False``)."""
        return self.mode.flip_changes(call)

    def report(
        self, rule: Rule, node: nodes.NodeNG, facts: Facts, message: str | None = None,
        help: str | None = None, related: Iterable[RelatedSpec] | None = None, proof: str = "proven",
    ) -> None:
        """Record a diagnostic of ``rule`` at ``node``; ``related`` names the other lines it
        involves, as ``(node or Related, "what happens there")`` pairs. A "Tree Mode raises"
        finding inside an assertion that the code raises is not recorded
        (:mod:`nnx_lint.analysis.expected_errors`)."""
        anchor, related = anchored(node, related, self.module)
        if anchor is None:
            # A rule that followed a value into another project file reports where it left
            # this one; with no line of this file to carry the finding, that is a rule bug.
            raise ValueError(f"{rule.code} reported a node of another module ({node.root().name})")
        node = anchor
        if rule.kind == "raises" and expects_error(node):
            return
        if self.resolver.case_choices:  # a test's parameter read as one of its cases: say which
            related = [*related, *case_notes([node, *(spec[0] for spec in related)], self.resolver.case_choices)]
        text, help_text = rule.render(facts, message=message, help=help)
        line = node.lineno or 1
        column = (node.col_offset or 0) + 1
        end_line = node.end_lineno or line
        end_column = (node.end_col_offset or node.col_offset or 0) + 1
        others = related_locations(related, self.module, self.path, self.project.current_file, (line, column))
        self.diagnostics.append(
            Diagnostic(
                rule.code, rule.symbol, text, self.path, line, column, end_line, end_column, rule.kind,
                facts.as_dict(), help_text,
                others, scope_name(node), proof,
            )
        )


def scope_name(node: nodes.NodeNG) -> str:
    """The dotted names of the classes and functions ``node`` is written in, outermost first
    (``Tied.__init__``, ``train.<lambda>``; ``""`` at module level). A definition's decorators
    and defaults count as written in it. Only names of the file's own text, never a position.

    >>> import astroid
    >>> module = astroid.parse("class A:\\n    def f(self):\\n        return lambda: self.x\\n")
    >>> scope_name(next(module.nodes_of_class(nodes.Attribute)))
    'A.f.<lambda>'
    """
    names = []
    for ancestor in node.node_ancestors():
        if isinstance(ancestor, (nodes.ClassDef, nodes.FunctionDef)):  # AsyncFunctionDef included
            names.append(ancestor.name)
        elif isinstance(ancestor, nodes.Lambda):
            names.append("<lambda>")
    return ".".join(reversed(names))
