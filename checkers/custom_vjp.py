"""NNX5xx: ``nnx.custom_vjp`` semantics — catalogue E1-E4.

In graph mode (``graph=True, graph_updates=True``) the backward function of an
``nnx.custom_vjp`` receives ``g == (input_updates_g, out_g)`` and returns ``nnx.State``
tangents for Module inputs. In Tree Mode the protocol is ``jax.custom_vjp``'s: ``g`` is
the output cotangent and the tangents have the inputs' own types; Variable updates
inside the function are disallowed by the FLIP (flax 0.12.8 drops their cotangents
unless the bwd declares an ``updates_g`` keyword).

A rule finds each registration ``f.defvjp(fwd, bwd)`` whose ``f`` is an
``nnx.custom_vjp`` function of this file (decorator, decorator factory,
``functools.partial``, or ``f = nnx.custom_vjp(fn)``) and whose ``fwd`` / ``bwd`` are
functions of this file. Graph-mode opt-ins (``nnx.compat.custom_vjp``, both flags True,
a graph-mode scope) and code that branches on the protocol (``isinstance(g, tuple)``,
``nnx.set_graph_updates.current_value()``) are silent.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from astroid import nodes

from nnx_lint import nnx_api
from nnx_lint.fixes.sites import pin_sites_in
from nnx_lint.flow import bound_values, lookup
from nnx_lint.program_text import bounded_index
from nnx_lint.rule import Invalid, Reproduction, Rule, Valid, differs, raises
from nnx_lint.variables import unaffected_by_flip

_CUSTOM_VJP = frozenset({"flax.nnx.custom_vjp", "flax.nnx.compat.custom_vjp"})
_STATE_PRODUCERS = frozenset({"flax.nnx.state", "flax.nnx.State", "flax.nnx.variables", "flax.nnx.filter_state"})
_SPLITS = frozenset({"flax.nnx.split", "flax.nnx.split_state"})
_MODE_PROBES = frozenset(nnx_api.MODE_SETTERS)


@dataclass
class Registration:
    """``f.defvjp(fwd, bwd)`` for an ``nnx.custom_vjp`` function ``f``."""

    primal: nodes.FunctionDef
    fwd: nodes.FunctionDef | None
    bwd: nodes.FunctionDef | None
    defvjp: nodes.Call
    #: Positions of ``nondiff_argnums`` (None: not a literal).
    nondiff: frozenset[int] | None = field(default_factory=frozenset)
    #: Where a pin fix keeps graph mode: the ``nnx.custom_vjp`` call or bare decorator (and
    #: the transforms around it), as ``pin`` sites.
    pin: list = field(default_factory=list)

    def diff_parameters(self, function: nodes.FunctionDef | None = None) -> list[tuple[int, nodes.AssignName]] | None:
        """``(tangent index, parameter)`` for the differentiated parameters of ``function``."""
        function = function or self.primal
        if self.nondiff is None or function.args.vararg:
            return None
        parameters = function.args.args or []
        found, index = [], 0
        for position, parameter in enumerate(parameters):
            if position in self.nondiff:
                continue
            found.append((index, parameter))
            index += 1
        return found

    def facts(self) -> dict[str, Any]:
        return {
            "primal": self.primal.name,
            "fwd": self.fwd.name if self.fwd else None,
            "bwd": self.bwd.name if self.bwd else None,
            "primal_args": [a.name for a in self.primal.args.args or []],
            "nondiff_argnums": sorted(self.nondiff) if self.nondiff is not None else None,
            "defvjp_line": self.defvjp.lineno,
            "pin": self.pin,
        }


class _Analysis:
    """Per-file: the ``nnx.custom_vjp`` registrations (shared by the NNX5xx rules)."""

    def __init__(self, context) -> None:
        self.context = context
        self._memo: dict[int, Registration | None] = {}

    def registration(self, call: nodes.Call) -> Registration | None:
        key = id(call)
        if key not in self._memo:
            self._memo[key] = self._registration(call)
        return self._memo[key]

    def _registration(self, call: nodes.Call) -> Registration | None:
        func = call.func
        if not (isinstance(func, nodes.Attribute) and func.attrname == "defvjp" and isinstance(func.expr, nodes.Name)):
            return None
        if _under_mode_probe(call, self.context):
            return None
        found = self._primal(func.expr)
        if found is None:
            return None
        primal, keeps_graph, nondiff, transform_node = found
        if keeps_graph:
            return None
        fwd = _function(call.args[0] if call.args else _keyword(call, "fwd"))
        bwd = _function(call.args[1] if len(call.args) > 1 else _keyword(call, "bwd"))
        return Registration(primal, fwd, bwd, call, nondiff, pin_sites_in(self.context, (transform_node, "custom_vjp")))

    def _primal(self, name: nodes.Name) -> tuple[nodes.FunctionDef, bool, frozenset[int] | None, nodes.NodeNG] | None:
        try:
            _scope, assignments = lookup(name)
        except Exception:
            return None
        for assignment in assignments:
            if isinstance(assignment, nodes.FunctionDef) and assignment.decorators:
                for decorator in assignment.decorators.nodes:
                    found = self._transform(decorator)
                    if found is not None:
                        return (assignment, *found, decorator)
        for value in bound_values(name):
            if isinstance(value, nodes.Call):
                nnx_call = self.context.nnx_call(value)
                if nnx_call is not None and nnx_call.name == "custom_vjp" and nnx_call.args:
                    primal = _function(nnx_call.args[0])
                    if primal is not None:
                        return (primal, unaffected_by_flip(self.context, nnx_call),
                                _nondiff(nnx_call.keywords.get("nondiff_argnums")), value)
        return None

    def _transform(self, decorator: nodes.NodeNG) -> tuple[bool, frozenset[int] | None] | None:
        if isinstance(decorator, nodes.Call):
            nnx_call = self.context.nnx_call(decorator)
            if nnx_call is None or nnx_call.name != "custom_vjp":
                return None
            return unaffected_by_flip(self.context, nnx_call), _nondiff(nnx_call.keywords.get("nondiff_argnums"))
        name = self.context.qualified_name(decorator)
        if name in _CUSTOM_VJP:
            keeps = name == "flax.nnx.compat.custom_vjp" or unaffected_by_flip(self.context, node=decorator)
            return keeps, frozenset()
        return None

    # -- helpers for rules --------------------------------------------------------------------
    def state_tangent(self, expression: nodes.NodeNG, bwd: nodes.FunctionDef, old_parts: set[str], depth: int = 0) -> str | None:
        """How ``expression`` (a bwd tangent) is an ``nnx.State``, or None."""
        if depth > 4:
            return None
        if isinstance(expression, nodes.Call):
            name = self.context.qualified_name(expression.func)
            if name in _STATE_PRODUCERS:
                return name.replace("flax.nnx.", "nnx.") + "(...)"
            if name == "flax.nnx.clone" and expression.args:
                inner = self.state_tangent(expression.args[0], bwd, old_parts, depth + 1)
                return f"nnx.clone({inner})" if inner else None
            if name in ("jax.tree.map", "jax.tree_util.tree_map") and len(expression.args) >= 2:
                inner = self.state_tangent(expression.args[1], bwd, old_parts, depth + 1)
                return f"jax.tree.map(..., {inner})" if inner else None
            return None
        if isinstance(expression, nodes.Subscript):
            if isinstance(expression.value, nodes.Call) and self.context.qualified_name(expression.value.func) in _SPLITS:
                return "nnx.split(...) State"
            return None
        if isinstance(expression, nodes.Name):
            if expression.name in old_parts:
                return f"{expression.name} (the old protocol's State cotangent)"
            for value, kind in _bindings(expression):
                if kind == "split" and isinstance(value, nodes.Call) and self.context.qualified_name(value.func) in _SPLITS:
                    return "nnx.split(...) State"
                if kind == "value":
                    found = self.state_tangent(value, bwd, old_parts, depth + 1)
                    if found:
                        return found
            if _string_indexed(expression.name, bwd):
                return f"{expression.name}['...'] (indexed like a State)"
        return None

    def is_module_parameter(self, registration: Registration, parameter: nodes.AssignName) -> str | None:
        """Evidence that a primal parameter is a Module (not a State/array), or None."""
        primal = registration.primal
        index = (primal.args.args or []).index(parameter)
        annotation = primal.args.annotations[index] if index < len(primal.args.annotations) else None
        if annotation is not None:
            name = self.context.classes._resolver_for(annotation).qualified_name(annotation)
            ref = self.context.classes.resolve(name)
            if ref is None or ref.qualified_name in ("flax.nnx.State", "flax.nnx.GraphState"):
                return None
            if ref.definition is not None:
                return "annotation" if self.context.classes.info(ref.definition).is_nnx_module else None
            return "annotation" if ref.qualified_name.startswith("flax.nnx.") else None
        for node in primal.nodes_of_class((nodes.Attribute, nodes.Call)):
            target = node.expr if isinstance(node, nodes.Attribute) else node.func
            if isinstance(target, nodes.Name) and target.name == parameter.name:
                return "attribute access in the primal" if isinstance(node, nodes.Attribute) else "called in the primal"
        return None


def _analysis(context) -> _Analysis:
    """The file's shared analysis (one per FileContext)."""
    return context.service(_Analysis)


