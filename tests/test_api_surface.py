"""``nnx_lint.api`` is the rules' one surface: it exports exactly the names it documents.

That the checkers import the core only through it is an import-linter contract
(``tests/test_layers.py``).
"""
from __future__ import annotations

import re
import types

import nnx_lint.api as api

#: Bound in the module for its own use, not exported.
OWN_NAMES = {"annotations", "TYPE_CHECKING", "__all__"}


def documented_names() -> set[str]:
    """The ````Name```` mentions in the docstring's lists (lines starting with ``- `` and their continuations)."""
    found, in_item = set(), False
    for line in (api.__doc__ or "").splitlines():
        if line.startswith("- "):
            in_item = True
        elif not line.startswith("  "):
            in_item = False
        if in_item:
            found.update(re.findall(r"``(\w+)``", line))
    return found


def test_every_export_is_bound_once():
    assert len(api.__all__) == len(set(api.__all__))
    assert [name for name in api.__all__ if not hasattr(api, name)] == []


def test_the_module_binds_nothing_it_does_not_export():
    public = {name for name, value in vars(api).items()
              if not name.startswith("_") and not isinstance(value, types.ModuleType)} - OWN_NAMES
    assert public - set(api.__all__) == set()


def test_every_export_is_documented_under_its_purpose():
    documented = documented_names()
    assert set(api.__all__) - documented == set(), "add them to a list in nnx_lint/api.py's docstring"
    exported_or_type_only = set(api.__all__) | {"FileContext"}
    stray = {name for name in documented if hasattr(api, name) or name[:1].isupper()} - exported_or_type_only
    assert stray - OWN_NAMES - {"True", "False"} == set(), "documented but not exported"
