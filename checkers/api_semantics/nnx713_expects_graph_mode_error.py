"""NNX713 ``expects-graph-mode-error``: the rule and its examples."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from astroid import nodes

from nnx_lint.api import (
    ABSENT,
    DecodedTransform,
    Facts,
    Invalid,
    Rule,
    Valid,
    bound_values,
    expected_messages,
    fact_index,
    flax_table,
    found_in,
    pattern_strings,
    pin_sites_in,
    plain_text,
    programs,
    raises,
    transform_resolver,
)

#: Patterns shorter than this match too much to say which error a test expects.
_SHORTEST_PATTERN = 12


@dataclass(frozen=True, kw_only=True)
class ExpectsGraphModeErrorFacts(Facts):
    """What ``NNX713`` reports (the diagnostic's ``facts``, in this order)."""

    form: str
    expected: str
    api: str
    line: int
    needs: str
    tree_mode: str
    tree_detail: str
    pin: list = ABSENT


class ExpectsGraphModeError(Rule):
    """A test asserts an error message only graph mode raises: under Tree Mode the assertion fails.

    What it does:
        Flags `self.assertRaisesRegex(E, pattern)` and `pytest.raises(E, match=pattern)` (as a
        `with` block, or `assertRaisesRegex`'s callable form) when `pattern` is the text of an
        error flax 0.12.8 raises only in graph mode, and the NNX call in the block that raises
        it does not keep graph mode. The messages, each run with flax in both modes:
        "Graph nodes are not allowed as prefixes" (a Module or Variable given as `in_axes`,
        `in_shardings`, `argnums`...), "nnx.make_jaxpr does not support graph_updates=True",
        scan's "Carry references must be the same between iterations" and "Cannot extract
        graph node from different trace level" (a transform returning a captured Module). The
        pattern is read when it is plain text (escapes and `.` allowed), a literal, either
        branch of a conditional, or a local name bound to one of these; it is never compiled.
        A pattern that Tree Mode's own message also matches is silent.

    Why is this bad?:
        The test passes today because graph mode raises exactly that message. Once the
        defaults flip, the same call raises another error (a `TypeError` from JAX for a graph
        node prefix, "scan Variable identity must be preserved across iterations" for a new
        carry) or none at all (`nnx.make_jaxpr`), and the assertion fails. flax's own
        `test_prefix_graph_node_error` tests break this way. Keep graph mode for the call
        under test (`graph=True, graph_updates=True`), or assert the error Tree Mode raises.

    References:
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX713"
    facts_type = ExpectsGraphModeErrorFacts
    symbol = "expects-graph-mode-error"
    kind = "raises"
    fixes = ("pin",)
    no_reproduction_reason = (
        "the break is the test's own assertion failing; each message in the table was run with flax 0.12.8 in "
        "both modes (`tests/test_graph_errors.py` runs them again), and the reference runtime does not "
        "implement graph mode's errors"
    )
    message = "`{form}` expects graph mode's \"{expected}\": Tree Mode {tree_mode}"
    help = (
        "Under Tree Mode, `nnx.{api}` (line {line}) {tree_detail}. Keep graph mode for the call under test "
        "(`graph=True, graph_updates=True`, or `nnx.compat.{api}`), or assert the error Tree Mode raises there"
    )
    VALID = [
        Valid(
            "graph-mode-kept",
            """
            import unittest
            from flax import nnx

            class PrefixTest(unittest.TestCase):
                def test_prefix(self):
                    m = nnx.Dict(a=nnx.Param(1))
                    with self.assertRaisesRegex(ValueError, 'Graph nodes are not allowed as prefixes'):
                        nnx.vmap(lambda x: x, in_axes=m, graph=True)
            """,
        ),
        Valid(
            "tree-mode-message",
            """
            import jax.numpy as jnp
            import pytest
            from flax import nnx

            def test_captured():
                m = nnx.Dict(a=nnx.Variable(jnp.arange(4)))

                @nnx.vmap(in_axes=0, out_axes=0)
                def f(x):
                    return m

                with pytest.raises(ValueError, match='Cannot return captured Variable'):
                    f(jnp.zeros((4,)))
            """,
        ),
        Valid(
            "pattern-both-modes-match",
            """
            import unittest
            import jax.numpy as jnp
            from flax import nnx

            class CaptureTest(unittest.TestCase):
                def test_captured(self):
                    m = nnx.Dict(a=nnx.Variable(jnp.arange(4)))

                    @nnx.vmap(in_axes=0, out_axes=0)
                    def f(x):
                        return m

                    with self.assertRaisesRegex(ValueError, 'Cannot'):
                        f(jnp.zeros((4,)))
            """,
        ),
        Valid(
            "no-nnx-call-in-the-block",
            """
            import unittest

            class MessageTest(unittest.TestCase):
                def test_own_error(self):
                    with self.assertRaisesRegex(ValueError, 'Graph nodes are not allowed as prefixes'):
                        raise ValueError('Graph nodes are not allowed as prefixes')
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "graph-node-prefix",
            """
            import unittest
            from flax import nnx

            class PrefixTest(unittest.TestCase):
                def test_prefix(self):
                    m = nnx.Dict(a=nnx.Param(1))
                    with self.assertRaisesRegex(ValueError, 'Graph nodes are not allowed as prefixes'):  # NNX713
                        nnx.vmap(lambda x: x, in_axes=m)
            """,
            tree_mode=raises("TypeError", "vmap in_axes must be an int, None, or a tuple"),
        ),
        Invalid(
            "make-jaxpr-graph-updates",
            """
            import jax.numpy as jnp
            import pytest
            from flax import nnx

            def test_make_jaxpr():
                m = nnx.Dict(a=nnx.Param(jnp.array(1)))
                with pytest.raises(ValueError, match='nnx.make_jaxpr does not support graph_updates=True.'):  # NNX713
                    nnx.make_jaxpr(lambda m: m['a'][...])(m)
            """,
            tree_mode=raises("Failed", "DID NOT RAISE"),
        ),
        Invalid(
            "message-chosen-by-a-flag",
            """
            import unittest
            import jax.numpy as jnp
            from flax import nnx

            class CaptureTest(unittest.TestCase):
                def check(self, updates):
                    m = nnx.Dict(a=nnx.Variable(jnp.arange(4)))

                    @nnx.vmap(in_axes=0, out_axes=0)
                    def f(x):
                        return m

                    if updates:
                        pattern = 'Cannot extract graph node from different trace level'
                    else:
                        pattern = 'Cannot return captured Variable'
                    self.assertRaisesRegex(ValueError, pattern, f, jnp.zeros((4,)))  # NNX713
            """,
            tree_mode=raises("AssertionError", "does not match"),
        ),
    ]

    def visit_with(self, node: nodes.With) -> None:
        self._check(node)

    def visit_call(self, node: nodes.Call) -> None:
        self._check(node)

    def _check(self, node: nodes.NodeNG) -> None:
        for expectation in expected_messages(node, self.context.qualified_name):
            for text, source in pattern_strings(expectation.pattern):
                error = _graph_only_error(text)
                if error is None:
                    continue
                raising = self._raising_transform(expectation.covered, error)
                if raising is None:
                    continue
                related = [(raising.call.node, f"graph mode raises it here (`nnx.{raising.name}`)")]
                if source is not expectation.pattern:
                    related.append((source, "the expected message"))
                self.report(expectation.assertion, form=expectation.form, expected=programs.clipped(text, 40),
                            api=raising.name, line=raising.call.node.lineno or 0, needs=error.needs,
                            tree_mode=error.tree_mode, tree_detail=error.tree_detail,
                            pin=pin_sites_in(self.context, _pin_target(raising)), related=related)
                return

    def _raising_transform(self, covered, error: flax_table.GraphOnlyError) -> DecodedTransform | None:
        """The NNX call among ``covered`` (called directly, or a function it transformed) that
        raises ``error`` and leaves its mode to the defaults; None when one keeps graph mode."""
        found = None
        for decoded in self._transforms_run(covered, error.apis):
            if not _left_to_defaults(decoded, error.needs):
                return None  # the raising call keeps (or already leaves) graph mode
            found = found or decoded
        return found

    def _transforms_run(self, covered, apis) -> Iterator[DecodedTransform]:
        """The transforms among ``apis`` that the covered code calls or creates: an NNX call in
        it, a call of a function one transformed, and the callable form's function itself."""
        resolver = transform_resolver(self.context)
        roots = list(covered)
        if covered and isinstance(covered[0], nodes.Name):
            roots += bound_values(covered[0])  # `f = nnx.make_jaxpr(g)`, then `assertRaisesRegex(E, p, f, x)`
        for root in roots:
            callees = [root] if isinstance(root, (nodes.Name, nodes.Attribute)) else []
            for call in fact_index(self.context).calls_in(root):
                nnx_call = self.context.nnx_call(call)
                if nnx_call is not None and nnx_call.name in apis:
                    yield resolver.decode(nnx_call)
                else:
                    callees.append(call.func)
            for callee in callees:
                decoded = resolver.decoded(callee)
                if decoded is not None and decoded.name in apis:
                    yield decoded


def _graph_only_error(pattern: str) -> flax_table.GraphOnlyError | None:
    """The graph-only error whose message ``pattern`` matches and Tree Mode's does not."""
    characters = plain_text(pattern)
    if characters is None or len(characters) < _SHORTEST_PATTERN:
        return None
    for error in flax_table.GRAPH_ONLY_ERRORS:
        if found_in(characters, error.text) and not (error.tree_text and found_in(characters, error.tree_text)):
            return error
    return None


def _left_to_defaults(decoded: DecodedTransform, needs: str) -> bool:
    """Whether the flag ``needs`` at the call follows the default that flips: not set by the
    call, ``nnx.compat`` or its scope (and, for graph updates, graph mode not turned off)."""
    flags = decoded.flags
    if needs == "graph":
        return flags.graph is None
    return flags.graph_updates is None and flags.graph is not False


def _pin_target(decoded: DecodedTransform):
    """What a graph-mode pin edits for ``decoded``: its call, or the bare decorator."""
    call = decoded.call
    return call if isinstance(call.node, nodes.Call) else (call.node, call.name)
