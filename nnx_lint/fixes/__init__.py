"""Fixes: keep graph mode at a finding (pin) or rewrite it to Tree Mode (libcst).

The package splits into small modules:

* :mod:`~nnx_lint.analysis.pin_sites` — the ``pin`` fact rules attach to a diagnostic (no libcst);
* :mod:`~nnx_lint.base.fix_kinds` — what a rule declares: the pin, and each tree-native
  :class:`~nnx_lint.base.fix_kinds.Rewrite` it offers, written beside the rule (no libcst);
* :mod:`~nnx_lint.fixes.model` — :class:`Fix` and :class:`Edit`, Ruff's JSON ``fix`` object (no libcst);
* :mod:`~nnx_lint.fixes.catalog` — what each fix of a rule does, for its page (no libcst);
* :mod:`~nnx_lint.fixes.flax_target` — the flax the project runs on, which decides the pins offered (no libcst);
* :mod:`~nnx_lint.fixes.pin` — the pin edit at a call (libcst);
* :mod:`~nnx_lint.fixes.rewrites` — runs a rule's rewrite on a :class:`~nnx_lint.fixes.rewrites.Site`,
  which hands the builder libcst (libcst);
* :mod:`~nnx_lint.fixes.apply` — a diagnostic's fix, edits applied to a fixed point, notebooks.

Only ``pin``, ``rewrites``, ``source`` and ``apply`` import libcst, so linting never needs it (a rule's
rewrite gets libcst from its ``Site``, so no rule module imports it).
"""
from __future__ import annotations
