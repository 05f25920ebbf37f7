"""The file's ``nnx.custom_vjp`` registrations and what their backward functions do with the
cotangent: the analysis the NNX5xx rules ask (``nnx_lint.api.custom_vjps``).

A registration is ``f.defvjp(fwd, bwd)`` for a function ``f`` the one transform resolver decodes as
an ``nnx.custom_vjp``; the helpers read the old protocol's destructuring of the cotangent, a
State-valued tangent, and the checks that make a backward function work under both protocols."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from astroid import nodes

from nnx_lint.analysis.flow import assigned_or_unpacked, lookup
from nnx_lint.analysis.pin_sites import pin_sites_in
from nnx_lint.analysis.transforms import transform_resolver
from nnx_lint.analysis.values import value_model
from nnx_lint.base.node_index import nodes_of_class
from nnx_lint.flax_table import table as flax_table

__all__ = [
    "custom_vjp_analysis", "Registration", "cotangent_parameter", "old_destructures", "old_parts",
    "guarded_by_protocol_check", "own_body_nodes",
]


_MODE_PROBES = frozenset(flax_table.MODE_SETTERS)


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
    #: The ``nnx.custom_vjp`` call or decorator that makes ``primal`` a custom_vjp function.
    transform: nodes.NodeNG | None = None

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

    def related(self) -> list[tuple[nodes.NodeNG, str]]:
        """Where the finding comes from, beside it: the ``nnx.custom_vjp`` that applies (when
        it is not the primal's own decorator) and the ``defvjp`` that registers the bwd. A
        test that makes the custom_vjp in one case only (``if use_custom_vjp:``) is joined
        with that case's failure alone."""
        found = []
        if self.transform is not None and self.transform.parent is not self.primal.decorators:
            found.append((self.transform, f"`{self.primal.name}` is made an `nnx.custom_vjp` here"))
        found.append((self.defvjp, "its fwd and bwd are registered here"))
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
        self.transforms = transform_resolver(context)
        self.values = value_model(context)
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
        return Registration(primal, fwd, bwd, call, nondiff, pin_sites_in(self.context, (transform_node, "custom_vjp")),
                            transform_node)

    def _primal(self, name: nodes.Name) -> tuple[nodes.FunctionDef, bool, frozenset[int] | None, nodes.NodeNG] | None:
        """``(primal, unaffected by the flip, nondiff_argnums, transform node)`` when ``name``
        is an ``nnx.custom_vjp`` function, as the one transform resolver decodes it."""
        found = self.transforms.decoded(name)
        if found is not None and found.name != "custom_vjp" and isinstance(found.applied_to, nodes.FunctionDef):
            # `@nnx.custom_vjp` over `@nnx.remat`: the custom_vjp is not the innermost transform
            found = next((d for d in self.transforms.decorators(found.applied_to) if d.name == "custom_vjp"), None)
        if found is None or found.name != "custom_vjp":
            return None
        function = found.applied_to
        primal = function if isinstance(function, nodes.FunctionDef) else _function(function)
        if primal is None:
            return None
        return primal, found.keeps_graph, found.nondiff_argnums, found.node

    # -- helpers for rules --------------------------------------------------------------------
    def state_tangent(self, expression: nodes.NodeNG, bwd: nodes.FunctionDef, old_parts: set[str], depth: int = 0) -> str | None:
        """How ``expression`` (a bwd tangent) is an ``nnx.State``, or None."""
        if depth > 4:
            return None
        if isinstance(expression, nodes.Call):
            name = self.context.qualified_name(expression.func)
            if name in flax_table.STATE_PRODUCERS:
                return name.replace(flax_table.NNX_PREFIX, "nnx.") + "(...)"
            if name == flax_table.NNX_CLONE and expression.args:
                inner = self.state_tangent(expression.args[0], bwd, old_parts, depth + 1)
                return f"nnx.clone({inner})" if inner else None
            if name in flax_table.TREE_MAPS and len(expression.args) >= 2:
                inner = self.state_tangent(expression.args[1], bwd, old_parts, depth + 1)
                return f"{flax_table.TREE_MAP}(..., {inner})" if inner else None
            return None
        if isinstance(expression, nodes.Subscript):
            if isinstance(expression.value, nodes.Call) and self.context.qualified_name(expression.value.func) in flax_table.SPLITS:
                return "nnx.split(...) State"
            return None
        if isinstance(expression, nodes.Name):
            if expression.name in old_parts:
                return f"{expression.name} (the old protocol's State cotangent)"
            for value, kind in assigned_or_unpacked(expression):
                if kind == "split" and isinstance(value, nodes.Call) and self.context.qualified_name(value.func) in flax_table.SPLITS:
                    return "nnx.split(...) State"
                if kind == "value":
                    found = self.state_tangent(value, bwd, old_parts, depth + 1)
                    if found:
                        return found
            if _string_indexed(expression.name, bwd):
                return f"{expression.name}['...'] (indexed like a State)"
        return None

    def is_module_parameter(self, registration: Registration, parameter: nodes.AssignName) -> str | None:
        """Evidence that a primal parameter is a Module
        (:meth:`nnx_lint.analysis.values.ValueModel.module_evidence`)."""
        return self.values.module_evidence(registration.primal, parameter)


def custom_vjp_analysis(context) -> _Analysis:
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
    _scope, assignments = lookup(node)
    functions = [a for a in assignments if isinstance(a, nodes.FunctionDef)]
    return functions[0] if len(functions) == 1 and len(assignments) == 1 else None


def own_body_nodes(function: nodes.FunctionDef, kinds) -> Iterator[nodes.NodeNG]:
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
    for call in nodes_of_class(test, nodes.Call):
        if isinstance(call.func, nodes.Name) and call.func.name == "isinstance" and call.args:
            if isinstance(call.args[0], nodes.Name) and call.args[0].name == name:
                return True
    return False


def guarded_by_protocol_check(node: nodes.NodeNG, cotangent: str, function: nodes.FunctionDef) -> bool:
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
            for attribute in nodes_of_class(current.test, nodes.Attribute):
                if attribute.attrname == "current_value" and context.qualified_name(attribute.expr) in _MODE_PROBES:
                    return True
        current = current.parent
    return False


def _string_indexed(name: str, function: nodes.FunctionDef) -> bool:
    """``name['x']`` in ``function`` outside a branch on ``isinstance(g, tuple)``."""
    cotangent = cotangent_parameter(function)
    for subscript in own_body_nodes(function, nodes.Subscript):
        if (
            isinstance(subscript.value, nodes.Name)
            and subscript.value.name == name
            and isinstance(subscript.slice, nodes.Const)
            and isinstance(subscript.slice.value, str)
            and not (cotangent is not None and guarded_by_protocol_check(subscript, cotangent.name, function))
        ):
            return True
    return False


def _returns_tuple(function: nodes.FunctionDef) -> bool | None:
    """Whether the primal returns a tuple: True/False when every return says so, else None."""
    verdicts = set()
    for statement in own_body_nodes(function, nodes.Return):
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


def cotangent_parameter(bwd: nodes.FunctionDef) -> nodes.AssignName | None:
    """The last positional parameter of a backward function of two or more: where the cotangent arrives."""
    if bwd.args.vararg or not bwd.args.args or len(bwd.args.args) < 2:
        return None
    return bwd.args.args[-1]


def _is_cotangent(node: nodes.NodeNG, parameter: nodes.AssignName) -> bool:
    if not isinstance(node, nodes.Name) or node.name != parameter.name:
        return False
    _scope, assignments = lookup(node)
    return parameter in assignments


def old_destructures(bwd: nodes.FunctionDef, primal: nodes.FunctionDef) -> Iterator[tuple[nodes.Assign, str, str]]:
    """``(assign, shape, confidence)`` for old-protocol destructurings of the cotangent."""
    parameter = cotangent_parameter(bwd)
    if parameter is None:
        return
    for assign in own_body_nodes(bwd, nodes.Assign):
        if not _is_cotangent(assign.value, parameter) or len(assign.targets) != 1:
            continue
        target = assign.targets[0]
        if not isinstance(target, (nodes.Tuple, nodes.List)) or len(target.elts) != 2:
            continue
        if guarded_by_protocol_check(assign, parameter.name, bwd):
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
        for name in nodes_of_class(first, nodes.AssignName):
            names.add(name.name)
    changed = True
    while changed:  # (m_updates_g,) = input_updates_g
        changed = False
        for assign in own_body_nodes(bwd, nodes.Assign):
            if isinstance(assign.value, nodes.Name) and assign.value.name in names:
                for name in nodes_of_class(assign.targets[0], nodes.AssignName):
                    if name.name not in names:
                        names.add(name.name)
                        changed = True
    return names
