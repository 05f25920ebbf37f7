"""The fact index: what a module's calls, stores, bindings and returns are, found once per module.

Several rules ask the same questions about every call of a file ("which NNX function is this?",
"which transformed function does it run?", "does it run one at all?"), and each family used to
walk the module for its own stores and returns. The index lists a module's nodes of each of these
kinds once (slices of the module's pre-order index, :mod:`nnx_lint.base.node_index`, so in the
engine's walk order) and answers the per-call questions from the file's services, each computed
once per call and then read by every rule that asks: the resolved transform application, with
its running entry (:class:`~nnx_lint.analysis.transforms.TransformResolver`), and the NNX call.

Rules read it through :func:`fact_index` (``nnx_lint.api``)::

    facts = fact_index(self.context)
    for call in facts.calls:
        entry = facts.running_entry(call)
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.analysis.calls import NNXCall
from nnx_lint.analysis.transform_types import Application, Entry, explicit_tree
from nnx_lint.analysis.transforms import transform_resolver
from nnx_lint.base.node_index import nodes_of_class
from nnx_lint.flax_table import table as flax_table

if TYPE_CHECKING:
    from nnx_lint.analysis.context import FileContext


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
