"""The mode-context service: where graph mode is explicitly kept."""
from __future__ import annotations

import textwrap

import pytest
from astroid import nodes

from nnx_lint.analysis import parsing
from nnx_lint.analysis.context import FileContext
from nnx_lint.analysis.project import Project


def last_nnx_call_keeps_graph(source: str) -> bool:
    module = parsing.build(textwrap.dedent(source), "m.py", "m")
    context = FileContext(module, "m.py", Project())
    calls = [c for c in module.nodes_of_class(nodes.Call) if (nc := context.nnx_call(c)) and nc.name in ("vmap", "split")]
    return context.keeps_graph_mode(context.nnx_call(calls[-1]))


HEAD = "from flax import nnx\n"


@pytest.mark.parametrize(
    ("body", "keeps"),
    [
        ("nnx.vmap(f)", False),
        ("nnx.vmap(f, graph=True)", False),
        ("nnx.vmap(f, graph=True, graph_updates=True)", True),
        ("nnx.vmap(f, graph=flag, graph_updates=flag)", True),
        ("nnx.compat.vmap(f)", True),
        ("nnx.compat.vmap(f, graph=False)", False),
        ("nnx.split(m, graph=True)", True),
        ("nnx.compat.split(m)", True),
        ("with nnx.set_graph_mode(True), nnx.set_graph_updates(True):\n    nnx.vmap(f)", True),
        ("with nnx.set_graph_mode(True):\n    nnx.vmap(f)", False),
        ("with nnx.set_graph_mode(True):\n    nnx.split(m)", True),
        ("with nnx.set_graph_mode(True), nnx.set_graph_updates(True):\n    pass\nnnx.vmap(f)", False),
        ("with nnx.set_graph_mode(True), nnx.set_graph_updates(True):\n    nnx.vmap(f, graph=False)", False),
        ("@nnx.set_graph_mode(True)\n@nnx.set_graph_updates(True)\ndef g():\n    return nnx.vmap(f)", True),
        ("nnx.set_graph_mode(True)\nnnx.set_graph_updates(True)\nnnx.vmap(f)", True),
        ("nnx.vmap(f)\nnnx.set_graph_mode(True)\nnnx.set_graph_updates(True)", False),
        ("def g():\n    return nnx.vmap(f)\nnnx.set_graph_mode(True)\nnnx.set_graph_updates(True)", True),
        # A decorator runs when the `def` runs: a later module-level switch comes too late (G2).
        ("@nnx.vmap(in_axes=0)\ndef g(x):\n    return x\nnnx.set_graph_mode(True)\nnnx.set_graph_updates(True)", False),
        ("nnx.set_graph_mode(True)\nnnx.set_graph_updates(True)\n@nnx.vmap(in_axes=0)\ndef g(x):\n    return x", True),
        ("import flax\nflax.config.update('nnx_graph_mode', True)\nflax.config.update('nnx_graph_updates', True)\nnnx.vmap(f)", True),
        ("nnx.set_graph_mode(True)\nnnx.set_graph_updates(True)\nnnx.set_graph_mode(False)\nnnx.vmap(f)", False),
        ("def g():\n    nnx.set_graph_mode(True)\n    nnx.set_graph_updates(True)\n    return nnx.vmap(f)", True),
    ],
)
def test_mode_context(body, keeps):
    assert last_nnx_call_keeps_graph(HEAD + body + "\n") is keeps
