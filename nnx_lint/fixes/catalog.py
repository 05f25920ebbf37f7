"""What each fix a rule offers does, for the rule pages and ``nnx-lint rule`` (no libcst needed).

The pin is the fixes machinery's own (:mod:`nnx_lint.fixes.pin`); a rewrite says what it does in
its :class:`~nnx_lint.base.fix_kinds.Rewrite`, declared beside its rule.
"""
from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING

from nnx_lint.fixes.model import PIN, SAFE

if TYPE_CHECKING:
    from nnx_lint.analysis.rule import Rule

#: The pin: (applicability, what it does).
PIN_DOES = (SAFE, "keeps graph mode at the call that decides this finding: `graph=True, graph_updates=True` on "
                  "the transform (`@nnx.jit` becomes `@nnx.jit(graph=True, graph_updates=True)`), `graph=True` on a "
                  "graph API. The code keeps today's meaning when the defaults flip; `--select NNX901` then lists "
                  "the pins as the migration backlog")

#: The fact a class-level rule's diagnostics carry (:func:`class_level`).
EVERY_USE_FACT = "pin_every_use"
CLASS_LEVEL_NOTE = ("The finding is about the class (or object), so every use of it must keep graph mode: the pin "
                    "is offered at each use this file shows (transform and graph API calls taking an instance), "
                    "and is display-only when some use cannot be pinned or none is known.")


def fix_kinds(rule: type[Rule]) -> list[tuple[str, str, str]]:
    """(name, applicability, what it does) of each fix the rule offers, in its order."""
    return [(PIN, *PIN_DOES) if kind == PIN else (kind.name, kind.applicability, kind.does) for kind in rule.fixes]


def class_level(rule: type[Rule]) -> bool:
    """Whether the rule's finding is about a class or object, so that every use must be pinned:
    its facts declare ``pin_every_use`` (which the pin fix reads)."""
    return rule.facts_type is not None and any(f.name == EVERY_USE_FACT for f in fields(rule.facts_type))
