"""What each fix kind does, for the rule pages and ``nnx-lint rule`` (no libcst needed).

The builders live in :mod:`nnx_lint.fixes.pin` and :mod:`nnx_lint.fixes.rewrites`; a test
holds this table and :data:`nnx_lint.fixes.rewrites.REWRITES` to the same names.
"""
from __future__ import annotations

from nnx_lint.fixes.model import DISPLAY_ONLY, PIN, SAFE, UNSAFE

#: Fix kind -> (applicability, what it does).
FIX_KINDS: dict[str, tuple[str, str]] = {
    PIN: (SAFE, "keeps graph mode at the call that decides this finding: `graph=True, graph_updates=True` on "
                "the transform (`@nnx.jit` becomes `@nnx.jit(graph=True, graph_updates=True)`), `graph=True` on a "
                "graph API. The code keeps today's meaning when the defaults flip; `--select NNX901` then lists "
                "the pins as the migration backlog"),
    "keep-split-rngs-result": (UNSAFE, "assigns the result back: `nnx.split_rngs(rngs, ...)` becomes "
                                       "`rngs = nnx.split_rngs(rngs, ...)` (when the argument is a name or attribute)"),
    "transform-metadata-layer": (UNSAFE, "moves `transform_metadata={nnx.PARTITION_NAME: 'p'}` of an `@nnx.vmap(...)` "
                                         "decorator into a stacked `@nnx.transform_metadata(in_axes=..., out_axes=..., "
                                         "partition='p')` layer with the same axes; other forms get a display-only TODO"),
    "fork-shared-rngs": (DISPLAY_ONLY, "a `# TODO(nnx-lint)` comment: pass `rngs.fork()` to all but one of the "
                                       "modules that store the `Rngs` (which modules may share keys is a judgement)"),
    "new-custom-vjp-backward": (DISPLAY_ONLY, "a `# TODO(nnx-lint)` comment: use the cotangent directly and return "
                                              "tangents of the inputs' own types (the body decides how)"),
}

#: Rewrite -> the ``flax.nnx`` name it writes that older flax releases lack
#: (:data:`nnx_lint.flax_table.nnx_api.NAME_SINCE` dates it): not offered to a project on an older flax.
REWRITE_WRITES: dict[str, str] = {"transform-metadata-layer": "transform_metadata"}

#: Rules whose finding is about a class or object (their diagnostics carry ``pin_every_use``):
#: every use must be pinned.
CLASS_LEVEL_RULES = frozenset({"NNX101", "NNX102", "NNX105"})
CLASS_LEVEL_NOTE = ("The finding is about the class (or object), so every use of it must keep graph mode: the pin "
                    "is offered at each use this file shows (transform and graph API calls taking an instance), "
                    "and is display-only when some use cannot be pinned or none is known.")
