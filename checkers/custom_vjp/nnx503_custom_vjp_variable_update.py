"""NNX503 ``custom-vjp-variable-update``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from astroid import nodes

from checkers.custom_vjp.reproduction import tree_bwd, vjp_program
from nnx_lint.api import Facts, Invalid, Reproduction, Rule, Valid, differs, programs, custom_vjps


@dataclass(frozen=True, kw_only=True)
class CustomVjpVariableUpdateFacts(Facts):
    """What ``NNX503`` reports (the diagnostic's ``facts``, in this order)."""

    write: str
    argument: str
    role: str
    function: str
    bwd_declares_updates_g: bool
    primal: str
    fwd: str | None
    bwd: str | None
    primal_args: list
    nondiff_argnums: list | None
    defvjp_line: int
    pin: list


class CustomVjpVariableUpdate(Rule):
    """A Variable is updated inside an `nnx.custom_vjp` function (or its fwd).

    What it does:
        For `f.defvjp(fwd, bwd)` on an `nnx.custom_vjp` function `f`, flags Variable value
        writes on a differentiated argument inside `f` or `fwd` — `m.x[...] = ...`,
        `m.x[...] += ...`, `m.x.value = ...`, `m.x.set_value(...)` — when `bwd` does not
        declare an `updates_g` keyword parameter.

    Why is this bad?:
        The FLIP disallows updating differentiable Variables inside `nnx.custom_vjp`; in
        Tree Mode every Variable of a differentiated argument is differentiable. flax 0.12.8
        still runs the code, but the cotangents of the updates reach `bwd` only through an
        `updates_g` keyword argument; without it they are silently dropped, so a loss that
        reads the updated value gets a different gradient (catalogue E4: 0.584 becomes
        -0.416). Move the update out of the custom_vjp function, or declare
        `def bwd(res, g, *, updates_g)` and add the update cotangents to the tangents.

    References:
        - [Tree Mode in brief](../tree-mode.md#custom-vjp) — patterns [E3](../catalogue.md#e3), [E4](../catalogue.md#e4)
        - [FLIP 5310, "nnx.custom_vjp"](https://github.com/google/flax/issues/5310)
    """

    code = "NNX503"
    facts_type = CustomVjpVariableUpdateFacts
    fixes = ("pin",)
    symbol = "custom-vjp-variable-update"
    kind = "silent"
    catalogue = ("E3", "E4")
    message = (
        "`{write}` writes differentiated `{argument}` in `nnx.custom_vjp` {role} `{function}`: "
        "Tree Mode silently drops its cotangent"
    )
    help = (
        "The FLIP disallows updating a Variable of a differentiated argument, and `{bwd}` declares no "
        "`updates_g`. Update outside the custom_vjp function, or declare `def {bwd}(res, g, *, "
        "updates_g)`"
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._reported: set[int] = set()

    def visit_call(self, node: nodes.Call) -> None:
        registration = custom_vjps.custom_vjp_analysis(self.context).registration(node)
        if registration is None or registration.bwd is None or _declares_updates_g(registration.bwd):
            return
        for role, function in (("function", registration.primal), ("fwd", registration.fwd)):
            if function is None:
                continue
            diff = registration.diff_parameters(function)
            if diff is None:
                continue
            names = {parameter.name for _, parameter in diff}
            for write_node, write, argument in _variable_writes(function, names):
                if id(write_node) in self._reported:
                    continue
                self._reported.add(id(write_node))
                self.report(
                    write_node,
                    write=write,
                    argument=argument,
                    role=role,
                    function=function.name,
                    bwd_declares_updates_g=False,
                    related=registration.related(),
                    **registration.facts(),
                )

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """r42/r43: a Variable updated inside the custom_vjp function; the loss reads the update.

        ``f(m)`` doubles ``m.x`` (with the flagged write form: ``[...] =``, ``[...] +=``,
        ``.value =``, ``.set_value``; in ``f`` or in ``fwd`` by ``role``) and returns
        ``sin(m.x)``; the loss is ``f(m) + m.x[...]``, so the updated value has a
        cotangent (1.0) that only the update can carry. The bwd handles both protocols: in
        graph mode ``g`` brings the update's cotangent and the bwd adds it (gradient
        ``cos(2) + 1 = 0.584``).

        The observation is whether the gradient carries the update's cotangent, because that
        is the one outcome both Tree Mode implementations share: flax 0.12.8 (E4) runs and
        silently drops it (gradient ``cos(2) = -0.416``), while the FLIP and
        ``tree_runtime`` (E3) reject the update with a ``ValueError`` that names
        ``custom_vjp`` — the cotangent cannot reach the gradient either. The program catches
        only that rejection (any other error propagates) and reports both as "the gradient
        omits the update's cotangent"; a gradient that matches neither value is returned as
        the number, which confirms nothing. Control: the update moved out of the
        custom_vjp function, into the loss before calling ``f`` (the fix the message
        suggests); its gradient ``2 (cos(2) + 1)`` includes the update's cotangent.
        """
        write = str(facts.write or "")
        if ".set_value" in write:
            update = "m.x.set_value(m.x[...] * 2.0)"
        elif ".value" in write:
            update = "m.x.value = m.x.value * 2.0"
        elif "+=" in write:
            update = "m.x[...] += m.x[...]"
        else:
            update = "m.x[...] = m.x[...] * 2.0"
        in_fwd = facts.role == "fwd"
        primal_write = "" if in_fwd else update  # the flagged update
        fwd_write = update if in_fwd else ""
        others: list[str] = []  # the Module alone: the update is what matters
        bwd = """
            def f_bwd(res, g):
                cos_x, m = res
                if isinstance(g, tuple):  # graph mode: ((m_updates_g,), out_g) brings the update's cotangent
                    (m_upd,), out_g = g
                    m_g = nnx.clone(m_upd)
                    m_g['x'][...] = cos_x * out_g + m_upd['x'][...]
                    return (m_g,)
                m_g = jax.tree.map(jnp.zeros_like, m)  # Tree Mode: g is the output cotangent only
                m_g.x[...] = cos_x * g
                return (m_g,)
        """
        # the loss reads the updated value; the FLIP (tree_runtime) rejects the update itself
        observe = """
            def loss(m):
                UPDATE
                return f(m) + m.x[...]

            try:
                grad = float(nnx.grad(loss)(Foo()).x[...])
            except ValueError as error:
                if "custom_vjp" not in str(error):
                    raise
                return "gradient omits the update's cotangent"
            if abs(grad - WITHOUT) < 1e-4:
                return "gradient omits the update's cotangent"
            if abs(grad - WITH) < 1e-4:
                return "gradient includes the update's cotangent"
            return grad
        """
        cos2 = -0.4161468365471424
        body = vjp_program(others, bwd, 0, primal_write, fwd_write, differentiated=False)
        body += programs.filled(observe, expressions={
            "WITHOUT": programs.literal(round(cos2, 6)), "WITH": programs.literal(round(cos2 + 1.0, 6))},
            statements={"UPDATE": ""})
        control = vjp_program(others, tree_bwd("(m_g,)"), 0, differentiated=False)
        # the control: the update moved out of the custom_vjp function, into the loss
        control += programs.filled(observe, expressions={
            "WITHOUT": programs.literal(round(2 * cos2, 6)), "WITH": programs.literal(round(2 * (cos2 + 1.0), 6))},
            statements={"UPDATE": update})
        return Reproduction(_concrete(body), expect_tree="gradient omits the update's cotangent",
                            expect_graph="gradient includes the update's cotangent", control=_concrete(control))

    VALID = [
        Valid(
            "bwd-declares-updates-g",
            """
            import jax
            import jax.numpy as jnp
            from flax import nnx

            class Foo(nnx.Module):
                def __init__(self):
                    self.x = nnx.Param(jnp.array(1.0))

            @nnx.custom_vjp
            def f(m):
                m.x[...] = m.x[...] * 2.0
                return jnp.sin(m.x[...])

            def f_fwd(m):
                return f(m), (jnp.cos(m.x[...]),)

            def bwd_tree_upd(res, g, *, updates_g):
                (m_upd,) = updates_g
                m_g = jax.tree.map(jnp.zeros_like, Foo())
                m_g.x[...] = res[0] * g + m_upd.x[...]
                return (m_g,)

            f.defvjp(f_fwd, bwd_tree_upd)
            """,
        ),
        Valid(
            "no-updates",
            """
            import jax.numpy as jnp
            from flax import nnx

            @nnx.custom_vjp
            def f(m):
                y = jnp.sin(m.x[...])
                return y

            def f_fwd(m):
                return f(m), (jnp.cos(m.x[...]), m)

            def f_bwd(res, g):
                cos_x, m = res
                m_g = nnx.clone(m)
                m_g.x[...] = cos_x * g
                return (m_g,)

            f.defvjp(f_fwd, f_bwd)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "r42-update-in-primal",
            """
            import jax
            import jax.numpy as jnp
            from flax import nnx

            class Foo(nnx.Module):
                def __init__(self):
                    self.x = nnx.Param(jnp.array(1.0))
                    self.calls = nnx.BatchStat(jnp.array(0.0))

            @nnx.custom_vjp
            def f(m):
                m.x[...] = m.x[...] * 2.0  # NNX503
                m.calls[...] += 1.0  # NNX503
                return jnp.sin(m.x[...])

            def f_fwd(m):
                y = f(m)
                return y, (jnp.cos(m.x[...]),)

            def f_bwd(res, g):
                (cos_x,) = res
                m_g = jax.tree.map(jnp.zeros_like, Foo())
                m_g.x[...] = cos_x * g
                return (m_g,)

            f.defvjp(f_fwd, f_bwd)
            """,
            tree_mode=differs("the update cotangent is dropped: d/dx of sin(2x)+x is -0.416 instead of 0.584 (r43)"),
        ),
    ]


def _concrete(code: str) -> str:
    """``code`` run under ``jax.ensure_compile_time_eval()``: concrete numbers inside the trace."""
    import textwrap

    return "with jax.ensure_compile_time_eval():  # concrete numbers inside the trace\n" + textwrap.indent(code, "    ")


def _declares_updates_g(bwd: nodes.FunctionDef) -> bool:
    arguments = bwd.args
    names = [a.name for a in (arguments.args or []) + (arguments.kwonlyargs or [])]
    return "updates_g" in names or arguments.kwarg is not None


def _root(node: nodes.NodeNG) -> tuple[nodes.Name | None, list[str]]:
    """``m.a.b`` -> (Name m, ["a", "b"])."""
    parts: list[str] = []
    while isinstance(node, nodes.Attribute):
        parts.insert(0, node.attrname)
        node = node.expr
    return (node if isinstance(node, nodes.Name) else None), parts


def _variable_writes(function: nodes.FunctionDef, parameters: set[str]) -> Iterator[tuple[nodes.NodeNG, str, str]]:
    """``(node, text, parameter)`` for Variable value writes on ``parameters`` in ``function``."""
    for node in custom_vjps.own_body_nodes(function, (nodes.Subscript, nodes.AssignAttr, nodes.Call)):
        if isinstance(node, nodes.Subscript) and _is_store(node):
            root, parts = _root(node.value)
            ellipsis = isinstance(node.slice, nodes.Const) and node.slice.value is Ellipsis
            if root is not None and root.name in parameters and (parts or ellipsis):
                statement = node.parent
                operator = statement.op if isinstance(statement, nodes.AugAssign) else "="
                yield statement, f"{node.as_string()} {operator} ...", root.name
        elif isinstance(node, nodes.AssignAttr) and node.attrname == "value":
            root, parts = _root(node.expr)
            if root is not None and root.name in parameters and parts:
                yield node.parent, f"{node.as_string()} = ...", root.name
        elif isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute) and node.func.attrname == "set_value":
            root, parts = _root(node.func.expr)
            if root is not None and root.name in parameters and parts:
                yield node, f"{node.func.as_string()}(...)", root.name


def _is_store(subscript: nodes.Subscript) -> bool:
    """``x[...] = v`` and ``x[...] += v`` (the subscript is the assignment's target)."""
    parent = subscript.parent
    if isinstance(parent, nodes.Assign):
        return subscript in parent.targets
    if isinstance(parent, (nodes.AugAssign, nodes.AnnAssign)):
        return parent.target is subscript
    return False
