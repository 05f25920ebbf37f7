"""The object-flow model: abstract objects at their creation sites, inclusion constraints from
per-scope summaries, a bounded worklist solver, and the queries rules ask
(:class:`~nnx_lint.analysis.objects.model.ObjectModel`)."""
from __future__ import annotations

from nnx_lint.analysis.objects.abstract import AbstractObject
from nnx_lint.analysis.objects.carries import loop_records, stale_carry_reads
from nnx_lint.analysis.objects.guards import (
    branch_never_taken,
    leaves_the_tree,
    never_built,
    parameter_guards,
    reached_from,
    restores_constant,
    restores_invariant,
    shared_inside,
    shared_rngs_paths,
)
from nnx_lint.analysis.objects.model import ObjectModel, Path, object_model
from nnx_lint.analysis.objects.proof import first_unknown_link, unknown_link

#: What rules read through ``nnx_lint.api.object_flow``: the model and the questions built on it.
__all__ = [
    "AbstractObject", "ObjectModel", "Path", "object_model", "restores_constant", "restores_invariant",
    "branch_never_taken", "parameter_guards", "reached_from", "leaves_the_tree", "never_built",
    "shared_rngs_paths", "shared_inside", "loop_records", "stale_carry_reads", "unknown_link", "first_unknown_link",
]
