"""The graph-only error table (NNX713) and how a test's expected message is read.

The table's claim is run with flax in both modes: each example raises its message in graph
mode, and Tree Mode does what the entry says instead.
"""
from __future__ import annotations

import astroid
import pytest

from nnx_lint.analysis.expected_messages import expected_messages, found_in, pattern_strings, plain_text
from nnx_lint.flax_table.graph_errors import GRAPH_ONLY_ERRORS

_PRELUDE = "import jax\nimport jax.numpy as jnp\nfrom flax import nnx\n\n"


@pytest.mark.slow
def test_each_graph_only_error_is_raised_by_graph_mode_alone() -> None:
    pytest.importorskip("flax")
    from nnx_lint.confirmation.oracle import run_programs
    from nnx_lint.fixes.proof import case_program

    programs = [case_program(_PRELUDE + error.example) for error in GRAPH_ONLY_ERRORS]
    graph = run_programs(programs, "flax-graph", 600)
    tree = run_programs(programs, "flax", 600)
    for error, in_graph, in_tree in zip(GRAPH_ONLY_ERRORS, graph, tree):
        assert in_graph["status"] == "raises" and error.text in in_graph["message"], (error.text, in_graph)
        assert error.text not in in_tree.get("message", ""), (error.text, in_tree)
        if error.tree_text:
            assert error.tree_text in in_tree["message"], (error.text, in_tree)
        elif error.tree_mode == "raises nothing":
            assert in_tree["status"] == "ok", (error.text, in_tree)
        else:
            assert in_tree["status"] == "raises" and in_tree["type"] == "TypeError", (error.text, in_tree)


@pytest.mark.parametrize("pattern, text, found", [
    ("Graph nodes are not allowed", "x Graph nodes are not allowed as prefixes", True),
    (r"nnx\.make_jaxpr does not", "nnx.make_jaxpr does not support", True),
    ("nnx.make_jaxpr", "nnxXmake_jaxpr", True),  # `.` is a wildcard
    (r"nnx\.make_jaxpr", "nnxXmake_jaxpr", False),
    ("Carry references", "carry references", False),
    ("a long pattern", "short", False),
])
def test_plain_text_patterns_are_searched_as_re_search_would(pattern, text, found) -> None:
    import re

    assert found_in(plain_text(pattern), text) is found
    assert (re.search(pattern, text) is not None) is found


@pytest.mark.parametrize("pattern", ["(a+)+$", "Graph .* prefixes", r"\d+ nodes", "a|b", "[abc]", "x\\"])
def test_patterns_beyond_text_are_not_read(pattern) -> None:
    assert plain_text(pattern) is None


def test_pattern_strings_follow_conditionals_names_and_escape() -> None:
    module = astroid.parse(
        "import re\n"
        "def f(flag, given):\n"
        "    if flag:\n"
        "        message = 'first'\n"
        "    else:\n"
        "        message = 'second' if flag else re.escape('third.')\n"
        "    a = message\n"
        "    b = given\n"
    )
    function = module.body[1]
    a, b = (assign.value for assign in function.body[1:])
    assert [text for text, _node in pattern_strings(a)] == ["first", "second", "third\\."]
    assert pattern_strings(b) == []  # a parameter may be any string


def test_expected_messages_read_the_assertion_forms() -> None:
    module = astroid.parse(
        "import pytest\n"
        "def test(self, f):\n"
        "    with self.assertRaisesRegex(ValueError, 'one'):\n"
        "        f(1)\n"
        "    with pytest.raises(ValueError, match='two'):\n"
        "        f(2)\n"
        "    with pytest.raises(ValueError):\n"
        "        f(3)\n"
        "    self.assertRaisesRegex(ValueError, 'four', f, 4)\n"
    )
    resolve = lambda node: "pytest.raises" if node.as_string() == "pytest.raises" else None  # noqa: E731
    found = [expectation for statement in module.body[1].body
             for node in [statement, *statement.nodes_of_class(astroid.nodes.Call)]
             for expectation in expected_messages(node, resolve)]
    assert [(e.form, e.pattern.value, [c.as_string() for c in e.covered]) for e in found] == [
        ("assertRaisesRegex", "one", ["f(1)"]),
        ("pytest.raises", "two", ["f(2)"]),
        ("assertRaisesRegex", "four", ["f", "4"]),
    ]