def _keyword(call: nodes.Call, name: str) -> nodes.NodeNG | None:
    for keyword in call.keywords or []:
        if keyword.arg == name:
            return keyword.value
    return None


def _function(node: nodes.NodeNG | None) -> nodes.FunctionDef | None:
    if not isinstance(node, nodes.Name):
        return None
    try:
        _scope, assignments = lookup(node)
    except Exception:
        return None
    functions = [a for a in assignments if isinstance(a, nodes.FunctionDef)]
    return functions[0] if len(functions) == 1 and len(assignments) == 1 else None


def _nondiff(node: nodes.NodeNG | None) -> frozenset[int] | None:
    if node is None:
        return frozenset()
    if isinstance(node, (nodes.Tuple, nodes.List)):
        values = [e.value for e in node.elts if isinstance(e, nodes.Const) and isinstance(e.value, int)]
        return frozenset(values) if len(values) == len(node.elts) else None
    if isinstance(node, nodes.Const) and isinstance(node.value, int):
        return frozenset({node.value})
    return None


def _body_nodes(function: nodes.FunctionDef, kinds) -> Iterator[nodes.NodeNG]:
    """Nodes of ``kinds`` in ``function``'s own body (not in nested functions/lambdas)."""
    stack = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, kinds):
            yield node
        for child in node.get_children():
            if not isinstance(child, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.Lambda, nodes.ClassDef)):
                stack.append(child)


