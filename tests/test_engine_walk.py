"""The engine's walk runs the handlers in the order of a walk of the tree itself.

The engine visits the analysed file in the order of its module index (astroid's pre-order,
built once for the walk and for every ``nodes_of_class`` question); these tests hold it to
the order of a plain recursive walk, with leave handlers after each node's subtree.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from astroid import nodes

from nnx_lint.analysis import parsing
from nnx_lint.engine.walk import lint_module
from nnx_lint.analysis.project import Project
from nnx_lint.analysis.rule import Rule

# The rule fixtures (linter_errors holds files that do not parse or nest too deeply to walk).
FIXTURES = sorted(p for p in (Path(__file__).parent / "fixtures").glob("*/*.py") if p.parent.name != "linter_errors")


def _tree_walk(node: nodes.NodeNG, visited: tuple[str, ...], left: tuple[str, ...], log: list) -> None:
    kind = node.__class__.__name__.lower()
    if kind in visited:
        log.append(("visit", kind, node.lineno, node.col_offset))
    for child in node.get_children():
        _tree_walk(child, visited, left, log)
    if kind in left:
        log.append(("leave", kind, node.lineno, node.col_offset))


def _recording_rule(visited: tuple[str, ...], left: tuple[str, ...], log: list) -> type[Rule]:
    """A rule class (never discovered: defined here) that logs every node it is handed."""

    def handler(event: str):
        def record(self, node: nodes.NodeNG) -> None:
            log.append((event, node.__class__.__name__.lower(), node.lineno, node.col_offset))
        return record

    attributes = {"code": "NNX998", "symbol": "recording-rule", "message": "never", "kind": "advisory"}
    attributes.update({f"visit_{kind}": handler("visit") for kind in visited})
    attributes.update({f"leave_{kind}": handler("leave") for kind in left})
    return type("RecordingRule", (Rule,), attributes)


@pytest.mark.parametrize(
    "visited, left",
    [
        (("call", "expr", "functiondef", "classdef", "with", "module"), ("module",)),  # today's rules
        (("call", "lambda", "asyncfunctiondef", "name"), ("module", "functiondef", "classdef", "lambda")),
        (("call", "attribute"), ("module", "call")),  # a leave on a node without an extent
    ],
    ids=["rules-of-today", "scope-leaves", "non-scope-leave"],
)
@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.name)
def test_handlers_run_in_the_order_of_the_tree(fixture: Path, visited, left):
    module = parsing.build(fixture.read_text(errors="replace"), str(fixture), fixture.stem)
    expected: list = []
    _tree_walk(module, visited, left, expected)
    log: list = []
    diagnostics = lint_module(module, str(fixture), [_recording_rule(visited, left, log)], Project())
    assert [d.code for d in diagnostics] == []  # no NNX003: the rule ran on every node
    assert log == expected
    assert log  # the module itself, at least
