"""``nnx_lint.api`` is the rules' one surface: it exports exactly the names it documents.

That the checkers import the core only through it is an import-linter contract
(``tests/test_layers.py``). The surface stays small (issue 43: at most 80 names): the flax table,
the program builders and the object-flow model are one namespace each (``flax_table``, ``programs``,
``object_flow``), and a rule uses
only what each namespace lists in its ``__all__``.
"""
from __future__ import annotations

import ast
import re
import types
from pathlib import Path

import nnx_lint.api as api

#: The most names ``nnx_lint.api`` may export (166 when issue 43 was filed).
MOST_EXPORTS = 80
#: The namespaces the surface exports: a rule reads only their ``__all__``.
NAMESPACES = {"flax_table": api.flax_table, "programs": api.programs, "object_flow": api.object_flow,
              "gradients": api.gradients, "custom_vjps": api.custom_vjps,
              "sown_state": api.sown_state,
              "returned_inputs": api.returned_inputs, "shared_objects": api.shared_objects}
CHECKERS = Path(__file__).resolve().parents[1] / "checkers"

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


def test_the_surface_is_small():
    assert len(api.__all__) <= MOST_EXPORTS, f"{len(api.__all__)} names: group them, or remove those no rule uses"


def namespace_reads(source: str) -> set[tuple[str, str]]:
    """``(namespace, name)`` for every ``flax_table.X`` / ``programs.X`` read in ``source``."""
    return {(node.value.id, node.attr) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in NAMESPACES}


def test_the_namespace_scan_sees_a_read():
    assert namespace_reads("x = flax_table.TREE_MAP + programs.call('f')\n") == {
        ("flax_table", "TREE_MAP"), ("programs", "call")}


def test_rules_read_only_what_the_namespaces_list():
    for namespace in NAMESPACES.values():
        assert [name for name in namespace.__all__ if not hasattr(namespace, name)] == []
    outside = sorted(f"{path.relative_to(CHECKERS)}: {namespace}.{name}"
                     for path in CHECKERS.rglob("*.py")
                     for namespace, name in namespace_reads(path.read_text(encoding="utf-8"))
                     if name not in NAMESPACES[namespace].__all__)
    assert outside == [], "add the name to the namespace's __all__ (and document it there), or use another"
