"""Analysis helpers shared by several graph updates rules."""
from __future__ import annotations

from astroid import nodes

from nnx_lint.api import (
    NNXCall,
    Reach,
    entry_pin_target,
    expressions_within,
    flax_table,
    nodes_of_class,
    pin_sites_in,
    transform_resolver,
)


VALUE_ATTRIBUTES = frozenset({"value", "raw_value"})


def entry_pin(context, reach: Reach) -> list[dict]:
    """Where a pin fix keeps graph mode: the transform that traces the reached code (and the
    transforms around it), if in this file."""
    return pin_sites_in(context, entry_pin_target(reach.entry))


def file_name(node: nodes.NodeNG) -> str:
    """The base name of the file ``node`` is in, for a message."""
    path = node.root().file or node.root().name
    return path.rsplit("/", 1)[-1]


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
