"""The ``pin`` fact: where a pin fix keeps graph mode for a diagnostic (no libcst).

A rule that knows which NNX call decides the mode of its finding adds
``pin=pin_sites(...)`` to the diagnostic's facts: a list of call locations (the
transform or graph API call, or the bare decorator such as ``@nnx.jit``) with the API's
short name, which decides the flags (``graph=True, graph_updates=True`` on a transform,
``graph=True`` on a graph API). Columns are 1-based, like the diagnostic's own.
"""
from __future__ import annotations

from typing import Any

from astroid import nodes

from nnx_lint.analysis.calls import NNXCall
from nnx_lint.analysis.call_sites import is_parameter


def pin_site(node: nodes.NodeNG, api: str) -> dict[str, Any]:
    """The location of one call (or bare decorator) to pin, as JSON-able data."""
    return {
        "line": node.lineno,
        "column": node.col_offset + 1,
        "end_line": node.end_lineno,
        "end_column": node.end_col_offset + 1,
        "api": api,
    }


def pin_sites(*targets: NNXCall | tuple[nodes.NodeNG, str] | None, module: nodes.Module | None = None) -> list[dict[str, Any]]:
    """Pin sites of NNX calls (or ``(bare decorator, api)`` pairs), skipping Nones, duplicates,
    transforms named by a parameter (a test's ``jit_fn``, ``nnx.jit`` in one case and ``jax.jit`` in
    another: the pin would break the other cases) and, when ``module`` is given, nodes of other
    files (a fix edits only the linted file)."""
    sites: list[dict[str, Any]] = []
    for target in targets:
        if target is None:
            continue
        node, api = (target.node, target.name) if isinstance(target, NNXCall) else target
        if node.lineno is None or node.end_lineno is None:
            continue
        if is_parameter(target.callee if isinstance(target, NNXCall) else node):
            continue
        if module is not None and node.root() is not module:
            continue
        site = pin_site(node, api)
        if site not in sites:
            sites.append(site)
    return sites


def entry_pin_target(entry: Any) -> NNXCall | tuple[nodes.NodeNG, str] | None:
    """The pin target of a :class:`nnx_lint.analysis.transformed.Entry`: its NNX call, or the bare
    decorator it was applied by (``@nnx.jit``)."""
    if entry is None:
        return None
    if entry.call is not None:
        return entry.call
    if entry.form == "decorator":
        return (entry.node, entry.transform)
    return None


def pin_sites_in(context: Any, *targets: NNXCall | tuple[nodes.NodeNG, str] | None) -> list[dict[str, Any]]:
    """Pin sites of ``targets`` and of every Tree Mode transform that encloses them, in the
    linted file: a graph-mode transform nested in a Tree Mode one still loses its graph
    updates at the outer boundary (``nnx.grad`` pinned inside an unpinned ``@nnx.jit``), so
    keeping today's meaning means pinning outward."""
    from nnx_lint.analysis.transformed import transformed_code

    service = transformed_code(context)
    expanded: list[NNXCall | tuple[nodes.NodeNG, str] | None] = []
    for target in targets:
        if target is None:
            continue
        expanded.append(target)
        node = target.node if isinstance(target, NNXCall) else target[0]
        seen: set[int] = set()
        while True:
            # A decorator runs where its function is defined, not inside it.
            anchor = node.parent.parent if isinstance(node.parent, nodes.Decorators) else node
            reach = service.reach_at(anchor)
            entry = reach.entry if reach is not None else None
            if entry is None or not entry.affected or id(entry.node) in seen:
                break
            seen.add(id(entry.node))
            expanded.append(entry_pin_target(entry))
            node = entry.node
    return pin_sites(*expanded, module=context.module)