def _mentions_isinstance_tuple(test: nodes.NodeNG, name: str) -> bool:
    for call in test.nodes_of_class(nodes.Call):
        if isinstance(call.func, nodes.Name) and call.func.name == "isinstance" and call.args:
            if isinstance(call.args[0], nodes.Name) and call.args[0].name == name:
                return True
    return False


def _guarded_by_protocol_check(node: nodes.NodeNG, cotangent: str, function: nodes.FunctionDef) -> bool:
    """Inside ``if isinstance(g, tuple):`` / ``a if isinstance(g, tuple) else b`` (either branch)."""
    current = node.parent
    while current is not None and current is not function:
        if isinstance(current, (nodes.If, nodes.IfExp)) and _mentions_isinstance_tuple(current.test, cotangent):
            return True
        current = current.parent
    return False


def _under_mode_probe(node: nodes.NodeNG, context) -> bool:
    """Inside ``if nnx.set_graph_updates.current_value():`` (code written for both protocols)."""
    current = node.parent
    while current is not None:
        if isinstance(current, (nodes.If, nodes.IfExp)):
            for attribute in current.test.nodes_of_class(nodes.Attribute):
                if attribute.attrname == "current_value" and context.qualified_name(attribute.expr) in _MODE_PROBES:
                    return True
        current = current.parent
    return False


def _string_indexed(name: str, function: nodes.FunctionDef) -> bool:
    """``name['x']`` in ``function`` outside a branch on ``isinstance(g, tuple)``."""
    cotangent = _cotangent_parameter(function)
    for subscript in _body_nodes(function, nodes.Subscript):
        if (
            isinstance(subscript.value, nodes.Name)
            and subscript.value.name == name
            and isinstance(subscript.slice, nodes.Const)
            and isinstance(subscript.slice.value, str)
            and not (cotangent is not None and _guarded_by_protocol_check(subscript, cotangent.name, function))
        ):
            return True
    return False


def _bindings(name: nodes.Name) -> list[tuple[nodes.NodeNG, str]]:
    """``(value, "value")`` for ``name = value``; ``(call, "split")`` for ``_, name, ... = nnx.split(...)``."""
    try:
        _scope, assignments = lookup(name)
    except Exception:
        return []
    found = []
    for assignment in assignments:
        if not isinstance(assignment, nodes.AssignName):
            continue
        parent = assignment.parent
        if isinstance(parent, nodes.Assign) and assignment in parent.targets:
            found.append((parent.value, "value"))
        elif isinstance(parent, nodes.Tuple) and isinstance(parent.parent, nodes.Assign):
            if parent.elts.index(assignment) >= 1:
                found.append((parent.parent.value, "split"))
    return found


