"""NNX711 ``tabulate-traces-python-values``: the rule and its examples."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from nnx_lint.api import (
    object_flow,
    Facts,
    Invalid,
    Rule,
    Valid,
    body_nodes,
    bound_arguments,
    flax_table,
    programs,
    python_value,
    raises,
    static_use,
    transform_resolver,
    value_model,
)

#: How deep calls inside the tabulated method are followed (``self.block`` -> ``self.attn`` -> ...).
_MAX_DEPTH = 3


@dataclass(frozen=True, kw_only=True)
class TabulateTracesPythonValuesFacts(Facts):
    """What ``NNX711`` reports (the diagnostic's ``facts``, in this order)."""

    value: str
    callee: str
    use: str
    error: str
    line: int


class TabulateTracesPythonValues(Rule):
    """`nnx.tabulate` of a call that passes a Python value a method needs concrete: Tree Mode traces it.

    What it does:
        Flags `nnx.tabulate(model, *args, **kwargs)` when the analysis shows that, during the
        tabulated call, a Python value (a literal, a shape such as `(x.shape[0], 10)`, `len(...)`,
        a local bound to one) reaches a method that tabulate wraps, and that method needs it
        concrete: an `if` test, `range(n)`, a shape, a slice bound, a `Dropout`'s
        `deterministic` or a `BatchNorm`'s `use_running_average`, the `shape` of an `Rngs`
        random method (`self.rngs.uniform((n, 10))`); or a string reaches one at all. Followed:
        the arguments of the tabulate call itself, and calls on `self` inside the tabulated
        method (its submodules, `self.rngs`, its public methods) of classes the analysis knows,
        a few levels deep. `nnx.tabulate(model, x)` with an array `x` is silent.

    Why is this bad?:
        `nnx.tabulate` wraps `__call__` and every public method of each object in the graph
        (Modules, `Rngs`, `RngStream`) and runs each call under `jax.jit` on
        `nnx.split((obj, *args), kwargs)`. In graph mode that split keeps Python values in the
        static graphdef. In Tree Mode it is a pytree flatten: Python ints, bools and tuples become
        traced leaves, so the callee raises (`TypeError: Shapes must be 1D sequences of concrete
        values`, `TracerBoolConversionError`, ...), and a string cannot be traced at all.
        flax's `test_tabulate_concrete_shape` fails on exactly this. Keep such values out of
        wrapped calls: draw with `jax.random.uniform(self.rngs(), shape)` (`Rngs.__call__`
        takes no argument), store flags and sizes on the Module, move the work into a private
        `_helper` (tabulate wraps public methods only), or tabulate in graph mode with
        `with nnx.set_graph_mode(True): nnx.tabulate(...)` (all measured with flax 0.12.8).

    References:
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX711"
    visits_nnx_calls_only = True
    facts_type = TabulateTracesPythonValuesFacts
    symbol = "tabulate-traces-python-values"
    kind = "raises"
    no_reproduction_reason = (
        "`nnx.tabulate` is a reporting API that the Tree Mode reference runtime does not implement, so no "
        "program with names both implementations provide contains the call; the break was measured with flax "
        "0.12.8 in both modes on the rule's cases (graph mode tabulates them, Tree Mode raises the named error)"
    )
    no_fix_reason = (
        "`nnx.tabulate` takes no `graph` argument to pin, and the value has to leave the method's arguments "
        "(stored on the Module or closed over), which changes the Module's code"
    )
    message = "`nnx.tabulate` traces `{value}`, {use} in `{callee}` (line {line}): Tree Mode raises {error}"
    #: Audit mode (``--strict``): Python values passed to a tabulated Module whose class is unknown.
    unproven_message = (
        "`nnx.tabulate` traces the Python values it passes to `{value}`, whose class is unknown ({reason}): "
        "if its method needs them concrete, Tree Mode raises"
    )
    help = (
        "Tree Mode's tabulate traces every wrapped call's arguments. Keep the value out of them (`jax.random.*("
        "self.rngs(), shape)`, a Module attribute, a private `_helper`), or tabulate under "
        "`with nnx.set_graph_mode(True):`"
    )
    VALID = [
        Valid(
            "arrays-and-private-helpers",
            """
            import jax
            import jax.numpy as jnp
            from flax import nnx

            class Net(nnx.Module):
                def __init__(self, rngs):
                    self.linear = nnx.Linear(8, 8, rngs=rngs)
                    self.drop = nnx.Dropout(0.5, rngs=rngs)
                    self.rngs = rngs

                def __call__(self, x, scale=1.0):
                    noise = jax.random.uniform(self.rngs(), (x.shape[0], 8))
                    return self._apply(self.drop(self.linear(x)) * scale + noise, 2)

                def _apply(self, x, n):
                    return x.reshape(n, -1)

            def summary(x):
                return nnx.tabulate(Net(nnx.Rngs(0)), jnp.ones((4, 8)), 2.0)
            """,
        ),
        Valid(
            "graph-mode-kept",
            """
            import jax.numpy as jnp
            from flax import nnx

            nnx.set_graph_mode(True)  # tabulate's split keeps Python values static again

            class Net(nnx.Module):
                def __init__(self):
                    self.rngs = nnx.Rngs(0)

                def __call__(self, x):
                    return self.rngs.uniform((x.shape[0], 10))

            def summary():
                return nnx.tabulate(Net(), jnp.zeros((4, 8)))
            """,
        ),
        Valid(
            "graph-mode-for-the-call",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Net(nnx.Module):
                def __init__(self):
                    self.rngs = nnx.Rngs(0)

                def __call__(self, x):
                    return self.rngs.uniform((x.shape[0], 10))

            def summary():
                with nnx.set_graph_mode(True):
                    return nnx.tabulate(Net(), jnp.zeros((4, 8)))
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "rngs-shape",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Net(nnx.Module):
                def __init__(self):
                    self.rngs = nnx.Rngs(0)

                def __call__(self, x):
                    return self.rngs.uniform((x.shape[0], 10))

            def summary():
                return nnx.tabulate(Net(), jnp.zeros((4, 8)))  # NNX711
            """,
            tree_mode=raises("TypeError", "Shapes must be 1D sequences of concrete values"),
        ),
        Invalid(
            "flag-argument",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Net(nnx.Module):
                def __init__(self, rngs):
                    self.linear = nnx.Linear(8, 8, rngs=rngs)

                def __call__(self, x, train=False):
                    if train:
                        return x
                    return self.linear(x)

            def summary():
                return nnx.tabulate(Net(nnx.Rngs(0)), jnp.ones((4, 8)), train=False)  # NNX711
            """,
            tree_mode=raises("TracerBoolConversionError", "Attempted boolean conversion of traced array"),
        ),
    ]

    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        if call is None or call.name != "tabulate" or call.via_partial or not call.args:
            return
        if self.context.mode.call_mode(call).graph is not None:
            return  # tabulate follows the graph flag only (its nnx.split): kept, or Tree Mode chosen
        method_name = "__call__"
        if "method" in call.keywords:
            method = call.keywords["method"]
            if not (isinstance(method, nodes.Const) and isinstance(method.value, str)):
                return
            method_name = method.value
        keywords = [keyword for keyword in node.keywords or [] if keyword.arg not in flax_table.TABULATE_OPTIONS]
        classes = self._classes(call.args[0])
        if not classes:
            self._unknown_class(node, call.args[0], node.args[1:], keywords)
        for classdef in classes:
            method = transform_resolver(self.context).method_of(classdef, method_name)
            if method is None:
                continue
            finding = self._passed(method, f"{classdef.name}.{method_name}", node.args[1:], keywords) \
                or self._inside(method, 0, set())
            if finding is not None:
                self.report(node, **finding)
                return

    def _unknown_class(self, node: nodes.Call, model: nodes.NodeNG, args: list, keywords: list) -> None:
        """Audit mode: Python values passed to a tabulated Module whose class neither the value model
        nor the object-flow model knows; the reason names the link the object-flow model lacks."""
        passed = [argument for argument in [*args, *(keyword.value for keyword in keywords)]
                  if python_value(argument) is not None]
        if not passed:
            return
        text = programs.clipped(model.as_string(), 30)
        found = object_flow.object_model(self.context).objects(model)
        if any(getattr(o.definition, "name", None) and o.kind != "class" for o in found):
            return  # a project class the object-flow model knows: the proven path decides
        reason = object_flow.first_unknown_link(found, text) \
            or f"nothing the analysis follows says which class `{text}` is"
        self.report_unproven(node, value=text, reason=reason,
                             related=[(argument, "a Python value passed here") for argument in passed[:2]])

    def _classes(self, expression: nodes.NodeNG) -> list[nodes.ClassDef]:
        """The project classes ``expression`` may have (flax layers take only arrays)."""
        return [candidate.ref.definition for candidate in value_model(self.context).candidates(expression)
                if candidate.ref.definition is not None]

    @staticmethod
    def _passed(method, callee: str, args: list, keywords: list) -> dict | None:
        """A Python value a wrapped call passes to ``method`` that it needs concrete (a string: always)."""
        for parameter, argument in bound_arguments(method, args, keywords):
            kind = python_value(argument)
            if kind is None:
                continue
            if kind == "str":
                return _finding(argument, callee, "a string (no JAX type)", "TypeError", argument)
            use = static_use(method, parameter)
            if use is not None:
                return _finding(argument, callee, use.use, use.error, use.node)
        return None

    def _inside(self, function, depth: int, seen: set[int]) -> dict | None:
        """A wrapped call inside ``function`` (run by the tabulated call) that breaks, following
        calls on ``self`` into the methods of classes the analysis knows."""
        if depth > _MAX_DEPTH or id(function) in seen:
            return None
        seen.add(id(function))
        for call in body_nodes(function):
            if not isinstance(call, nodes.Call) or not isinstance(call.func, nodes.Attribute):
                continue
            finding = self._rng_shape(call) or self._module_call(call, depth, seen)
            if finding is not None:
                return finding
        return None

    def _rng_shape(self, call: nodes.Call) -> dict | None:
        """``self.rngs.uniform((n, 10))``: the Rngs (or stream) is in the graph, so its random
        methods are wrapped and the shape is traced."""
        name = call.func.attrname
        if name not in flax_table.RNG_SHAPE_POSITIONS or not _self_rooted(call.func.expr) \
                or not value_model(self.context).is_rngs(call.func.expr):
            return None
        position = flax_table.RNG_SHAPE_POSITIONS[name]
        shape = next((keyword.value for keyword in call.keywords or [] if keyword.arg == "shape"),
                     call.args[position] if position < len(call.args) else None)
        if shape is None or python_value(shape) not in ("tuple", "int"):
            return None
        return _finding(shape, f"Rngs.{name}", "a shape", "TypeError", shape)

    def _module_call(self, call: nodes.Call, depth: int, seen: set[int]) -> dict | None:
        """``self.block(x, 3)``, ``self.block.encode(x, 3)``, ``self.drop(x, deterministic=True)``:
        a wrapped method of an object in the graph, given a Python value it needs concrete."""
        func = call.func
        target, method_name = (func, "__call__") if self._known_object(func) else (func.expr, func.attrname)
        if not _self_rooted(target) and not (isinstance(target, nodes.Name) and target.name == "self"):
            return None
        wrapped = method_name == "__call__" or not method_name.startswith("_")
        for candidate in value_model(self.context).candidates(target):
            ref = candidate.ref
            if ref.definition is None:
                flags = flax_table.LAYER_BOOL_FLAGS.get(ref.short_name, ()) if ref.qualified_name.startswith(flax_table.NNX_PREFIX) else ()
                for keyword in call.keywords or []:
                    if method_name == "__call__" and keyword.arg in flags and python_value(keyword.value) == "bool":
                        return _finding(keyword.value, f"{ref.short_name}.__call__", f"the `{keyword.arg}` flag",
                                        "TracerBoolConversionError", keyword.value)
                continue
            method = transform_resolver(self.context).method_of(ref.definition, method_name)
            if method is None:
                continue
            if wrapped and value_model(self.context).may_be_module(ref):
                # tabulate wraps the methods of graph nodes only: a plain helper object keeps its arguments
                finding = self._passed(method, f"{ref.definition.name}.{method_name}", call.args,
                                       call.keywords or [])
                if finding is not None:
                    return finding
            finding = self._inside(method, depth + 1, seen)
            if finding is not None:
                return finding
        return None

    def _known_object(self, expression: nodes.NodeNG) -> bool:
        """Whether ``expression`` (``self.block``) is an object whose class is known: called
        directly, it runs that class's ``__call__``."""
        return isinstance(expression, nodes.Attribute) and bool(value_model(self.context).candidates(expression))


def _self_rooted(expression: nodes.NodeNG) -> bool:
    """``self.<path>``: an object the tabulated Module holds, so its class's methods are wrapped."""
    while isinstance(expression, nodes.Attribute):
        expression = expression.expr
        if isinstance(expression, nodes.Name):
            return expression.name == "self"
    return False


def _finding(value: nodes.NodeNG, callee: str, use: str, error: str, at: nodes.NodeNG) -> dict:
    return {"value": programs.clipped(value.as_string(), 30), "callee": callee, "use": use, "error": error,
            "line": at.lineno or 0}
