"""Summaries of project helpers, so that rules see through a call.

Real code wraps graph APIs in small helpers (``def take_sown(model): return
nnx.pop(model, nnx.Intermediate)``) and passes values through functions that return them.
A rule that looks for ``nnx.pop(model, ...)`` after a transform, or for a transformed
function returning its input, asks this service what a call of such a helper does to its
arguments (:func:`helper_summaries`).

A summary is computed once per function (memoised per file) and records:

* the ``flax.nnx`` calls the helper makes with one of its parameters as first argument
  (``nnx.pop(model, nnx.Intermediate)``, ``nnx.state(model, ...)``, ``nnx.split(model)``),
  also through helpers it calls in turn (depth-limited);
* the parameters it returns unchanged (``return model``, ``return x, model``).

Helpers are plain functions of this file or another project file, called by name.
Methods, functions decorated with an NNX transform (their body runs traced), ``*args``
calls and parameters rebound in the body are not summarised.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.flax_table import nnx_api
from nnx_lint.analysis.call_sites import argument_for
from nnx_lint.analysis.calls import NNXCall
from nnx_lint.base.node_index import nodes_of_class
from nnx_lint.analysis.transforms import transform_resolver

if TYPE_CHECKING:
    from nnx_lint.analysis.context import FileContext

_MAX_DEPTH = 3


@dataclass(frozen=True)
class GraphCall:
    """A ``flax.nnx`` call a helper makes with one of its parameters as first argument."""

    parameter: str
    call: NNXCall
    #: Helper names from the summarised function to the one making the call.
    chain: tuple[str, ...]


@dataclass(frozen=True)
class MethodWalk:
    """A graph-walking Module method (``model.iter_modules()``) a helper calls on one of its
    parameters."""

    parameter: str
    call: nodes.Call
    #: Helper names from the summarised function to the one making the call.
    chain: tuple[str, ...]


@dataclass
class Summary:
    """What calling a project helper does to its arguments."""

    function: nodes.FunctionDef
    graph_calls: list[GraphCall] = field(default_factory=list)
    #: Parameters the helper returns unchanged (alone or as a tuple element).
    returned_parameters: frozenset[str] = frozenset()
    #: The graph-walking methods called on a parameter, here or in the helpers it is passed to.
    method_walks: list[MethodWalk] = field(default_factory=list)


def helper_summaries(context: FileContext) -> HelperSummaries:
    """The (memoised) :class:`HelperSummaries` of one linted file."""
    return context.service(HelperSummaries)


class HelperSummaries:
    """Per-file summaries of the project helpers its code calls."""

    def __init__(self, context: FileContext) -> None:
        self.context = context
        self.transforms = transform_resolver(context)
        self._summaries: dict[int, Summary] = {}
        self._helpers: dict[int, nodes.FunctionDef | None] = {}

    def helper_of(self, call: nodes.Call) -> nodes.FunctionDef | None:
        """The plain project function ``call`` calls by name (this file or imported); a
        function decorated with an NNX transform is not a plain helper (its body is traced)."""
        key = id(call)
        if key not in self._helpers:  # several rules ask about every call of the file
            function = self.context.classes.function_called(call)
            self._helpers[key] = None if function is None or self.transforms.decorated(function) is not None \
                else function
        return self._helpers[key]

    def summary(self, function: nodes.FunctionDef, depth: int = 0) -> Summary:
        """The summary of one helper (memoised; cycles summarise as empty)."""
        key = id(function)
        if key in self._summaries:
            return self._summaries[key]
        summary = self._summaries[key] = Summary(function)  # placed first: guards recursion
        parameters = _plain_parameters(function)
        for node in nodes_of_class(function, nodes.Call, skip_klass=(nodes.FunctionDef, nodes.Lambda, nodes.ClassDef)):
            if node.scope() is not function:
                continue
            walked = node.func.expr if isinstance(node.func, nodes.Attribute) and not node.args \
                and node.func.attrname in nnx_api.WALKING_METHODS else None
            if isinstance(walked, nodes.Name) and walked.name in parameters:
                summary.method_walks.append(MethodWalk(walked.name, node, (function.name,)))
            if not node.args:
                continue
            first = node.args[0]
            nnx_call = self.transforms.nnx_call(node)
            if nnx_call is not None:
                if isinstance(first, nodes.Name) and first.name in parameters:
                    summary.graph_calls.append(GraphCall(first.name, nnx_call, (function.name,)))
                continue
            if depth >= _MAX_DEPTH:
                continue
            inner = self.helper_of(node)
            if inner is None or inner is function:
                continue
            inner_summary = self.summary(inner, depth + 1)
            # what the inner helper does to a parameter, it does to the argument passed for it
            for found, inner_found in ((summary.graph_calls, inner_summary.graph_calls),
                                       (summary.method_walks, inner_summary.method_walks)):
                for entry in inner_found:
                    argument = argument_for(inner, node, entry.parameter)
                    if isinstance(argument, nodes.Name) and argument.name in parameters:
                        found.append(dataclasses.replace(entry, parameter=argument.name,
                                                         chain=(function.name, *entry.chain)))
        summary.returned_parameters = frozenset(_returned_parameters(function, parameters))
        return summary

    def graph_calls_through(self, call: nodes.Call) -> list[tuple[nodes.NodeNG, GraphCall]]:
        """For a call of a project helper: ``(argument at this call, the helper's NNX call)``
        for each graph call the helper makes on that argument."""
        return self._at_call(call, lambda summary: summary.graph_calls)

    def walks_through(self, call: nodes.Call) -> list[tuple[nodes.NodeNG, MethodWalk]]:
        """For a call of a project helper: ``(argument at this call, the walk)`` for each
        graph-walking Module method the helper calls on that argument."""
        return self._at_call(call, lambda summary: summary.method_walks)

    def _at_call(self, call: nodes.Call, entries_of) -> list[tuple[nodes.NodeNG, GraphCall | MethodWalk]]:
        """Each entry ``entries_of`` takes from the called helper's summary, with the argument
        this call passes for the entry's parameter."""
        helper = self.helper_of(call)
        if helper is None or any(isinstance(a, nodes.Starred) for a in call.args):
            return []
        found = []
        for entry in entries_of(self.summary(helper)):
            argument = argument_for(helper, call, entry.parameter)
            if argument is not None:
                found.append((argument, entry))
        return found

    def returned_arguments(self, call: nodes.Call) -> list[nodes.NodeNG]:
        """The arguments a call of a project helper returns unchanged."""
        helper = self.helper_of(call)
        if helper is None or any(isinstance(a, nodes.Starred) for a in call.args):
            return []
        found = []
        for parameter in sorted(self.summary(helper).returned_parameters):
            argument = argument_for(helper, call, parameter)
            if argument is not None:
                found.append(argument)
        return found


def _plain_parameters(function: nodes.FunctionDef) -> set[str]:
    """Parameters never rebound in the body (a rebound name no longer holds the argument)."""
    arguments = function.args
    names = {a.name for a in (arguments.posonlyargs or []) + (arguments.args or []) + (arguments.kwonlyargs or [])}
    for node in nodes_of_class(function, nodes.AssignName, skip_klass=(nodes.FunctionDef, nodes.Lambda, nodes.ClassDef)):
        if node.scope() is function and not isinstance(node.parent, nodes.Arguments):
            names.discard(node.name)
    return names


def _returned_parameters(function: nodes.FunctionDef, parameters: set[str]) -> set[str]:
    found: set[str] = set()
    for node in nodes_of_class(function, nodes.Return, skip_klass=(nodes.FunctionDef, nodes.Lambda, nodes.ClassDef)):
        if node.scope() is not function or node.value is None:
            continue
        values = node.value.elts if isinstance(node.value, nodes.Tuple) else [node.value]
        found.update(v.name for v in values if isinstance(v, nodes.Name) and v.name in parameters)
    return found
