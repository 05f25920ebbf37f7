"""Rule discovery and selection.

Rules are found by importing every module of the ``checkers`` package and of its family
subpackages (``checkers/<family>/<rule>.py``) and collecting the :class:`~nnx_lint.analysis.rule.Rule`
subclasses that define a ``code``. Nothing is listed by hand; the invariants a list would
give are enforced by tests. This is the one module of ``nnx_lint`` that imports ``checkers``
(a test keeps it so): everything else reaches the rules through it.
"""
from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import nnx_lint
from nnx_lint.base.diagnostic import UNPROVEN
from nnx_lint.engine.own_rules import ForeignRules, check_own_rules, rules_directory  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from nnx_lint.analysis.rule import Rule
    from nnx_lint.base.diagnostic import Diagnostic
    from nnx_lint.base.facts import Facts

# The rules' base class and the facts are imported by the functions that use them: selecting and
# checking selectors reads the rules' module names only, and a warm run does nothing else here.


@lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule class, sorted by code."""
    from nnx_lint.analysis.rule import Rule

    check_own_rules()
    import checkers

    # walk_packages imports each package to look inside it, so every family module is loaded.
    for module_info in pkgutil.walk_packages(checkers.__path__, prefix="checkers."):
        importlib.import_module(module_info.name)
    found: dict[str, type[Rule]] = {}
    for rule in _subclasses(Rule):
        if "code" in vars(rule) and rule.__module__.startswith("checkers."):
            found.setdefault(rule.code + rule.__qualname__, rule)
    return tuple(sorted(found.values(), key=lambda r: r.code))


def family_package(rule: type[Rule]) -> ModuleType:
    """The family package a rule's module belongs to (``checkers.prefix_filters``): its
    docstring says what the family is."""
    all_rules()
    return sys.modules[rule.__module__.rpartition(".")[0]]


def _subclasses(cls: type) -> Iterable[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def rule_by_code(code: str) -> type[Rule] | None:
    """The rule with this exact code, if any."""
    return next((r for r in all_rules() if r.code == code), None)


def facts_of(diagnostic: Diagnostic) -> Facts | None:
    """The typed facts of a stored diagnostic (its rule's ``facts_type`` read back from the stored
    dict, :meth:`Rule.facts_from`): the boundary where a reader of a diagnostic (the fixes, the
    docs) turns its facts into attributes. None for an engine-reported NNX0xx diagnostic (whose
    facts the engine writes, not a rule) or an unknown code."""
    rule = rule_by_code(diagnostic.code)
    if rule is None or rule.facts_type is None:
        return None
    from nnx_lint.base.facts import UnprovenFacts, facts_from_dict

    if diagnostic.proof == UNPROVEN:  # audit mode: the value and why, not the rule's facts
        return facts_from_dict(UnprovenFacts, diagnostic.facts)
    return rule.facts_from(diagnostic.facts)


def pin_sites(facts: Facts | None) -> list:
    """The ``pin`` fact of typed facts (the calls that keep graph mode), ``[]`` when the finding
    has none or its rule declares no such fact."""
    from nnx_lint.base.facts import ABSENT

    pin = getattr(facts, "pin", ABSENT)
    return pin or []


def rule_by_symbol(symbol: str) -> type[Rule] | None:
    return next((r for r in all_rules() if r.symbol == symbol), None)


class UnknownSelector(ValueError):
    """A select/ignore entry that matches no rule code."""


@lru_cache(maxsize=1)
def rule_codes() -> tuple[str, ...]:
    """Every rule's code, read from the rule modules' names (``checkers/<family>/nnx201_....py``)
    without importing them: checking a selector then costs no import of the rules and astroid,
    which a warm run with ``--select`` would otherwise pay for nothing (a test holds these codes
    equal to :func:`all_rules`')."""
    codes = set()
    for family in rules_directory().iterdir():
        if family.is_dir() and (family / "__init__.py").is_file():
            for module in family.glob("nnx[0-9]*.py"):
                codes.add(module.name.split("_", 1)[0].upper())
    return tuple(sorted(codes))


def _check_selectors(selectors: Iterable[str]) -> list[str]:
    codes = rule_codes()
    result = []
    for selector in selectors:
        selector = selector.strip().upper()
        if not selector:
            continue
        if selector != "ALL" and not any(code.startswith(selector) for code in codes):
            raise UnknownSelector(f"unknown rule selector {selector!r} (no rule code starts with it)")
        result.append(selector)
    return result


def check_selectors(*selector_lists: Iterable[str] | None) -> None:
    """Raise :class:`UnknownSelector` for a selector that matches no rule code (without
    importing the rules: see :func:`rule_codes`)."""
    for selectors in selector_lists:
        if selectors is not None:
            _check_selectors(selectors)


def _matches(code: str, selector: str) -> bool:
    return selector == "ALL" or code.startswith(selector)


def select_rules(
    select: Iterable[str] | None = None,
    ignore: Iterable[str] = (),
    extend_select: Iterable[str] = (),
) -> tuple[type[Rule], ...]:
    """Resolve prefix selectors (``NNX2``, ``NNX201``, ``ALL``) to rule classes.

    Without ``select`` the default set is used: every rule with ``default_enabled``.
    Like Ruff, the most specific selector wins when a code is both selected and
    ignored (``--select NNX201 --ignore NNX2`` keeps NNX201).
    """
    select_list = _check_selectors(select) if select is not None else None
    ignore_list = _check_selectors(ignore)
    extend_list = _check_selectors(extend_select)
    chosen = []
    for rule in all_rules():
        selected_by = [s for s in (select_list or []) + extend_list if _matches(rule.code, s)]
        if select_list is None and rule.default_enabled:
            selected_by.append("")
        ignored_by = [s for s in ignore_list if _matches(rule.code, s)]
        if not selected_by:
            continue
        if ignored_by and max(len(s) for s in ignored_by) >= max(len(s) for s in selected_by):
            continue
        chosen.append(rule)
    return tuple(chosen)
