"""Errors only graph mode raises: messages of flax 0.12.8 that Tree Mode never gives.

A test that asserts one of these messages (``assertRaisesRegex``, ``pytest.raises(match=)``)
passes today and fails once the defaults flip: Tree Mode raises another error at that call,
or none at all (NNX713). Each entry was run with flax 0.12.8 in both modes;
``tests/test_graph_errors.py`` runs each one's example again, with flax, in both modes.

Only the static text of each message is kept (the parts flax formats in, such as a type
name or a path, are left out), so a test's pattern is matched against text flax always writes.
"""
from __future__ import annotations

from dataclasses import dataclass

from nnx_lint.flax_table.nnx_api import TRANSFORMS


@dataclass(frozen=True)
class GraphOnlyError:
    """One error message graph mode raises and Tree Mode does not."""

    #: Static text of the message, as flax 0.12.8 writes it (``str(error)`` contains it).
    text: str
    #: The NNX APIs (short names) whose call raises it.
    apis: frozenset[str]
    #: The mode flag that must be in force for it: ``"graph"`` or ``"graph_updates"``.
    needs: str
    #: What Tree Mode does at the same call instead, in a few words (the message).
    tree_mode: str
    #: The same, said fully (the help).
    tree_detail: str
    #: The message Tree Mode raises there, when it raises one ("" when it does not raise):
    #: a pattern that also matches it is not a graph-only expectation.
    tree_text: str = ""
    #: A program that raises it in graph mode (run in both modes by the table's test).
    example: str = ""


GRAPH_ONLY_ERRORS: tuple[GraphOnlyError, ...] = (
    GraphOnlyError(
        text="Graph nodes are not allowed as prefixes when graph=True.",
        apis=TRANSFORMS,
        needs="graph",
        tree_mode="raises a TypeError",
        tree_detail="raises a `TypeError` from JAX for the prefix instead",
        example="nnx.vmap(lambda x: x, in_axes=nnx.Dict(a=nnx.Param(1)))",
    ),
    GraphOnlyError(
        text="nnx.make_jaxpr does not support graph_updates=True.",
        apis=frozenset({"make_jaxpr"}),
        needs="graph_updates",
        tree_mode="raises nothing",
        tree_detail="raises nothing: Tree Mode has no graph updates to refuse",
        example="nnx.make_jaxpr(lambda m: m['a'][...])(nnx.Dict(a=nnx.Param(jnp.array(1))))",
    ),
    GraphOnlyError(
        text="Carry references must be the same between iterations. ",
        apis=frozenset({"scan"}),
        needs="graph_updates",
        tree_mode="raises another error",
        tree_detail="raises `ValueError: scan Variable identity must be preserved across iterations.` instead",
        tree_text="scan Variable identity must be preserved across iterations.",
        example=(
            "class Foo(nnx.Module):\n"
            "    def __init__(self, n):\n"
            "        self.n = n\n"
            "@nnx.scan(in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))\n"
            "def loop(foo, x):\n"
            "    return Foo(nnx.BatchStat(foo.n[...] + 1)), x\n"
            "loop(Foo(nnx.BatchStat(0)), jnp.arange(3))"
        ),
    ),
    GraphOnlyError(
        text="Cannot extract graph node from different trace level, got ",
        apis=TRANSFORMS,
        needs="graph_updates",
        tree_mode="raises another error",
        tree_detail="raises `ValueError: Cannot return captured Variable ...` instead",
        tree_text="Cannot return captured Variable of type ",
        example=(
            "m = nnx.Dict(a=nnx.Variable(jnp.arange(4)))\n"
            "@nnx.vmap(in_axes=0, out_axes=0)\n"
            "def f(x):\n"
            "    return m\n"
            "f(jnp.zeros((4,)))"
        ),
    ),
)
