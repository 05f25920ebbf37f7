"""NNX307 ``scan-broadcast-write``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from astroid import nodes

from checkers.graph_updates.reproduction import RESERVED_NAMES
from nnx_lint.api import (
    Facts,
    Invalid,
    Reproduction,
    Rule,
    Valid,
    body_nodes,
    differs,
    explicit_tree,
    flax_table,
    lookup,
    pin_sites_in,
    programs,
    root_name,
    transformed_code,
)


@dataclass(frozen=True, kw_only=True)
class ScanBroadcastWriteFacts(Facts):
    """What ``NNX307`` reports (the diagnostic's ``facts``, in this order)."""

    target_text: str
    parameter: str
    transform: str
    scan_line: int
    confidence: str
    pin: list


class ScanBroadcastWrite(Rule):
    """Variable writes on a broadcast (`in_axes=None`) argument of `nnx.scan`.

    What it does:
        Flags Variable value writes (`b.n[...] += 1`, `b.w.value = ...`) inside an
        `nnx.scan` body on a parameter whose `in_axes` entry is `None` (broadcast).

    Why is this bad?:
        The meaning flips without an error: graph-mode `scan` dropped updates to broadcast
        arguments (the counter stays 0), Tree Mode threads them through the loop and writes
        them back (the counter ends at 3). Code tuned to one behaviour silently gets the
        other. Make the intent explicit: pass the state as part of the carry (`nnx.Carry`)
        if it should accumulate, or compute without writing to it.

    References:
        - Patterns in the catalogue: [C10](../catalogue.md#c10)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX307"
    visits_nnx_calls_only = True
    facts_type = ScanBroadcastWriteFacts
    fixes = ("pin",)
    symbol = "scan-broadcast-write"
    kind = "silent"
    catalogue = ("C10",)
    message = (
        "`{target_text}` is written inside `nnx.scan` but `{parameter}` is broadcast (`in_axes` None): "
        "Tree Mode silently keeps the update"
    )
    help = (
        "Graph mode dropped this update; Tree Mode propagates it after every iteration. Pass it in the "
        "carry (`nnx.Carry`) if it should accumulate, or avoid writing to it"
    )
    VALID = [
        Valid(
            "carry-update",
            """
            import jax.numpy as jnp
            from flax import nnx

            def run(c, cnt):
                def step(c, x):
                    c.n[...] += x
                    return c, None
                nnx.scan(step, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))(c, jnp.arange(3.0))
                def body(carry, cnt, x):
                    return carry + x * cnt.n[...], None
                nnx.scan(body, in_axes=(nnx.Carry, None, 0), out_axes=(nnx.Carry, 0))(0.0, cnt, jnp.arange(3.0))
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "broadcast-counter",
            """
            import jax.numpy as jnp
            from flax import nnx

            def run(cnt):
                def body(carry, cnt, x):
                    cnt.n[...] += 1.0  # NNX307
                    return carry + x, None
                nnx.scan(body, in_axes=(nnx.Carry, None, 0), out_axes=(nnx.Carry, 0))(0.0, cnt, jnp.arange(3.0))
            """,
            tree_mode=differs("cnt.n ends at 3.0 (graph mode: 0.0)"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """A counter Variable on a broadcast (``in_axes=None``) scan argument, written in the
        body of a three-step scan (by ``.value =`` when the finding writes ``.value``); the
        observation is the counter afterwards. The control only reads it.

        Not traced: the observation is the counter's number, which is abstract under a trace."""
        target = facts.target_text or ""
        attr = target.split(".")[1].split("[")[0] if target.count(".") >= 1 else "n"
        attr = attr if programs.is_identifier(attr) and attr not in RESERVED_NAMES else "n"
        write = ("cnt.ATTR.value = cnt.ATTR[...] + 1.0" if target.endswith((".value", ".raw_value"))
                 else "cnt.ATTR[...] += 1.0")
        model = programs.filled("""
            class Counter(nnx.Module):
                def __init__(self):
                    self.ATTR = nnx.BatchStat(jnp.array(0.0))


            cnt = Counter()
        """, {"ATTR": attr})
        # the body writes on the broadcast argument; the control's body only reads it
        main = model + programs.filled("""
            def body(carry, cnt, x):
                WRITE
                return carry + x, None

            nnx.scan(body, in_axes=(nnx.Carry, None, 0), out_axes=(nnx.Carry, 0))(0.0, cnt, jnp.arange(3.0))
            return float(cnt.ATTR[...])
        """, {"ATTR": attr}, statements={"WRITE": programs.filled(write, {"ATTR": attr})})
        control = model + programs.filled("""
            def body(carry, cnt, x):
                return carry + x * cnt.ATTR[...], None

            nnx.scan(body, in_axes=(nnx.Carry, None, 0), out_axes=(nnx.Carry, 0))(0.0, cnt, jnp.arange(3.0))
            return float(cnt.ATTR[...])
        """, {"ATTR": attr})
        return Reproduction(main, expect_tree=3.0, expect_graph=0.0, control=control, traced=False)

    def visit_call(self, node: nodes.Call) -> None:
        service = transformed_code(self.context)
        call = self.context.nnx_call(node)
        if call is None or call.name != "scan" or "in_axes" not in call.keywords:
            return
        if self.context.keeps_graph_mode(call) or explicit_tree(call):
            return
        # (nnx.Carry, None, 0) -> (NOT_LITERAL, None, 0): the None axes are the broadcast ones
        in_axes = service.transforms.decode(call).in_axes
        functions = [e.function for e in service.transforms.entries if e.call is not None and e.call.node is node]
        for function in dict.fromkeys(functions):
            parameters = [a.name for a in (function.args.posonlyargs or []) + (function.args.args or [])]
            if in_axes is None:
                broadcast = set(parameters)
            elif isinstance(in_axes, tuple):
                broadcast = {parameters[i] for i, axis in enumerate(in_axes) if i < len(parameters) and axis is None}
            else:
                continue
            for target, parameter in _variable_writes(function, broadcast):
                self.report(target, target_text=_target_of(target).as_string(), parameter=parameter,
                            transform="scan", scan_line=node.lineno, confidence="transform",
                            pin=pin_sites_in(self.context, call))


def _variable_writes(function, names: set[str]) -> Iterator[tuple[nodes.NodeNG, str]]:
    for node in body_nodes(function):
        if isinstance(node, (nodes.Assign, nodes.AugAssign)):
            targets = node.targets if isinstance(node, nodes.Assign) else [node.target]
            for target in targets:
                if isinstance(target, nodes.Subscript) or (
                        isinstance(target, nodes.AssignAttr)
                        and target.attrname in flax_table.VARIABLE_VALUE_ATTRIBUTES):
                    root = root_name(target)
                    if root is not None and root.name in names and _is_parameter_of(root, function):
                        yield node, root.name
                        break


def _target_of(statement):
    return statement.target if isinstance(statement, nodes.AugAssign) else statement.targets[0]


def _is_parameter_of(name: nodes.Name, function) -> bool:
    scope, assignments = lookup(name)
    return scope is function and any(isinstance(a.parent, nodes.Arguments) for a in assignments)
