"""Whether the ``checkers`` package Python would import is nnx-lint's own, found without importing it.

Apart from :mod:`nnx_lint.engine.registry` (which re-exports it), so that the command line asks
before anything else, without importing the rules' base classes: a warm ``nnx-lint check`` that
the cache answers never imports the rules (``tests/test_startup.py``).
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import nnx_lint


class ForeignRules(RuntimeError):
    """The ``checkers`` package Python would import is not the one installed with nnx-lint."""


def check_own_rules() -> None:
    """Raise :class:`ForeignRules` unless ``checkers`` is nnx-lint's own, installed beside ``nnx_lint``.

    ``python -m nnx_lint.cli`` (without ``-P``) and ``python -m flake8`` put the working
    directory first on ``sys.path``: in a checkout that commits a ``checkers/`` package, that
    package would be imported as nnx-lint's rules and run. Looked up without importing it.
    (A checkout that commits ``nnx_lint/`` itself replaces this check too: only the
    ``nnx-lint`` console script or ``python -P -m`` avoid that; see docs/security.md.)
    """
    _own_rules_location()


def rules_directory() -> Path:
    """The directory of nnx-lint's own ``checkers`` package (the cache fingerprints its sources),
    checked as :func:`check_own_rules` does and found without importing the package."""
    return Path(_own_rules_location())


def _own_rules_location() -> str:
    home = Path(nnx_lint.__file__).resolve().parent.parent
    loaded = sys.modules.get("checkers")
    spec = loaded.__spec__ if loaded is not None else importlib.util.find_spec("checkers")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations or Path(locations[0]).resolve().parent != home:
        found = locations[0] if locations else (spec.origin if spec is not None else "nowhere")
        raise ForeignRules(
            f"refusing to load rules from {found}: nnx-lint's own rules are in {home / 'checkers'}. The current "
            "directory comes first on sys.path with 'python -m'; run the nnx-lint console script or 'python -P -m "
            "nnx_lint.cli' instead")
    return locations[0]
