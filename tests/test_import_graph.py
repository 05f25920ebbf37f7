"""The import graph of ``nnx_lint`` is acyclic, and only discovery imports the rules.

Read from the source with ``ast`` (nothing is imported): every ``import`` / ``from ...
import`` between ``nnx_lint`` modules is an edge, wherever it stands (module level or inside
a function), because a late import hides a cycle without removing it. Imports under
``if TYPE_CHECKING:`` are left out: they never run, they only name a type for an annotation
(``Rule.__init__(context: FileContext)``), and such a back reference is not a load order.
"""
from __future__ import annotations

import ast
from pathlib import Path

from _support import REPO

PACKAGE = REPO / "nnx_lint"
#: The one module of nnx_lint that may import ``checkers``: rule discovery.
DISCOVERY = "nnx_lint.engine.registry"


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported_names(path: Path, name: str) -> set[str]:
    """Every dotted module name ``path`` imports (relative imports resolved; for ``from a import b``
    both ``a`` and ``a.b``, since ``b`` may be a submodule)."""
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = {id(node) for guard in ast.walk(tree) if _is_type_checking_guard(guard)
                 for statement in guard.body for node in ast.walk(statement)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            found.add(prefix)
            found.update(f"{prefix}.{alias.name}" for alias in node.names)
    return found


def _is_type_checking_guard(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_graph() -> dict[str, set[str]]:
    """``module -> the nnx_lint modules it imports`` (a package's ``__init__`` for ``import nnx_lint``)."""
    known = modules()
    graph = {}
    for name, path in known.items():
        graph[name] = {target for target in imported_names(path, name) if target in known and target != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as ``[a, b, ..., a]``, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return stack[stack.index(target):] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_scan_sees_the_package():
    graph = import_graph()
    assert {"nnx_lint.engine.walk", "nnx_lint.fixes.apply", "nnx_lint.gate.runner", DISCOVERY} <= graph.keys()
    assert "nnx_lint.analysis.rule" in graph["nnx_lint.engine.walk"] or any(
        "nnx_lint.analysis.rule" in t for t in graph.values())


def test_function_level_imports_are_edges_and_type_only_imports_are_not(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from nnx_lint.engine.walk import X\n"
                      "def f():\n    from nnx_lint.analysis.rule import Rule\n    from . import sibling\n")
    found = imported_names(module, "nnx_lint.m")
    assert {"nnx_lint.analysis.rule", "nnx_lint.sibling"} <= found and "nnx_lint.engine.walk" not in found


def test_find_cycle_reports_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_nnx_lint_imports_have_no_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_only_discovery_imports_the_rules():
    offenders = sorted(
        name for name, path in modules().items()
        if name != DISCOVERY and any(t == "checkers" or t.startswith("checkers.") for t in imported_names(path, name))
    )
    assert offenders == [], "nnx_lint reaches the rules only through nnx_lint.engine.registry"
