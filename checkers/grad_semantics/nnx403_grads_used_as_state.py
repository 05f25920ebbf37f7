"""NNX403 ``grads-used-as-state``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from astroid import nodes

from checkers.grad_semantics.facts import DifferentiatedArgumentFacts, grad_sites
from checkers.grad_semantics.reproduction import dedented, grad_application_code
from nnx_lint.api import ABSENT, Facts, Invalid, Reproduction, Rule, Valid, flax_table, programs, raises, gradients


@dataclass(frozen=True, kw_only=True)
class GradsUsedAsStateFacts(DifferentiatedArgumentFacts):
    """What ``NNX403`` reports (the diagnostic's ``facts``: the shared
    :class:`DifferentiatedArgumentFacts`, then these)."""

    usage: str
    error: str
    type_name: str
    transform: str
    argnums: list
    has_aux: bool
    argnums_is_tuple: bool
    gradient_via: list
    application_line: int
    usage_kind: str
    method: str = ABSENT
    key: str | int | None = ABSENT
    function: str = ABSENT
    keyword: str = ABSENT


class GradsUsedAsState(Rule):
    """The gradient of a Module is used as an `nnx.State` (indexing, `.items()`, `to_pure_dict`, ...).

    What it does:
        Follows the result of `nnx.grad` / `nnx.value_and_grad` (default or integer
        `argnums`) over a Module argument through assignments, `value_and_grad` / `has_aux`
        unpacking, `jax.tree.map(f, grads)` and into the project functions and methods it is
        passed to (a use in another file is reported at the call that passes the gradient
        there, the use as a related location), and flags uses that need an `nnx.State`:
        `grads['linear']['kernel']`, `grads.items()` / `.keys()` / `.values()` /
        `.flat_state()`, iteration, membership (`'kernel' in grads`, `not in`; unless the
        class defines `__contains__` / `__iter__` / `__getitem__`), `nnx.to_pure_dict(grads)`, `nnx.to_flat_state`,
        `traversals.flatten_mapping(grads)`, `nnx.update(model, grads)`,
        `jax.tree.map(f, <State>, grads)`, `optax.apply_updates(<State>, grads)`, and the
        gradient as an optax extra argument of an optimizer step (`optimizer.update(model,
        grads, grad=grads, value_fn=...)`, for a linesearch such as `optax.lbfgs`). The
        argument is a Module when its class is known (constructor, annotation, the loss
        function's parameter annotation, also a plain `nnx.Module` annotation) or, as a
        heuristic, when the loss function calls it. A State stored on the other branch as an
        empty placeholder (`self.grads = nnx.data({})`) still counts as the State: combining
        the gradient with the empty one raises in both modes. The other tree of a
        `jax.tree.map` may be a State on one path only (a name rebound by `nnx.split` in one
        branch), or the key of a dict holding one, also a `jax.lax.scan` carry started from
        `{"grad": <zeros of the params>}`; the model may be an `nnx.merge(...)` rebuilt in the
        loop, and `grad_fn` may be `jax.value_and_grad` on another path (the NNX path breaks).
        In audit mode (`--strict`), the gradient of an application whose differentiated
        arguments cannot be named (`grad_fn(*inputs)`, `argnums=argnums`) is reported as
        unproven where it is used as a State.

    Why is this bad?:
        Graph mode returned an `nnx.State`; Tree Mode returns the argument's own type. The
        uses above raise: `TypeError: 'Net' object is not subscriptable`, `AttributeError:
        'Net' object has no attribute 'items'` / `'_mapping'`, `TypeError: argument of type
        'Net' is not iterable` (`in`), `ValueError: pytree structure
        error: different types` (also inside a linesearch, which tree-maps `grad` against the
        State of params that flax passes next to it). Accept the Module-typed gradient (`grads.linear.kernel`,
        `optimizer.update(model, grads)`), convert it with `nnx.state(grads, nnx.Param)`, or
        split by `nnx.Param` and differentiate `(params, rest)` to get a `State` again.

    References:
        - [Tree Mode in brief](../tree-mode.md#grad) — patterns [D1](../catalogue.md#d1)
        - [FLIP 5310, "nnx.grad"](https://github.com/google/flax/issues/5310)
    """

    code = "NNX403"
    facts_type = GradsUsedAsStateFacts
    visits_transform_calls_only = True
    fixes = ("pin",)
    symbol = "grads-used-as-state"
    kind = "raises"
    catalogue = ("D1",)
    message = "`{usage}` uses the `nnx.{transform}` result as an `nnx.State`: Tree Mode raises (it is a `{type_name}`)"
    #: When the class is known only from a caller: which call passes it.
    call_site_message = ("`{usage}` uses the `nnx.{transform}` result as an `nnx.State`: Tree Mode raises "
                         "(it is a `{type_name}`, {class_evidence})")
    #: Audit mode (``--strict``): which arguments are differentiated is unknown.
    unproven_message = (
        "`{value}` uses the `nnx.{transform}` result as an `nnx.State`, but which arguments are differentiated "
        "is unknown ({reason}): if one is a Module, Tree Mode raises (the gradient is that Module)"
    )
    help = (
        "In Tree Mode the gradient is a `{type_name}` object ({error}). Use attribute access / "
        "`optimizer.update(model, grads)`, convert with `nnx.state(grads, nnx.Param)`, or split by "
        "`nnx.Param` and differentiate `(params, rest)`"
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._reported: set[int] = set()

    def visit_call(self, node: nodes.Call) -> None:
        analysis = gradients.grad_analysis(self.context)
        self._unproven(node, analysis)
        for application, differentiated, use in analysis.gradient_uses(node):
            found = self._state_use(analysis, use, differentiated)
            if found is None:
                continue
            usage, error, used, where, elsewhere = found
            from_caller = (differentiated.class_name is not None
                           and (differentiated.evidence or "").startswith("call site"))
            self.report(
                where,
                message=self.call_site_message if from_caller else None,
                usage=usage,
                error=error,
                **_usage_facts(self.context, used),
                **analysis.use_facts(application, differentiated, use, node),
                related=elsewhere + grad_sites(application),
            )

    def _state_use(self, analysis, use, differentiated):
        """``(usage, error, used node, where to report, related)`` when the gradient ``use`` is used
        as a State on a line not reported yet (one finding per line, also when several applications
        reach it); None otherwise."""
        found = analysis.state_usage(use.name, differentiated)
        if found is None:
            return None
        usage, error, used = found
        where, elsewhere = analysis.reported_at(use, used, f"`{usage}` uses it as an `nnx.State` here")
        if where.lineno in self._reported:
            return None
        self._reported.add(where.lineno)
        return usage, error, used, where, elsewhere

    def _unproven(self, node: nodes.Call, analysis) -> None:
        """Audit mode: the gradient of an application whose differentiated arguments are unknown
        (``grad_fn(*inputs)``, ``argnums=argnums``), used as a State."""
        unknown = gradients.unknown_argument(node)
        for application, use, reason in analysis.unresolved_gradient_uses(node):
            found = self._state_use(analysis, use, unknown)
            if found is None:
                continue
            usage, _error, _used, where, elsewhere = found
            self.report_unproven(where, value=usage, reason=reason, transform=application.transform,
                                 related=elsewhere + grad_sites(application))

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction | str:
        """A Module gradient used as a State in the flagged way (the graph-mode habit).

        Variants by facts: ``usage_kind`` (``subscript`` with the flagged string key as the
        submodule's name, ``method`` with the flagged State method, ``iteration``,
        ``membership`` (``'<key>' in grads``, the key as the submodule's name),
        ``function`` with the flagged function, ``tree-map`` against an ``nnx.State`` of the
        Params — what ``optax.apply_updates`` does too), ``transform``, ``has_aux``, the
        differentiated ``position`` and ``argnums`` (tuple or int). The expected error
        category follows the usage (``not-subscriptable``, ``tree-structure``,
        ``other:AttributeError`` for a missing State method, ``other:TypeError`` for
        iteration and membership; tree_runtime's Module and flax's both raise
        ``TypeError: argument of type ... is not iterable`` for ``in``). Control: the same use of ``nnx.state(grads, nnx.Param)``. Uses on which
        the two Tree Mode implementations raise different errors (``nnx.update``,
        ``nnx.to_flat_state``, ``nnx.merge``, ...) have no shared reproduction: the builder
        returns the reason instead.
        """
        kind = facts.usage_kind
        key = programs.identifier_or(facts.key, "linear")
        if kind == "subscript":
            use, expected = programs.subscript("G", programs.literal(key)), "not-subscriptable"
        elif kind == "method":
            method = facts.method
            if method not in _METHOD_CALLS:
                return ("`State.%s()` is not a method both Tree Mode implementations' States provide "
                        "(tree_runtime's State lacks it), so the rewrite cannot be run under both oracles" % method)
            use, expected = _METHOD_CALLS[method], "other:AttributeError"
        elif kind == "iteration":
            use, expected = "[path for path in G]", "other:TypeError"
        elif kind == "membership":
            use, expected = programs.filled("KEY in G", expressions={"KEY": programs.literal(key)}), "other:TypeError"
        elif kind == "function" and facts.function in _FUNCTION_CALLS:
            use, expected = _FUNCTION_CALLS[facts.function]
        elif kind == "optimizer-extra-argument":
            if facts.keyword != "grad":
                return ("`%s`: optax's linesearches read the extra argument `grad`; what reads "
                        "`%s` is not known, so no program can show the failure" % (facts.usage, facts.keyword))
            use, expected = ("nnx.Optimizer(model, optax.lbfgs(0.1), wrt=nnx.Param).update(model, G, grad=G, "
                             "value=jnp.sum(model(x)), value_fn=lambda p: jnp.sum(nnx.merge(nnx.graphdef(model), p)(x)))",
                             "tree-structure")
        elif kind == "tree-map":
            use, expected = "jax.tree.map(lambda p, g: p - 0.1 * g, nnx.state(model, nnx.Param), G)", "tree-structure"
        elif facts.function in _RUNTIME_LACKS:
            return ("`%s`: tree_runtime has no `%s`, so no program "
                    "can run under both Tree Mode implementations" % (facts.usage, facts.function))
        else:
            return ("`%s` raises in both Tree Mode implementations, but with different "
                    "exception types (no shared error category), so no reproduction can be confirmed by both" % facts.usage)
        imports = "import optax\n" if kind == "optimizer-extra-argument" else ""
        program = programs.filled("""
            class Net(nnx.Module):
                def __init__(self, rngs):
                    self.KEY = nnx.Linear(2, 2, rngs=rngs)
                def __call__(self, x):
                    return self.KEY(x)

            model, x = Net(nnx.Rngs(0)), jnp.ones((1, 2))
        """, {"KEY": key})
        program = imports + dedented(program) + "\n" + grad_application_code(facts, "jnp.sum(M(x))")
        # G is the gradient: a placeholder name, replaced on the syntax tree (a key `Gate` stays `Gate`)
        observe = programs.filled("return type(USE).__name__", expressions={"USE": use})
        body = dedented(program) + programs.filled(observe, expressions={"G": "grads"})
        control = dedented(program) + programs.filled(observe, expressions={"G": "nnx.state(grads, nnx.Param)"})
        return Reproduction(body, expect_error=expected, control=control)

    VALID = [
        Valid(
            "r30-fix",
            """
            import jax, jax.numpy as jnp, optax
            from flax import nnx

            class Net(nnx.Module):
                def __init__(self, rngs):
                    self.linear = nnx.Linear(2, 2, rngs=rngs)
                    self.bn = nnx.BatchNorm(2, use_running_average=True, rngs=rngs)
                def __call__(self, x):
                    return self.bn(self.linear(x))

            def run():
                model, x = Net(nnx.Rngs(0)), jnp.ones((4, 2))
                graphdef, params, rest = nnx.split(model, nnx.Param, ...)
                grads = nnx.grad(lambda p, r: jnp.sum(nnx.merge(graphdef, p, r)(x) ** 2))(params, rest)
                k1 = grads['linear']['kernel'].shape
                g_model = nnx.grad(lambda m: jnp.sum(m(x) ** 2))(model)
                k2 = nnx.state(g_model, nnx.Param)['linear']['kernel'].shape
                nnx.update(model, jax.tree.map(lambda p, g: p - 0.1 * g, params, grads))
                nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param).update(model, grads)
                return type(grads).__name__, k1, k2
            """,
        ),
        Valid(
            "module-typed-gradient",
            """
            import jax, jax.numpy as jnp
            from flax import nnx

            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            grads = nnx.grad(lambda m: jnp.sum(m(jnp.ones((1, 2)))))(model)
            kernel_grad = grads.kernel[...]
            scaled = jax.tree.map(lambda g: 0.1 * g, grads)
            new_model = jax.tree.map(lambda p, g: p - g, model, scaled)
            """,
        ),
        Valid(
            "compat-grad-keeps-state",
            """
            import jax.numpy as jnp
            from flax import nnx

            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            grads = nnx.compat.grad(lambda m: jnp.sum(m(jnp.ones((1, 2)))))(model)
            kernel_grad = grads['kernel']
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "subscript-items-pure-dict",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Net(nnx.Module):
                def __init__(self, rngs):
                    self.linear = nnx.Linear(2, 2, rngs=rngs)
                def __call__(self, x):
                    return self.linear(x)

            model = Net(nnx.Rngs(0))
            grads = nnx.grad(lambda m: jnp.sum(m(jnp.ones((1, 2)))))(model)
            kernel = grads['linear']['kernel']  # NNX403
            names = [path for path, _ in grads.items()]  # NNX403
            plain = nnx.to_pure_dict(grads)  # NNX403
            has_linear = 'linear' in grads  # NNX403
            """,
            tree_mode=raises("TypeError", "object is not subscriptable"),
        ),
        Invalid(
            "manual-sgd-against-param-state",
            """
            import jax
            from flax import nnx

            def train_step(model, x, y):
                def loss_fn(model):
                    return ((model(x) - y) ** 2).mean()
                loss, grads = nnx.value_and_grad(loss_fn)(model)
                params = nnx.state(model, nnx.Param)
                nnx.update(model, jax.tree.map(lambda p, g: p - 0.1 * g, params, grads))  # NNX403
                return loss
            """,
            tree_mode=raises("ValueError", "pytree structure error"),
        ),
        Invalid(
            "gradient-as-linesearch-argument",
            """
            import jax.numpy as jnp
            import optax
            from flax import nnx

            x = jnp.ones((1, 2))
            model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
            optimizer = nnx.Optimizer(model, optax.lbfgs(0.1), wrt=nnx.Param)
            loss_fn = lambda m: jnp.sum(m(x) ** 2)
            loss, grads = nnx.value_and_grad(loss_fn)(model)
            graphdef = nnx.graphdef(model)
            optimizer.update(model, grads, grad=grads, value=loss,  # NNX403
                             value_fn=lambda params: loss_fn(nnx.merge(graphdef, params)))
            """,
            tree_mode=raises("ValueError", "pytree structure error"),
        ),
    ]


#: NNX403 reproductions: State methods (called on ``G``) that both implementations' States have.
_METHOD_CALLS = {
    "items": "G.items()", "keys": "G.keys()", "values": "G.values()", "flat_state": "G.flat_state()",
    "get": "G.get('linear')", "filter": "G.filter(nnx.Param)",
}


#: NNX403: State functions that tree_runtime does not provide.
_RUNTIME_LACKS = flax_table.STATE_FUNCTIONS_NOT_IN_RUNTIME


#: NNX403 reproductions: functions on which both implementations raise the same category.
_FUNCTION_CALLS = {
    flax_table.NNX_TO_PURE_DICT: ("nnx.to_pure_dict(G)", "other:AttributeError"),
    "builtins.dict": ("dict(G)", "other:TypeError"),
    "dict": ("dict(G)", "other:TypeError"),
}


def _usage_facts(context, where: nodes.NodeNG) -> dict[str, Any]:
    """What kind of State use ``where`` is (for the reproduction)."""
    if isinstance(where, nodes.Keyword):
        return {"usage_kind": "optimizer-extra-argument", "keyword": where.arg}
    if isinstance(where, nodes.Compare):
        key = where.left.value if isinstance(where.left, nodes.Const) else None
        return {"usage_kind": "membership", "key": key if isinstance(key, str) else None}
    if isinstance(where, nodes.Subscript):
        key = where.slice.value if isinstance(where.slice, nodes.Const) else None
        return {"usage_kind": "subscript", "key": key if isinstance(key, (str, int)) else None}
    if isinstance(where, nodes.Call):
        if isinstance(where.func, nodes.Attribute) and where.func.attrname in flax_table.STATE_METHODS and not context.qualified_name(where.func):
            return {"usage_kind": "method", "method": where.func.attrname}
        name = context.qualified_name(where.func) or ""
        if name in flax_table.TREE_MAPS or name == flax_table.OPTAX_APPLY_UPDATES:
            return {"usage_kind": "tree-map", "function": name}
        if isinstance(where.func, nodes.Attribute) and where.func.attrname in flax_table.STATE_METHODS and name not in gradients.STATE_FUNCTIONS:
            return {"usage_kind": "method", "method": where.func.attrname}
        return {"usage_kind": "function", "function": name}
    return {"usage_kind": "iteration"}
