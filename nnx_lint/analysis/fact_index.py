"""The fact index: what a module's calls, stores, bindings and returns are, found once per module.

Several rules ask the same questions about every call of a file ("which NNX function is this?",
"which transformed function does it run?", "does it run one at all?"), and each family used to
walk the module for its own stores and returns. The index lists a module's nodes of each of these
kinds once (slices of the module's pre-order index, :mod:`nnx_lint.base.node_index`, so in the
engine's walk order) and answers the per-call questions from the file's services, each computed
once per call and then read by every rule that asks: the resolved transform application, with
its running entry (:class:`~nnx_lint.analysis.transforms.TransformResolver`), and the NNX call.

The same index answers what lies inside one node (a scope, a statement, an expression): the
calls, functions, returns, attribute reads and conditional choices below it, in the same order,
so that a rule never walks the syntax tree itself (rules make no astroid node scan). A question
about a scope is a slice of the module's pre-order; any other node is walked once, by the index.

Rules read it through :func:`fact_index` (``nnx_lint.api``)::

    facts = fact_index(self.context)
    for call in facts.calls:
        entry = facts.running_entry(call)
    returned = [r.value for r in facts.returns_of(function)]
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.analysis.calls import NNXCall
from nnx_lint.analysis.flow import expressions_within
from nnx_lint.analysis.transform_types import Application, Entry, explicit_tree
from nnx_lint.analysis.transforms import transform_resolver
from nnx_lint.base.node_index import nodes_of_class
from nnx_lint.flax_table import table as flax_table

if TYPE_CHECKING:
    from nnx_lint.analysis.context import FileContext


#: What a function's "own" nodes stop at: the bodies of nested functions and lambdas.
_NESTED_FUNCTIONS = (nodes.FunctionDef, nodes.Lambda)


def fact_index(context: FileContext) -> FactIndex:
    """The (memoised) :class:`FactIndex` of the file being linted."""
    return context.service(FactIndex)


class FactIndex:
    """One module's calls, stores, bindings and returns, and what each call runs."""

    def __init__(self, context: FileContext) -> None:
        self.context = context
        self.module = context.module
        self._resolver = transform_resolver(context)
        self._kinds: dict[type, list[nodes.NodeNG]] = {}

    def _of(self, kind: type) -> list[nodes.NodeNG]:
        found = self._kinds.get(kind)
        if found is None:
            found = self._kinds[kind] = list(nodes_of_class(self.module, kind))
        return found

    @property
    def calls(self) -> list[nodes.Call]:
        """Every call of the module, in the walk's order (pre-order)."""
        return self._of(nodes.Call)  # type: ignore[return-value]

    @property
    def stores(self) -> list[nodes.AssignAttr]:
        """Every attribute store (``obj.x = ...``, also in ``for`` targets and augmented stores)."""
        return self._of(nodes.AssignAttr)  # type: ignore[return-value]

    @property
    def bindings(self) -> list[nodes.AssignName]:
        """Every name binding (assignments, parameters, loop and ``with`` targets)."""
        return self._of(nodes.AssignName)  # type: ignore[return-value]

    @property
    def returns(self) -> list[nodes.Return]:
        """Every ``return`` statement."""
        return self._of(nodes.Return)  # type: ignore[return-value]

    def nnx_call(self, call: nodes.Call) -> NNXCall | None:
        """The :class:`NNXCall` if ``call`` calls the flax.nnx API (every spelling), else None."""
        return self.context.nnx_call(call)

    def rng_splitter(self, node: nodes.NodeNG) -> NNXCall | None:
        """The ``nnx.split_rngs`` / ``nnx.fork_rngs`` call ``node`` is (direct, not through
        ``partial``, and not pinned to Tree Mode), else None."""
        call = self.context.nnx_call(node)
        if call is None or call.name not in flax_table.RNG_SPLITTING_TRANSFORMS or call.via_partial or explicit_tree(call):
            return None
        return call

    def filter_construction(self, node: nodes.NodeNG, filter_name: str) -> bool:
        """Whether ``node`` constructs the NNX prefix filter ``filter_name`` (``nnx.StateAxes(...)``),
        directly (not through ``partial``)."""
        call = self.context.nnx_call(node)
        return call is not None and call.name == filter_name and not call.via_partial

    def filters_in_prefixes(self, call: NNXCall, filter_name: str) -> list[tuple[str, nodes.NodeNG, nodes.Call, nodes.NodeNG]]:
        """``(keyword, its value, construction, reference)`` for each ``filter_name`` filter that a
        transform call's prefix keywords (``in_axes``, ``argnums``, ...) hold, inside containers or
        through names (``reference`` is where the value names it)."""
        found = []
        for argument in sorted(flax_table.PREFIX_KEYWORDS & call.keywords.keys()):
            value = call.keywords[argument]
            for expression, reference in expressions_within(value):
                if self.filter_construction(expression, filter_name):
                    found.append((argument, value, expression, reference))
        return found

    def running_entry(self, call: nodes.Call) -> Entry | None:
        """The transformed function ``call`` runs (its :class:`Entry`), or None: resolved once
        per call, whichever rule asks first."""
        return self._resolver.running_entry(call)

    def application(self, call: nodes.Call) -> Application | None:
        """The transform application ``call`` is (arguments labelled as flax labels them), or None."""
        return self._resolver.application(call)

    def applications(self) -> list[tuple[nodes.Call, Application]]:
        """Every call of the module that runs a transformed function, with its application."""
        return [(call, use) for call in self.calls if (use := self.application(call)) is not None]

    # -- what lies inside one node (any node of any module: the index of its module) -----------
    def calls_in(self, node: nodes.NodeNG) -> list[nodes.Call]:
        """The calls inside ``node`` (``node`` itself first if it is one), nested functions included."""
        return nodes_of_class(node, nodes.Call)  # type: ignore[return-value]

    def functions_in(self, node: nodes.NodeNG) -> list[nodes.FunctionDef]:
        """The function definitions (``def`` and ``async def``, methods too) inside ``node``."""
        return nodes_of_class(node, nodes.FunctionDef)  # type: ignore[return-value]

    def returns_of(self, function: nodes.NodeNG) -> list[nodes.Return]:
        """The ``return`` statements of ``function`` itself: not those of nested functions,
        lambdas or classes."""
        return nodes_of_class(  # type: ignore[return-value]
            function, nodes.Return, skip_klass=(*_NESTED_FUNCTIONS, nodes.ClassDef))

    def attribute_reads_in(self, node: nodes.NodeNG) -> list[nodes.Attribute]:
        """The attribute reads (``x.a`` loaded, not stored or deleted) inside ``node``."""
        return nodes_of_class(node, nodes.Attribute)  # type: ignore[return-value]

    def choices_in(self, node: nodes.NodeNG) -> list[nodes.BoolOp | nodes.IfExp]:
        """The expressions inside ``node`` that choose between values: ``a or b``, ``a and b``,
        ``a if c else b``."""
        return nodes_of_class(node, (nodes.BoolOp, nodes.IfExp))  # type: ignore[return-value]

    def names_and_calls_in(self, node: nodes.NodeNG) -> list[nodes.Name | nodes.Call]:
        """The names read and the calls made inside ``node`` (an expression, typically)."""
        return nodes_of_class(node, (nodes.Name, nodes.Call))  # type: ignore[return-value]

    def own_assignments_and_calls(self, node: nodes.NodeNG) -> list[nodes.Assign | nodes.Call]:
        """The ``x = ...`` statements and the calls inside ``node``, outside nested functions
        and lambdas (a loop's own body, say)."""
        return nodes_of_class(  # type: ignore[return-value]
            node, (nodes.Assign, nodes.Call), skip_klass=_NESTED_FUNCTIONS)