def _returns_tuple(function: nodes.FunctionDef) -> bool | None:
    """Whether the primal returns a tuple: True/False when every return says so, else None."""
    verdicts = set()
    for statement in _body_nodes(function, nodes.Return):
        value = statement.value
        if isinstance(value, nodes.Tuple):
            verdicts.add(True)
        elif isinstance(value, (nodes.BinOp, nodes.UnaryOp, nodes.Const, nodes.Compare)):
            verdicts.add(False)
        elif isinstance(value, nodes.Call) and isinstance(value.func, nodes.Attribute) and isinstance(value.func.expr, nodes.Name) and value.func.expr.name in ("jnp", "np", "jax"):
            verdicts.add(False)
        else:
            verdicts.add(None)
    return verdicts.pop() if len(verdicts) == 1 else None


def _cotangent_parameter(bwd: nodes.FunctionDef) -> nodes.AssignName | None:
    if bwd.args.vararg or not bwd.args.args or len(bwd.args.args) < 2:
        return None
    return bwd.args.args[-1]


def _is_cotangent(node: nodes.NodeNG, parameter: nodes.AssignName) -> bool:
    if not isinstance(node, nodes.Name) or node.name != parameter.name:
        return False
    try:
        _scope, assignments = lookup(node)
    except Exception:
        return False
    return parameter in assignments


def old_destructures(bwd: nodes.FunctionDef, primal: nodes.FunctionDef) -> Iterator[tuple[nodes.Assign, str, str]]:
    """``(assign, shape, confidence)`` for old-protocol destructurings of the cotangent."""
    parameter = _cotangent_parameter(bwd)
    if parameter is None:
        return
    for assign in _body_nodes(bwd, nodes.Assign):
        if not _is_cotangent(assign.value, parameter) or len(assign.targets) != 1:
            continue
        target = assign.targets[0]
        if not isinstance(target, (nodes.Tuple, nodes.List)) or len(target.elts) != 2:
            continue
        if _guarded_by_protocol_check(assign, parameter.name, bwd):
            continue
        first = target.elts[0]
        shape = f"{target.as_string()} = {parameter.name}"
        returns_tuple = _returns_tuple(primal)
        if isinstance(first, (nodes.Tuple, nodes.List)):
            if returns_tuple is not True:
                yield assign, shape, "static"
        elif returns_tuple is False:
            yield assign, shape, "static"
        elif isinstance(first, nodes.AssignName) and "update" in first.name and returns_tuple is None:
            yield assign, shape, "heuristic"


def old_parts(bwd: nodes.FunctionDef, primal: nodes.FunctionDef) -> set[str]:
    """Names bound to the old protocol's ``input_updates_g`` parts (States)."""
    names: set[str] = set()
    for assign, _shape, _confidence in old_destructures(bwd, primal):
        first = assign.targets[0].elts[0]
        for name in first.nodes_of_class(nodes.AssignName):
            names.add(name.name)
    changed = True
    while changed:  # (m_updates_g,) = input_updates_g
        changed = False
        for assign in _body_nodes(bwd, nodes.Assign):
            if isinstance(assign.value, nodes.Name) and assign.value.name in names:
                for name in assign.targets[0].nodes_of_class(nodes.AssignName):
                    if name.name not in names:
                        names.add(name.name)
                        changed = True
    return names


