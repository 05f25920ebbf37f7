"""Sown and perturbed state across transforms: which collection a filter names, a scope that
captures (``nnx.capture``), a ``DiffState`` recipe over ``nnx.Perturbation`` and the grads it
feeds. The graph updates rules (NNX302, NNX303) ask it as ``nnx_lint.api.sown_state``."""
from __future__ import annotations

from astroid import nodes

from nnx_lint.analysis.calls import NNXCall
from nnx_lint.analysis.flow import expressions_within
from nnx_lint.analysis.transforms import transform_resolver
from nnx_lint.base.node_index import nodes_of_class
from nnx_lint.flax_table import table as flax_table

__all__ = ["sown_collection", "uses_capture", "perturb_recipe_diffstate", "grads_of"]


def sown_collection(context, filters: list[nodes.NodeNG]) -> str | None:
    """``Intermediate`` / ``Perturbation`` when the filters name one (in whatever module they sit)."""
    resolver = transform_resolver(context)
    for expression in filters:
        name = resolver.qualified_name(expression)
        if name in flax_table.SOWN_VARIABLE_TYPES:
            return name.rpartition(".")[2]
    return None


def uses_capture(context, scope: nodes.NodeNG) -> bool:
    """Whether ``scope`` calls ``nnx.capture``."""
    for call in nodes_of_class(scope, nodes.Call):
        found = context.nnx_call(call)
        if found is not None and found.name == "capture":
            return True
    return False


def perturb_recipe_diffstate(context, node: nodes.NodeNG) -> nodes.Call | None:
    """A `nnx.DiffState(..., (..., nnx.Perturbation))` in the scope of ``node`` (or the
    module) that does not feed only graph-mode `grad`s."""
    for scope in dict.fromkeys((node.scope(), node.root())):
        for call in nodes_of_class(scope, nodes.Call):
            if call.scope() is not scope:
                continue
            found = context.nnx_call(call)
            if found is None or found.name != "DiffState" or len(found.args) < 2:
                continue
            if any(context.qualified_name(e) == flax_table.NNX_PERTURBATION for e, _ in expressions_within(found.args[1])):
                if not _feeds_only_graph_mode(context, call):
                    return call
    return None


def _feeds_only_graph_mode(context, diffstate: nodes.Call) -> bool:
    uses = grads_of(context, diffstate)
    return bool(uses) and all(context.keeps_graph_mode(u) for u in uses)


def grads_of(context, diffstate: nodes.Call) -> list[NNXCall]:
    """The ``grad`` / ``value_and_grad`` calls whose ``argnums`` holds ``diffstate``."""
    uses = []
    for call in nodes_of_class(diffstate.root(), nodes.Call):
        found = context.nnx_call(call)
        if found is None or found.name not in flax_table.GRAD_TRANSFORMS or "argnums" not in found.keywords:
            continue
        if any(e is diffstate for e, _ in expressions_within(found.keywords["argnums"])):
            uses.append(found)
    return uses
