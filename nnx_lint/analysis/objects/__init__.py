"""The object-flow model: abstract objects at their creation sites, inclusion constraints from
per-scope summaries, a bounded worklist solver, and the queries rules ask
(:class:`~nnx_lint.analysis.objects.model.ObjectModel`)."""
from __future__ import annotations

from nnx_lint.analysis.objects.abstract import AbstractObject
from nnx_lint.analysis.objects.model import ObjectModel, Path, object_model

__all__ = ["AbstractObject", "ObjectModel", "Path", "object_model"]
