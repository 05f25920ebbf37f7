"""NNX308 ``loop-body-returns-new-module``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from astroid import nodes

from nnx_lint.api import (
    Facts,
    Invalid,
    NNXCall,
    Reproduction,
    Rule,
    TransformedCode,
    Valid,
    body_nodes,
    flax_table,
    pin_sites_in,
    raises,
    transformed_code,
    value_model,
)
from checkers.graph_updates.reproduction import dedented


@dataclass(frozen=True, kw_only=True)
class LoopBodyReturnsNewModuleFacts(Facts):
    """What ``NNX308`` reports (the diagnostic's ``facts``, in this order)."""

    transform: str
    built: str
    loop_line: int
    confidence: str
    pin: list


class LoopBodyReturnsNewModule(Rule):
    """A `fori_loop` body that returns a new Module as the carry.

    What it does:
        Flags a `return` in the body function of `nnx.fori_loop` whose value is a newly
        built object: a Module construction (`return Model(...)`), `nnx.clone(...)` or
        `nnx.merge(...)`, directly or through a local name. `nnx.while_loop` bodies stay
        silent: graph mode already rejects a new carry there (`requires body function's
        input and output to have the same reference`), so nothing changes.

    Why is this bad?:
        Graph mode accepted any carry of the same structure. Tree Mode loops check that the
        carried Variables keep their identity across iterations and raise `ValueError:
        fori_loop Variable identity must be preserved across iterations.` Update the input
        module in place (`m.w[...] = ...`) and return it.

    References:
        - Patterns in the catalogue: [C9](../catalogue.md#c9)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX308"
    visits_nnx_calls_only = True
    facts_type = LoopBodyReturnsNewModuleFacts
    fixes = ("pin",)
    symbol = "loop-body-returns-new-module"
    kind = "raises"
    catalogue = ("C9",)
    message = "The `nnx.{transform}` body returns a new object ({built}) as the carry: Tree Mode raises ValueError"
    help = (
        "Tree Mode requires the carried Variables to keep their identity. Update the input module in "
        "place and return it"
    )
    VALID = [
        Valid(
            "in-place-body",
            """
            import jax.numpy as jnp
            from flax import nnx

            class M(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.zeros(()))

            def run():
                def body(i, m):
                    m.w[...] += 1
                    return m
                m2 = nnx.fori_loop(0, 3, body, M())
                kept = nnx.compat.fori_loop(0, 3, lambda i, m: nnx.clone(m), M())
                return m2, kept
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "body-returns-new-module",
            """
            import jax.numpy as jnp
            from flax import nnx

            class M(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.zeros(()))

            def body_new(i, m):
                new = M()
                new.w[...] = m.w[...] + 1
                return new  # NNX308

            def run():
                a = nnx.fori_loop(0, 3, body_new, M())
                b = nnx.while_loop(lambda m: m.w[...] < 3, lambda m: nnx.clone(m), M())  # broken in both modes
                return a, b
            """,
            tree_mode=raises("ValueError", "Variable identity must be preserved across iterations"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """A ``fori_loop`` body returning the flagged kind of new object (a Module
        construction, ``nnx.clone``, ``nnx.merge`` of new state); Tree Mode rejects it. The
        control updates the input in place and returns it."""
        built = facts.built or ""
        if "clone" in built:
            body = "def body(i, m):\n    return nnx.clone(m)\n"
        elif "merge" in built:
            body = ("def body(i, m):\n    graphdef, state = nnx.split(m)\n"
                    "    return nnx.merge(graphdef, jax.tree.map(lambda a: a + 1, state))\n")
        else:
            body = "def body(i, m):\n    new = M()\n    new.w[...] = m.w[...] + 1\n    return new\n"
        model = dedented("""
            class M(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.zeros(()))


        """)
        main = model + "\n\n" + body + "return list(nnx.fori_loop(0, 3, body, M()).w.shape)\n"
        control = model + "\n\n" + dedented("""
            def body(i, m):
                m.w[...] += 1
                return m

            return list(nnx.fori_loop(0, 3, body, M()).w.shape)
        """)
        return Reproduction(main, expect_error="carry-identity", control=control)

    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        if call is None or call.name not in flax_table.NEW_CARRY_IN_GRAPH_MODE:
            return
        service = transformed_code(self.context)
        for entry in service.transforms.entries:
            if entry.call is None or entry.call.node is not node or not entry.affected:
                continue
            if call.name == "while_loop":
                body = call.args[1] if len(call.args) > 1 else call.keywords.get("body_fun")
                if not any(f is entry.function for f in service.transforms.functions_of(body)):
                    continue  # the cond_fun returns a bool, not a carry
            for anchor, built in self._new_objects(service, entry.function):
                self.report(anchor, transform=call.name, built=built, loop_line=node.lineno,
                            confidence="transform", pin=pin_sites_in(self.context, call))

    def _new_objects(self, service: TransformedCode, function) -> Iterator[tuple[nodes.NodeNG, str]]:
        if isinstance(function, nodes.Lambda):
            returns = [(function.body, function.body)]
        else:
            returns = [(r, r.value) for r in body_nodes(function) if isinstance(r, nodes.Return) and r.value is not None]
        for anchor, value in returns:
            built = self._built(value, 0)
            if built is not None:
                yield anchor, built

    def _is_round_trip(self, merge: NNXCall) -> bool:
        """``nnx.merge(*nnx.split(m))`` or ``g, s = nnx.split(m); nnx.merge(g, s)``: the
        same Variables come back (the state is not replaced), so the carry keeps its identity."""
        if not merge.args:
            return False
        for argument in merge.args:
            if isinstance(argument, nodes.Starred):
                split = self.context.nnx_call(argument.value)
                if split is None or split.name != "split":
                    return False
            elif isinstance(argument, nodes.Name):
                classes = self.context.classes
                if classes.split_making(argument) is None and classes.split_making(argument, graphdef=True) is None:
                    return False  # not unpacked from an `nnx.split` (the class model's answer)
            else:
                return False
        return True

    def _built(self, value: nodes.NodeNG, depth: int) -> str | None:
        if isinstance(value, nodes.Name) and depth < 3:
            from nnx_lint.api import bound_values

            found = {self._built(v, depth + 1) for v in bound_values(value)}
            found.discard(None)
            return found.pop() if len(found) == 1 else None
        if not isinstance(value, nodes.Call):
            return None
        call = self.context.nnx_call(value)
        if call is not None and call.name == "merge" and self._is_round_trip(call):
            return None  # merge(*split(m)) keeps m's Variables: their identity is preserved
        if call is not None and call.name in ("clone", "merge"):
            return f"`nnx.{call.name}(...)`"
        ref = self.context.classes.class_of(value)
        if ref is None or ref.qualified_name in flax_table.VARIABLE_TYPES:
            return None
        if ref.definition is not None and value_model(self.context).is_module_class(ref):
            return f"`{ref.short_name}(...)`"
        return None
