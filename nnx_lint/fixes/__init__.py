"""Fixes: keep graph mode at a finding (pin) or rewrite it to Tree Mode (libcst).

The package splits into small modules:

* :mod:`~nnx_lint.analysis.pin_sites` — the ``pin`` fact rules attach to a diagnostic (no libcst);
* :mod:`~nnx_lint.fixes.model` — :class:`Fix` and :class:`Edit`, Ruff's JSON ``fix`` object (no libcst);
* :mod:`~nnx_lint.fixes.flax_target` — the flax the project runs on, which decides the pins offered (no libcst);
* :mod:`~nnx_lint.fixes.pin` — the pin edit at a call (libcst);
* :mod:`~nnx_lint.fixes.rewrites` — tree-native rewrites (libcst);
* :mod:`~nnx_lint.fixes.apply` — a diagnostic's fix, edits applied to a fixed point, notebooks.

Only ``pin``, ``rewrites`` and ``apply`` import libcst, so linting never needs it.
"""
from __future__ import annotations