class CustomVjpOldCotangent(Rule):
    """An `nnx.custom_vjp` backward function destructures its cotangent in the graph-mode form.

    What it does:
        For `f.defvjp(fwd, bwd)` on an `nnx.custom_vjp` function `f`, flags assignments in
        `bwd` that unpack the cotangent `g` as `(input_updates_g, out_g)`:
        `(m_updates_g,), out_g = g`, or `input_updates_g, out_g = g` when `f` returns a single
        value (not a pair). A bwd that checks `isinstance(g, tuple)` first handles both
        protocols and is not flagged.

    Why is this bad?:
        In Tree Mode `nnx.custom_vjp` uses the `jax.custom_vjp` protocol: `g` is only the
        output cotangent. Unpacking it raises (`TypeError: iteration over a 0-d array` for a
        scalar output), or, for an output of a matching shape, silently splits an array.
        Write the bwd like a `jax.custom_vjp` one: `def bwd(res, g)` with `g` the output
        cotangent, returning tangents of the inputs' own types; declare a keyword-only
        `updates_g` parameter if it needs the cotangents of Variable updates.

    References:
        - [Catalogue row E1](../tree-mode.md#custom-vjp) — `repros/r40_custom_vjp_old_bwd.py`,
          `repros/r40_custom_vjp_fix.py`
        - [FLIP 5310, "nnx.custom_vjp"](https://github.com/google/flax/issues/5310)
    """

    code = "NNX501"
    fixes = ("pin", "new-custom-vjp-backward")
    symbol = "custom-vjp-old-cotangent"
    kind = "raises"
    catalogue = ("E1",)
    message = (
        "`{shape}`: in Tree Mode `{cotangent}` of `nnx.custom_vjp` `{primal}` is only the output "
        "cotangent, so this raises"
    )
    help = (
        "Graph mode passed `(input_updates_g, out_g)`; Tree Mode follows the jax.custom_vjp protocol, "
        "so unpacking raises or splits the array. Use `{cotangent}` directly and return tangents of "
        "the inputs' own types"
    )

    def visit_call(self, node: nodes.Call) -> None:
        registration = _analysis(self.context).registration(node)
        if registration is None or registration.bwd is None:
            return
        for assign, shape, confidence in old_destructures(registration.bwd, registration.primal):
            self.report(
                assign,
                shape=shape,
                cotangent=_cotangent_parameter(registration.bwd).name,
                destructuring=assign.targets[0].as_string(),
                confidence=confidence,
                **registration.facts(),
            )

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """r40: an ``nnx.custom_vjp`` with a scalar output whose bwd unpacks ``g`` the graph-mode way.

        Variants by facts: the destructuring (nested ``(m_updates_g, ...), out_g = g`` or
        flat ``input_updates_g, out_g = g``) and the primal's arguments (a Module, then
        float arrays for the others). The graph-mode bwd returns ``State`` tangents, so it
        runs in graph mode. Tree Mode: ``g`` is the 0-d output cotangent, unpacking it
        raises ``TypeError: iteration over a 0-d array`` (``vjp-structure``). Control: the
        FLIP bwd (r40_custom_vjp_fix.py), ``g`` used directly and a Module-typed tangent.
        """
        others = _other_arguments(facts, 0)
        nested = str(facts.get("destructuring") or "").startswith("((")
        if nested:
            unpack = "(m_updates_g, " + "".join("_, " for _ in others) + "), out_g = g"
        else:
            unpack = "input_updates_g, out_g = g"
        body = _vjp_program(others, f"""
            def f_bwd(res, g):
                {unpack}
                cos_x, m = res
                m_g = jax.tree.map(jnp.zeros_like, nnx.state(m))
                m_g['x'][...] = cos_x * out_g
                return ({_tangents(others, 0)},)
        """)
        return Reproduction(body, expect_error="vjp-structure", control=_vjp_program(others, _TREE_BWD.format(tangents=_tangents(others, 0))))

    VALID = [
        Valid(
            "r40-fix",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Foo(nnx.Module):
                def __init__(self):
                    self.x = nnx.Param(jnp.array(1.0)); self.y = nnx.Param(jnp.array(2.0))

            @nnx.custom_vjp(graph=False, graph_updates=False)
            def f(m):
                return jnp.sin(m.x) * m.y

            def f_fwd(m):
                return f(m), (jnp.cos(m.x), jnp.sin(m.x), m)

            def f_bwd(res, g):
                cos_x, sin_x, m = res
                m_g = nnx.clone(m)
                m_g.x[...] = cos_x * g * m.y
                m_g.y[...] = sin_x * g
                return (m_g,)

            f.defvjp(f_fwd, f_bwd)
            """,
        ),
        Valid(
            "pair-output-and-compat",
            """
            import jax.numpy as jnp
            from flax import nnx

            @nnx.custom_vjp
            def pair(m, x):
                return m.w * x, x

            def pair_fwd(m, x):
                return pair(m, x), (m, x)

            def pair_bwd(res, g):
                y_g, x_out_g = g            # the primal returns a pair
                m, x = res
                m_g = nnx.clone(m)
                m_g.w[...] = y_g * x
                return m_g, y_g * m.w + x_out_g

            pair.defvjp(pair_fwd, pair_bwd)

            @nnx.compat.custom_vjp
            def old(m):
                return m.w * 2.0

            def old_bwd(res, g):
                (m_updates_g,), out_g = g
                return (m_updates_g,)

            old.defvjp(lambda m: (old(m), None), old_bwd)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "r40-old-bwd",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Foo(nnx.Module):
                def __init__(self):
                    self.x = nnx.Param(jnp.array(1.0)); self.y = nnx.Param(jnp.array(2.0))

            @nnx.custom_vjp
            def f(m):
                return jnp.sin(m.x) * m.y

            def f_fwd(m):
                return f(m), (jnp.cos(m.x), jnp.sin(m.x), m)

            def f_bwd(res, g):
                (m_updates_g,), out_g = g  # NNX501
                cos_x, sin_x, m = res
                m_g = nnx.clone(m_updates_g)
                m_g['x'][...] = cos_x * out_g * m.y
                m_g['y'][...] = sin_x * out_g
                return (m_g,)

            f.defvjp(f_fwd, f_bwd)
            """,
            tree_mode=raises("TypeError", "iteration over a 0-d array"),
        ),
        Invalid(
            "docstring-form",
            """
            import jax.numpy as jnp
            from flax import nnx

            @nnx.custom_vjp
            def f(m: nnx.Module, x):
                return jnp.sum(m.kernel[...] @ x)

            def f_fwd(m, x):
                return f(m, x), (m, x)

            def f_bwd(res, g):
                input_updates_g, out_g = g  # NNX501
                (m_updates_g, _) = input_updates_g
                return m_updates_g, None

            f.defvjp(f_fwd, f_bwd)
            """,
            tree_mode=raises("TypeError", "iteration over a 0-d array"),
        ),
    ]


class CustomVjpStateTangent(Rule):
    """An `nnx.custom_vjp` backward function returns an `nnx.State` tangent for a Module input.

    What it does:
        For `f.defvjp(fwd, bwd)` on an `nnx.custom_vjp` function `f`, flags tangents returned
        by `bwd`, in the position of a Module argument of `f`, that are `nnx.State`s:
        `nnx.state(...)`, `nnx.clone(nnx.state(...))`, `nnx.State(...)`, an `nnx.split(...)`
        state, a State taken from the old protocol's `input_updates_g`, or a value the bwd
        indexes with strings (`m_g['x']`). The argument is a Module by its annotation or,
        heuristically, because `f` reads its attributes or calls it.

    Why is this bad?:
        Tree Mode follows `jax.custom_vjp`: the tangent must have the input's pytree
        structure, so a `State` for a Module input raises `TypeError: Custom VJP bwd rule
        must produce an output with the same container (pytree) structure as the args
        tuple of the primal function`. Build the tangent as the Module's own type instead:
        `m_g = nnx.clone(m)` (or `jax.tree.map(jnp.zeros_like, m)`), then set
        `m_g.x[...] = ...` and return `(m_g,)`.

    References:
        - [Catalogue row E2](../tree-mode.md#custom-vjp) — `repros/r41_custom_vjp_state_tangent.py`,
          `repros/r40_custom_vjp_fix.py`
        - [FLIP 5310, "nnx.custom_vjp"](https://github.com/google/flax/issues/5310)
    """

    code = "NNX502"
    fixes = ("pin",)
    symbol = "custom-vjp-state-tangent"
    kind = "raises"
    catalogue = ("E2",)
    message = (
        "`{bwd}` returns a State tangent for the Module argument `{argument}` of `nnx.custom_vjp` "
        "`{primal}`: Tree Mode raises"
    )
    help = (
        "Tree Mode (jax.custom_vjp protocol) needs a tangent of the argument's own type, not "
        "`{tangent}`. Build it as `m_g = nnx.clone({argument})`, set `m_g.<attr>[...] = ...`"
    )

    def visit_call(self, node: nodes.Call) -> None:
        analysis = _analysis(self.context)
        registration = analysis.registration(node)
        if registration is None or registration.bwd is None:
            return
        diff = registration.diff_parameters()
        if diff is None:
            return
        bwd = registration.bwd
        cotangent = _cotangent_parameter(bwd)
        old = old_parts(bwd, registration.primal)
        for statement in _body_nodes(bwd, nodes.Return):
            if not isinstance(statement.value, nodes.Tuple):
                continue
            if cotangent is not None and _guarded_by_protocol_check(statement, cotangent.name, bwd):
                continue
            for index, parameter in diff:
                if index >= len(statement.value.elts):
                    continue
                element = statement.value.elts[index]
                tangent = analysis.state_tangent(element, bwd, old)
                if tangent is None:
                    continue
                evidence = analysis.is_module_parameter(registration, parameter)
                if evidence is None:
                    continue
                self.report(
                    element,
                    tangent=tangent,
                    argument=parameter.name,
                    tangent_index=index,
                    module_evidence=evidence,
                    confidence="static" if evidence == "annotation" else "heuristic",
                    **registration.facts(),
                )

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """r41: a bwd that reads ``g`` either way but returns an ``nnx.State`` tangent for a Module.

        Variants by facts: how the tangent is a State (``tangent``: ``nnx.clone(nnx.state(m))``,
        ``nnx.state(m)`` under ``jax.tree.map``, an ``nnx.split`` state; a State taken from
        the old protocol's ``input_updates_g`` or one indexed with strings is built with
        ``nnx.state`` here, since the old unpacking itself already raises in Tree Mode,
        which is NNX501's finding), the Module's position among the primal's arguments
        (``tangent_index``) and the other arguments (float arrays). Tree Mode: ``TypeError:
        Custom VJP bwd rule must produce an output with the same container (pytree)
        structure`` (``vjp-structure``); graph mode accepts the State. Control: the FLIP
        bwd returning a Module-typed tangent (r40_custom_vjp_fix.py).
        """
        index = (bounded_index(facts.get("tangent_index"), "the tangent index")
                 if isinstance(facts.get("tangent_index"), int) else 0)
        others = _other_arguments(facts, index)
        tangent = str(facts.get("tangent") or "")
        if "split" in tangent:
            build = "_, m_g = nnx.split(m)\n                m_g = jax.tree.map(jnp.zeros_like, m_g)"
        elif tangent.startswith("jax.tree.map"):
            build = "m_g = jax.tree.map(jnp.zeros_like, nnx.state(m))"
        else:
            build = "m_g = nnx.clone(nnx.state(m))"
        tangents = _tangents(others, index)
        body = _vjp_program(others, f"""
            def f_bwd(res, g):
                out_g = g[1] if isinstance(g, tuple) else g  # either protocol
                cos_x, m = res
                {build}
                m_g['x'][...] = cos_x * out_g
                return ({tangents},)
        """, index)
        control = _vjp_program(others, _TREE_BWD.format(tangents=tangents), index)
        return Reproduction(body, expect_error="vjp-structure", control=control)

    VALID = [
        Valid(
            "module-typed-tangent",
            """
            import jax
            import jax.numpy as jnp
            from flax import nnx

            class Foo(nnx.Module):
                def __init__(self):
                    self.x = nnx.Param(jnp.array(1.0))

            @nnx.custom_vjp
            def f(m):
                return jnp.sin(m.x[...])

            def f_fwd(m):
                return f(m), (jnp.cos(m.x[...]), m)

            def f_bwd(res, g):
                cos_x, m = res
                m_g = jax.tree.map(jnp.zeros_like, m)
                m_g.x[...] = cos_x * g
                return (m_g,)

            f.defvjp(f_fwd, f_bwd)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "r41-state-tangent",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Foo(nnx.Module):
                def __init__(self):
                    self.x = nnx.Param(jnp.array(1.0)); self.y = nnx.Param(jnp.array(2.0))

            @nnx.custom_vjp
            def f(m):
                return jnp.sin(m.x) * m.y

            def f_fwd(m):
                return f(m), (jnp.cos(m.x), jnp.sin(m.x), m)

            def f_bwd(res, g):
                out_g = g[1] if isinstance(g, tuple) else g
                cos_x, sin_x, m = res
                m_g = nnx.clone(nnx.state(m))
                m_g['x'][...] = cos_x * out_g * m.y
                m_g['y'][...] = sin_x * out_g
                return (m_g,)  # NNX502

            f.defvjp(f_fwd, f_bwd)
            """,
            tree_mode=raises("TypeError", "Custom VJP bwd rule must produce an output with the same container"),
        ),
    ]


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
        - [Catalogue rows E3, E4](../tree-mode.md#custom-vjp) —
          `repros/r42_custom_vjp_variable_update.py`, `repros/r43_custom_vjp_updates_g.py`
        - [FLIP 5310, "nnx.custom_vjp"](https://github.com/google/flax/issues/5310)
    """

    code = "NNX503"
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
        registration = _analysis(self.context).registration(node)
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
                    **registration.facts(),
                )

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
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
        write = str(facts.get("write") or "")
        if ".set_value" in write:
            update = "m.x.set_value(m.x[...] * 2.0)"
        elif ".value" in write:
            update = "m.x.value = m.x.value * 2.0"
        elif "+=" in write:
            update = "m.x[...] += m.x[...]"
        else:
            update = "m.x[...] = m.x[...] * 2.0"
        in_fwd = facts.get("role") == "fwd"
        primal_write = "" if in_fwd else f"\n    {update}  # the flagged update"
        fwd_write = f"\n    {update}  # the flagged update" if in_fwd else ""
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
        observe = """
            def loss(m):{update}
                return f(m) + m.x[...]  # reads the updated value

            try:
                grad = float(nnx.grad(loss)(Foo()).x[...])
            except ValueError as error:  # the FLIP (tree_runtime) rejects the update itself
                if "custom_vjp" not in str(error):
                    raise
                return "gradient omits the update's cotangent"
            if abs(grad - {without:.6f}) < 1e-4:
                return "gradient omits the update's cotangent"
            if abs(grad - {with_:.6f}) < 1e-4:
                return "gradient includes the update's cotangent"
            return grad
        """
        cos2 = -0.4161468365471424
        body = _vjp_program(others, bwd, 0, primal_write, fwd_write).rsplit("grads = ", 1)[0]
        body += "\n" + _dedent(observe.format(update="", without=cos2, with_=cos2 + 1.0))
        control = _vjp_program(others, _TREE_BWD.format(tangents="m_g"), 0).rsplit("grads = ", 1)[0]
        control += "\n" + _dedent(observe.format(update=f"\n                {update}  # moved out of the custom_vjp function",
                                          without=2 * cos2, with_=2 * (cos2 + 1.0)))
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


#: The FLIP's bwd (r40_custom_vjp_fix.py): ``g`` is the output cotangent, Module-typed tangent.
_TREE_BWD = """
    def f_bwd(res, g):
        cos_x, m = res
        m_g = nnx.clone(m)
        m_g.x[...] = cos_x * g
        return ({tangents},)
"""


def _other_arguments(facts: dict, index: int) -> list[str]:
    """Names of the primal's other (array) arguments; the Module is at ``index``."""
    names = [n for n in facts.get("primal_args") or [] if isinstance(n, str) and n.isidentifier()]
    count = max(bounded_index(len(names), "the number of primal arguments"), index + 1)
    return [f"a{i}" for i in range(count) if i != index]


def _tangents(others: list[str], index: int) -> str:
    """``m_g`` at ``index``, zero tangents for the scalar array arguments."""
    return ", ".join("m_g" if i == index else "jnp.zeros(())" for i in range(len(others) + 1))


def _vjp_program(others: list[str], bwd: str, index: int = 0, primal_write: str = "", fwd_write: str = "") -> str:
    """A one-Param Module ``Foo`` through ``nnx.custom_vjp`` ``f`` with ``bwd``, differentiated by ``nnx.grad``."""
    import textwrap

    parameters = list(others)
    parameters.insert(index, "m")
    signature = ", ".join(parameters)
    extra = "".join(f" + {name}" for name in others)
    values = ", ".join("Foo()" if name == "m" else "jnp.ones(())" for name in parameters)
    program = f"""
class Foo(nnx.Module):
    def __init__(self):
        self.x = nnx.Param(jnp.array(1.0))

@nnx.custom_vjp
def f({signature}):{primal_write}
    return jnp.sin(m.x[...]){extra}

def f_fwd({signature}):{fwd_write}
    return f({signature}), (jnp.cos(m.x[...]), m)
"""
    return (textwrap.dedent(program).strip("\n") + "\n\n" + textwrap.dedent(bwd).strip("\n") + "\n\n"
            + f"f.defvjp(f_fwd, f_bwd)\ngrads = nnx.grad(f, argnums={index})({values})\nreturn type(grads).__name__\n")


def _dedent(code: str) -> str:
    import textwrap

    return textwrap.dedent(code).strip("\n") + "\n"


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
    for node in _body_nodes(function, (nodes.Subscript, nodes.AssignAttr, nodes.Call)):
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
