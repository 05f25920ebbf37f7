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

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint import nnx_api

from nnx_lint.call_sites import argument_for
from nnx_lint.calls import NNXCall
from nnx_lint.node_index import nodes_of_class
from nnx_lint.transforms import transform_resolver

if TYPE_CHECKING:
    from nnx_lint.engine import FileContext

_MAX_DEPTH = 3


@dataclass(frozen=True)
class GraphCall:
    """A ``flax.nnx`` call a helper makes with one of its parameters as first argument."""

    parameter: str
    call: NNXCall
    #: Helper names from the summarised function to the one making the call.
    chain: tuple[str, ...]


@dataclass
class Summary:
    """What calling a project helper does to its arguments."""

    function: nodes.FunctionDef
    graph_calls: list[GraphCall] = field(default_factory=list)
    #: Parameters the helper returns unchanged (alone or as a tuple element).
    returned_parameters: frozenset[str] = frozenset()
    #: ``(parameter, call, chain)`` for each graph-walking Module method called on a
    #: parameter (``model.iter_modules()``), here or in the helpers it passes it to.
    method_walks: list[tuple[str, nodes.Call, tuple[str, ...]]] = field(default_factory=list)


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
                summary.method_walks.append((walked.name, node, (function.name,)))
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
            for graph_call in inner_summary.graph_calls:
                argument = argument_for(inner, node, graph_call.parameter)
                if isinstance(argument, nodes.Name) and argument.name in parameters:
                    summary.graph_calls.append(
                        GraphCall(argument.name, graph_call.call, (function.name, *graph_call.chain)))
            for parameter, walk, chain in inner_summary.method_walks:
                argument = argument_for(inner, node, parameter)
                if isinstance(argument, nodes.Name) and argument.name in parameters:
                    summary.method_walks.append((argument.name, walk, (function.name, *chain)))
        summary.returned_parameters = frozenset(_returned_parameters(function, parameters))
        return summary

    def graph_calls_through(self, call: nodes.Call) -> list[tuple[nodes.NodeNG, GraphCall]]:
        """For a call of a project helper: ``(argument at this call, the helper's NNX call)``
        for each graph call the helper makes on that argument."""
        helper = self.helper_of(call)
        if helper is None or any(isinstance(a, nodes.Starred) for a in call.args):
            return []
        found = []
        for graph_call in self.summary(helper).graph_calls:
            argument = argument_for(helper, call, graph_call.parameter)
            if argument is not None:
                found.append((argument, graph_call))
        return found

    def walks_through(self, call: nodes.Call) -> list[tuple[nodes.NodeNG, nodes.Call, tuple[str, ...]]]:
        """For a call of a project helper: ``(argument at this call, the walking method call,
        helper chain)`` for each graph-walking Module method the helper calls on that argument."""
        helper = self.helper_of(call)
        if helper is None or any(isinstance(a, nodes.Starred) for a in call.args):
            return []
        found = []
        for parameter, walk, chain in self.summary(helper).method_walks:
            argument = argument_for(helper, call, parameter)
            if argument is not None:
                found.append((argument, walk, chain))
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
