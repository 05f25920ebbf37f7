"""NNX301 ``graph-update-in-transform``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from astroid import nodes

from checkers.graph_updates.base import TransformReachFacts, TransformedCodeRule
from checkers.graph_updates.reproduction import graph_update_reproduction
from nnx_lint.api import (
    ABSENT,
    CONTAINER_KINDS,
    DATA_CONTAINER,
    Facts,
    Invalid,
    Reach,
    Reproduction,
    TransformedCode,
    Valid,
    body_nodes,
    differs,
    expressions_within,
    fact_index,
    flax_table,
    object_flow,
    value_model,
)


_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "popitem"})


def _literal_shape(value: nodes.NodeNG | None) -> str:
    """``tuple`` / ``list`` / ``dict`` when the assigned value is (or extends) such a literal."""
    for node in (value, getattr(value, "left", None), getattr(value, "right", None)):
        for literal, name in ((nodes.Tuple, "tuple"), (nodes.List, "list"), (nodes.Dict, "dict")):
            if isinstance(node, literal):
                return name
    return "other"


#: flax's Linen-to-NNX wrappers, which create their Variables on the first call.
_BRIDGE_WRAPPERS = flax_table.BRIDGE_WRAPPERS


def _enclosing_class(function: nodes.NodeNG) -> nodes.ClassDef | None:
    """The class whose method (directly or through nested functions) defines ``function``."""
    current = function.parent
    while current is not None and not isinstance(current, nodes.Module):
        if isinstance(current, nodes.ClassDef):
            return current
        current = current.parent
    return None


def _class_is_known(context, owner_expression: nodes.NodeNG, ref=None) -> bool:
    ref = ref or context.classes.class_of_self(owner_expression)
    return ref is not None and ref.definition is not None


@dataclass(frozen=True, kw_only=True)
class GraphUpdateInTransformFacts(TransformReachFacts):
    """What ``NNX301`` reports (the diagnostic's ``facts``: the reach, then these)."""

    change: str
    change_kind: str
    target_text: str
    attribute: str
    object_class: str | None
    instead: str
    where: str
    statement: str = ABSENT
    method: str = ABSENT
    value_shape: str = ABSENT
    op: str = ABSENT


class GraphUpdateInTransform(TransformedCodeRule):
    """Structural or static change to a Module inside transformed code.

    What it does:
        Flags, in code that runs inside a Tree Mode NNX transform (a function decorated by
        or passed to `nnx.jit`, `vmap`, `scan`, `grad`, `cond` branches, loop bodies, ...,
        and the functions and Module methods it calls, also in other project files), changes
        to objects that came from outside the transform: assigning or augmenting a
        non-Variable attribute (`self.count += 1`, `m.training = False`), adding, deleting
        (`del`, `delattr`) or rebinding attributes and submodules, rebinding a Variable
        attribute to a new Variable or a plain array, and `append`/`insert`/`pop`/item
        assignment on data containers (`nnx.List`, `nnx.Dict`, `nnx.data([...])`, an attribute
        declared `nnx.data()`). A plain list or dict is static and kept by reference: a write
        into it survives in both modes, so it stays silent. Writes through Variables (`v[...] = x`,
        `v[...] += 1`, `v.set_value(x)`, and the deprecated `v.value = x`) stay silent,
        and so do changes to modules constructed inside the transform, graph-mode opt-ins
        (`graph=True, graph_updates=True`, `nnx.compat.*`, graph-mode scopes) and
        transforms that already pin Tree Mode (`graph_updates=False`), and a `grad` whose `argnums` holds
        an `nnx.DiffState`, which Tree Mode rejects before the body runs (NNX202). The `confidence` fact
        says whether the code is
        the transformed function itself (`transform`) or reached through calls (`called`).
        A transform of a bound method of a plain object (`nnx.jit(trainer.forward)(model,
        x)`) traces the method with the call's arguments after `self`; `nnx.jit(Model.step)`
        passes the Module as `self`; `nnx.jit(model.step)` raises in both modes (flax rejects
        bound Module methods), so it stays silent.
        A parameter's class also comes from the calls of its function, in this file or in
        other project files (`forward(Counter(...), x)` in `main.py`), when they all agree.
        A call on a parameter whose class is unknown (`m(x)`, `m.step(x)`) is followed into
        the one NNX Module class of the file that defines that method, if exactly one does.
        The first call of an `nnx.bridge.ToNNX` (a wrapped Linen module) creates its
        Variables: it is flagged under a transform applied inside a method of the Module that
        stores the wrapper when that Module's `__init__` does not call `.lazy_init(...)`.

    Why is this bad?:
        Tree Mode transforms run the function on a pytree copy of their inputs and write
        back only Variable values. Every other change is silently dropped: the counter
        stays 0, the flag stays set, the appended layer never appears. Keep dynamic state in
        Variables (`self.count = nnx.Variable(jnp.array(0))`, then `self.count[...] += 1`),
        flip static flags outside the transform, and build new Variables or modules as
        outputs of the transform and attach them outside.

    References:
        - Patterns in the catalogue: [C1](../catalogue.md#c1), [C8](../catalogue.md#c8), [C9](../catalogue.md#c9)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX301"
    facts_type = GraphUpdateInTransformFacts
    fixes = ("pin",)
    symbol = "graph-update-in-transform"
    kind = "silent"
    catalogue = ("C1", "C8", "C9")
    message = "{change} `{target_text}` under {traced_by}{where}: Tree Mode silently drops it"
    help = "Only Variable value updates propagate out of Tree Mode transforms. {instead}"
    VALID = [
        Valid(
            "state-in-variables",
            """
            import jax.numpy as jnp
            from flax import nnx

            class M(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.ones(2))
                    self.count = nnx.Variable(jnp.array(0))
                    self.extra = nnx.data(None)
                    self.training = True

            def run():
                m = M()

                @nnx.jit
                def step(m):
                    m.count[...] += 1
                    m.w[...] = m.w[...] * 2
                    return nnx.Param(m.w[...] * 0)

                new = step(m)
                m.extra = new
                m.training = False
                nnx.jit(lambda m: m.extra[...].sum())(m)
                return int(m.count[...]), m.extra[...], m.training
            """,
        ),
        Valid(
            "cond-and-loop-in-place",
            """
            import jax.numpy as jnp
            from flax import nnx

            class M(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.zeros(()))
                    self.flag = nnx.Variable(jnp.array(False))

            def run():
                m = M()
                def t(m): m.w[...] += 1; m.flag[...] = True
                def f(m): m.w[...] -= 1; m.flag[...] = True
                nnx.cond(True, t, f, m)
                def body(i, m):
                    m.w[...] += 1; return m
                nnx.fori_loop(0, 3, body, M())
            """,
        ),
        Valid(
            "write-under-grad-that-tree-mode-rejects",
            """
            import jax.numpy as jnp
            from flax import nnx

            class MLP(nnx.Module):
                def __init__(self, rngs):
                    self.count = jnp.array(0.0)
                    self.linear = nnx.Linear(1, 1, rngs=rngs)

                def __call__(self, x):
                    self.count += 1
                    return self.linear(x)

            def train_step(model, x):
                def loss_fn(model):
                    return model(x).sum()
                diff_state = nnx.DiffState(0, nnx.Param)
                return nnx.grad(loss_fn, argnums=diff_state)(model)
            """,
        ),
        Valid(
            # maxtext tests/unit/attention_test.py: the method re-computes what __init__ stored, from
            # attributes only __init__ writes, so the dropped write changes nothing
            "restore-of-init-expression",
            """
            import jax
            import jax.numpy as jnp
            from flax import nnx

            class MLA(nnx.Module):
                def __init__(self, qk_nope_head_dim, qk_rope_head_dim, *, rngs):
                    self.qk_nope_head_dim = qk_nope_head_dim
                    self.qk_rope_head_dim = qk_rope_head_dim
                    self.qk_head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
                    self.query = nnx.Linear(8, self.qk_head_dim, rngs=rngs)

                def mla_query_projection(self, inputs_q):
                    self.qk_head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
                    return self.query(inputs_q)

            def run(inputs_q, mla: MLA):
                def loss_fn(inputs_q, mla):
                    return jnp.sum(jax.lax.stop_gradient(mla.mla_query_projection(inputs_q)))

                return nnx.grad(loss_fn, argnums=0)(inputs_q, mla)
            """,
        ),
        Valid(
            "new-module-built-inside-and-opt-ins",
            """
            from flax import nnx

            class Counter(nnx.Module):
                def __init__(self):
                    self.count = 0

                def bump(self):
                    self.count += 1

            @nnx.jit
            def make():
                c = Counter()
                c.bump()
                c.tag = 'fresh'
                return c

            @nnx.jit(graph=True, graph_updates=True)
            def old_style(c):
                c.bump()

            compat_step = nnx.compat.jit(lambda c: c.bump())

            def eager(c: Counter):
                c.bump()
                c.count = 0
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "method-counter-under-jit",
            """
            import jax.numpy as jnp
            from flax import nnx

            class M(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.ones(2))
                    self.count = 0

                def bump(self):
                    self.count += 1  # NNX301

            @nnx.jit
            def step(m: M):
                m.bump()
                return m.w[...].sum()
            """,
            tree_mode=differs("m.count stays 0 after step(m) (graph mode: 1)"),
        ),
        Invalid(
            "lambda-structural-changes",
            """
            import jax.numpy as jnp
            from flax import nnx

            class M(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.ones(2))
                    self.layers = nnx.List([nnx.Linear(2, 2, rngs=nnx.Rngs(0))])
                    self.training = True

            def run(m):
                nnx.jit(lambda m: setattr(m, 'training', False))(m)  # NNX301
                @nnx.jit
                def step(m: M):
                    m.extra = nnx.Param(jnp.zeros(3))  # NNX301
                    m.w = nnx.Param(m.w[...] + 1)  # NNX301
                    m.layers.append(nnx.Linear(2, 2, rngs=nnx.Rngs(1)))  # NNX301
                    del m.training  # NNX301
                step(m)
            """,
            tree_mode=differs("no attribute change made inside nnx.jit is visible on m afterwards"),
        ),
        Invalid(
            "static-tuple-and-cond-branch",
            """
            import jax.numpy as jnp
            from flax import nnx

            class M(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.ones(2))
                    self.tags = ('a',)
                    self.flag = False

            @nnx.jit
            def step(m):
                m.tags = m.tags + ('b',)  # NNX301
                return m.w[...].sum()

            def branch(m):
                m.w[...] += 1
                m.flag = True  # NNX301

            def run(m):
                nnx.cond(True, branch, branch, m)
            """,
            tree_mode=differs("m.tags stays ('a',) and m.flag stays False"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction | str:
        """The flagged kind of change (``change_kind``) on the flagged attribute, made under the
        flagged transform (in a method when the finding was reached through calls); the
        observation is the caller's attribute afterwards. The control makes the same change
        the Tree Mode way (outside the transform, or as a Variable value write). The lazy
        initialisation of an ``nnx.bridge.ToNNX`` has no reproduction: it wraps a Linen module,
        and tree_runtime has no Linen bridge."""
        return graph_update_reproduction(facts)

    def findings(self, service: TransformedCode, reach: Reach) -> Iterator[tuple[nodes.NodeNG, dict]]:
        if reach.entry is not None and reach.entry.transform == "eval_shape":
            return  # graph mode drops changes made under eval_shape too: the flip changes nothing
        if self._rejects_before_tracing(reach):
            return
        external = reach.external
        for node in body_nodes(reach.function):
            if isinstance(node, nodes.AssignAttr) and node.attrname not in flax_table.VARIABLE_VALUE_ATTRIBUTES:
                statement = node.parent
                while isinstance(statement, (nodes.Tuple, nodes.List, nodes.Starred)):
                    statement = statement.parent
                if isinstance(statement, (nodes.Assign, nodes.AugAssign, nodes.AnnAssign)):
                    found = self._assignment(service, node, statement, external)
                    if found and not self._changes_nothing(node, statement):
                        yield statement, found
            elif isinstance(node, nodes.DelAttr) and service.is_external(node.expr, external):
                maybe, cls = self.is_module_like(service, node.expr)
                if maybe:
                    yield node.parent if isinstance(node.parent, nodes.Delete) else node, self._facts(
                        "Deleting attribute", node.expr, node.attrname, cls, "delete",
                        "Set it to `None` outside the transform, or keep the slot and change its value.")
            elif isinstance(node, nodes.Call):
                found = self._call(service, node, external) or self._lazy_bridge_call(service, node, reach)
                if found:
                    yield node, found
            elif isinstance(node, (nodes.Assign, nodes.AugAssign, nodes.Delete)):
                targets = node.targets if isinstance(node, (nodes.Assign, nodes.Delete)) else [node.target]
                for target in targets:
                    if isinstance(target, nodes.Subscript) and isinstance(target.value, nodes.Attribute):
                        owner = target.value
                        if service.is_external(owner.expr, external) and value_model(self.context).stored_kinds(
                                owner.expr, owner.attrname, self.owner_class(service, owner.expr)) == {DATA_CONTAINER}:
                            yield node, {**self._facts(
                                "Item assignment on list/dict attribute", owner.expr, owner.attrname, None,
                                "container-item", "Build the new container outside the transform, or keep the "
                                "entries in Variables and update their values."),
                                "statement": type(node).__name__.lower()}

    def _rejects_before_tracing(self, reach: Reach) -> bool:
        """Tree Mode raises ValueError on an ``nnx.DiffState`` in ``argnums`` (NNX202 reports it) when
        the gradient transform is made, so the body never runs there and no write in it is dropped.
        Measured with flax 0.12.8 on flax's ``07_array_leaves.py`` (``bench/precision/``)."""
        call = reach.entry.call if reach.entry is not None else None
        if call is None or "argnums" not in call.keywords:
            return False
        for expression, _ in expressions_within(call.keywords["argnums"]):
            constructed = self.context.nnx_call(expression)
            if constructed is not None and constructed.name == "DiffState" and not constructed.via_partial:
                return True
        return False

    def _changes_nothing(self, target: nodes.AssignAttr, statement) -> bool:
        """The object-flow model's answer: the write re-stores the literal the attribute always
        holds, or re-computes the expression ``__init__`` stored from attributes only ``__init__``
        writes, or sits in a branch no analysed call of its function takes."""
        value = statement.value if isinstance(statement, (nodes.Assign, nodes.AnnAssign)) else None
        if isinstance(value, nodes.Const) and object_flow.restores_constant(object_flow.object_model(self.context), target.expr,
                                                               target.attrname, value, store=target):
            return True
        if isinstance(value, (nodes.BinOp, nodes.UnaryOp, nodes.Attribute)) and object_flow.restores_invariant(
                object_flow.object_model(self.context), target.expr, target.attrname, value, store=target):
            return True
        # the model is built only for a write that a parameter's flag guards
        return bool(object_flow.parameter_guards(statement)) and object_flow.branch_never_taken(object_flow.object_model(self.context), statement)

    def _assignment(self, service, target: nodes.AssignAttr, statement, external) -> dict | None:
        owner = target.expr
        if not service.is_external(owner, external):
            return None
        if not isinstance(statement, nodes.AugAssign) and value_model(self.context).stored_kind(statement.value) == "variable" \
                and self._popped_in_same_trace(service):
            return None  # a Variable created and popped in the same trace (sow-like): nothing has to propagate
        maybe, cls = self.is_module_like(service, owner)
        if not maybe:
            return None
        owner_ref = self.owner_class(service, owner)
        kinds = value_model(self.context).stored_kinds(owner, target.attrname, owner_ref)
        value = statement.value if not isinstance(statement, nodes.AugAssign) else None
        new_kind = value_model(self.context).stored_kind(value) if value is not None else None
        if isinstance(statement, nodes.AugAssign):
            found = self._augmented(owner, target, statement, cls, kinds)
            found["op"] = statement.op
            return found
        found = self._plain_assignment(owner, target, statement, cls, kinds, value, new_kind, owner_ref)
        found["value_shape"] = _literal_shape(value)
        return found

    def _augmented(self, owner, target, statement, cls, kinds) -> dict:
        if kinds == {"variable"}:
            return self._facts("Augmented assignment rebinding Variable attribute", owner, target.attrname, cls,
                               "rebind-variable", f"Update the value in place: `{owner.as_string()}."
                               f"{target.attrname}[...] {statement.op} ...`.")
        return self._facts("Augmented assignment of non-Variable attribute", owner, target.attrname, cls, "augment",
                               "Keep the state in a Variable (`nnx.Variable(jnp.array(0))` in `__init__`) and "
                           "update it with `[...] " + statement.op + " ...`.")

    def _plain_assignment(self, owner, target, statement, cls, kinds, value, new_kind, owner_ref) -> dict:
        if new_kind == "variable" and not kinds and not _class_is_known(self.context, owner, owner_ref):
            return self._facts("Assigning a new Variable to attribute", owner, target.attrname, cls,
                               "assign-variable", "Create the Variable in `__init__` and write its value inside "
                               "the transform (`[...] = ...`), or return it as an output and attach it outside.")
        if (new_kind == "variable" and kinds) or kinds == {"variable"}:
            return self._facts("Rebinding Variable attribute", owner, target.attrname, cls, "rebind-variable",
                               f"Write the value instead: `{owner.as_string()}.{target.attrname}[...] = ...` "
                               "(or `.set_value(...)` for a new shape).")
        if _class_is_known(self.context, owner, owner_ref) and not kinds:
            return self._facts("Adding attribute", owner, target.attrname, cls, "add-attribute",
                               "Declare the slot in `__init__` (e.g. `nnx.data(None)`), return the new value as an "
                               "output of the transform and attach it outside.")
        if (kinds and kinds <= CONTAINER_KINDS) or isinstance(value, (nodes.List, nodes.Dict, nodes.Tuple)):
            return self._facts("Rebinding container attribute", owner, target.attrname, cls, "rebind-container",
                               "Build the new container outside the transform.")
        return self._facts("Assigning non-Variable attribute", owner, target.attrname, cls, "assign",
                           "Flip static flags outside the transform (or use `nnx.view`), keep dynamic state in "
                           "Variables, and return new objects as outputs.")

    def _call(self, service, node: nodes.Call, external) -> dict | None:
        func = node.func
        if isinstance(func, nodes.Name) and func.name in ("setattr", "delattr") and node.args:
            if service.transforms.qualified_name(func) not in (None, "builtins.setattr", "builtins.delattr", "setattr", "delattr"):
                return None
            owner = node.args[0]
            if not service.is_external(owner, external):
                return None
            maybe, cls = self.is_module_like(service, owner)
            if not maybe:
                return None
            name_node = node.args[1] if len(node.args) > 1 else None
            attribute = name_node.value if isinstance(name_node, nodes.Const) and isinstance(name_node.value, str) else "?"
            if func.name == "delattr":
                return self._facts("Deleting attribute", owner, attribute, cls, "delete",
                                   "Set it to `None` outside the transform, or keep the slot and change its value.")
            return self._facts("Setting attribute", owner, attribute, cls, "assign",
                               "Flip static flags outside the transform, keep dynamic state in Variables, "
                               "and return new objects as outputs.")
        if isinstance(func, nodes.Attribute) and func.attrname in _MUTATORS and isinstance(func.expr, nodes.Attribute):
            owner = func.expr
            if service.is_external(owner.expr, external) and value_model(self.context).stored_kinds(
                    owner.expr, owner.attrname, self.owner_class(service, owner.expr)) == {DATA_CONTAINER}:
                return {**self._facts(f"`.{func.attrname}()` on list/dict attribute", owner.expr, owner.attrname,
                                      None, "container-mutation", "Build the new container outside the transform "
                                      "(a static list mutated in a trace changes only once, at trace time)."),
                        "method": func.attrname}
        return None

    def _lazy_bridge_call(self, service, node: nodes.Call, reach: Reach) -> dict | None:
        """The first call of an ``nnx.bridge.ToNNX`` (a Linen module): it creates the wrapper's
        Variables, so a first call under a transform adds attributes there.

        Flagged only when the transform is applied inside a method of the Module that stores
        the wrapper, and that Module's ``__init__`` does not initialise it (``.lazy_init(x)``):
        then every first call goes through the transform. Measured with flax 0.12.8:
        ``nnx.bridge.lazy_init(model, x)`` on such a Module runs in graph mode; in Tree Mode
        the Variables stay inside the trace and ``model.inner.kernel`` raises AttributeError.
        """
        ref = service.class_of(node.func, reach)
        if ref is None or ref.qualified_name not in _BRIDGE_WRAPPERS or reach.entry is None:
            return None
        owner = _enclosing_class(reach.entry.function)
        if owner is None:
            return None
        classes = self.context.classes
        init = classes.init_of(owner)
        stores = classes.info(owner).stores
        if not any(classes.class_of(store.value) == ref for store in stores):
            return None
        if init is not None and any(isinstance(call.func, nodes.Attribute) and call.func.attrname == "lazy_init"
                                    or service.transforms.qualified_name(call.func) == flax_table.BRIDGE_LAZY_INIT
                                    for call in fact_index(self.context).calls_in(init)):
            return None
        return {
            "change": "First call (lazy init) of `nnx.bridge.ToNNX`",
            "change_kind": "lazy-init",
            "target_text": node.as_string() if len(node.as_string()) <= 60 else f"{node.func.as_string()}(...)",
            "attribute": node.func.as_string(),
            "object_class": owner.name,
            "instead": "Initialise the wrapper outside the transform: `nnx.bridge.ToNNX(...).lazy_init(x)` in "
                       "`__init__`.",
            "where": "",
        }

    def _popped_in_same_trace(self, service: TransformedCode) -> bool:
        entry = self._current.entry if self._current is not None else None
        if entry is None:
            return False
        for node in fact_index(self.context).calls_in(entry.function):  # nested loss functions included
            call = service.transforms.nnx_call(node)
            if call is not None and call.name == "pop":
                return True
        return False

    @staticmethod
    def _facts(change, owner, attribute, cls, kind, instead) -> dict:
        return {
            "change": change,
            "change_kind": kind,
            "target_text": f"{owner.as_string()}.{attribute}",
            "attribute": attribute,
            "object_class": cls,
            "instead": instead,
            "where": "",
        }
