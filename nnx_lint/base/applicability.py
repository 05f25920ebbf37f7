"""How a fix may be applied (Ruff's applicability levels), and the fix kind of a pin: what a rule
declares (:mod:`nnx_lint.base.fix_kinds`) and what a fix record carries (:mod:`nnx_lint.fixes.model`).

A module of its own so that a check whose fixes all come from the fix cache reads them without
importing the rewrite declarations (a dataclass and a typing protocol: start-up time).
"""
from __future__ import annotations

#: Ruff's applicability levels: ``--fix`` applies ``safe`` fixes, ``--unsafe-fixes`` adds
#: ``unsafe`` ones, ``display-only`` fixes are shown and never applied.
SAFE, UNSAFE, DISPLAY_ONLY = "safe", "unsafe", "display-only"
APPLICABILITIES = (SAFE, UNSAFE, DISPLAY_ONLY)

#: The fix kind that keeps graph mode at the call that decides a finding (``Rule.fixes``).
PIN = "pin"
