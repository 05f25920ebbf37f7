"""NNX3xx: graph updates that silently stop propagating out of transforms — catalogue C1-C10.

In graph mode, whatever code inside an NNX transform does to a Module flows back out.
In Tree Mode only Variable *value* updates do; everything else happens on a per-call
copy and is dropped without an error. Whether a statement runs inside a transform, and
whether the object it changes came from outside, is answered by
:mod:`nnx_lint.transformed` (entries, calls followed into methods and other files,
graph-mode opt-ins excluded). Each diagnostic's ``confidence`` fact says how sure it is.
"""
from __future__ import annotations

import textwrap
from collections.abc import Iterator
from typing import ClassVar

from astroid import nodes

from nnx_lint import nnx_api
from nnx_lint.calls import NNXCall

from nnx_lint.calls import constant_bool
from nnx_lint.fixes.sites import entry_pin_target, pin_sites_in
from nnx_lint.flow import expressions_within, lookup
from nnx_lint.nnx_api import TRANSFORMS
from nnx_lint.program_text import choice_or, is_identifier
from nnx_lint.rule import Invalid, Reproduction, Rule, Valid, differs, raises
from nnx_lint.transformed import Reach, TransformedCode, body_nodes, explicit_tree, root_name, transformed_code

_SPEC = "https://github.com/google/flax/issues/5310"

#: Variable types of flax.nnx (a stored value of one of these is a Variable attribute).
VARIABLE_TYPES = nnx_api.qualified(nnx_api.variable_types())
_CONTAINER_TYPES = frozenset(
    {"flax.nnx.List", "flax.nnx.Dict", "flax.nnx.Sequential", "builtins.list", "builtins.dict", "list", "dict"}
)
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "popitem"})
_VALUE_ATTRIBUTES = frozenset({"value", "raw_value"})


# -- reproduction helpers -------------------------------------------------------------------

#: Names a reproduction must not reuse as attribute names (Module API, the fixtures' own).
_RESERVED = frozenset(
    "eval train sow perturb set_attributes iter_modules iter_children w change read lin drop "
    "layers init_cache".split()
)


def _code(text: str) -> str:
    return textwrap.dedent(text).strip("\n") + "\n"


def _attribute(facts: dict, default: str) -> str:
    """The flagged attribute name, when it can be used in a generated program."""
    name = facts.get("attribute")
    if is_identifier(name) and not name.startswith("_") and name not in _RESERVED:
        return name
    return default


def _under(transform: str | None, fn: str, args: str = "m", loss: str = "m.w[...].sum()") -> tuple[str, str]:
    """``(statement, note)``: a statement running ``fn(args)`` under the flagged transform.

    Transforms the reference runtime lacks, or that cannot carry the change in graph mode
    either, run the same function under ``nnx.jit`` (the note says why). ``transform`` is a
    fact: only a known NNX transform's name reaches the program (in the note)."""
    t = choice_or(transform or "jit", TRANSFORMS, "another transform")
    if t == "cond":
        return f"nnx.cond(True, {fn}, {fn}, {args})", ""
    if t == "switch":
        return f"nnx.switch(0, [{fn}, {fn}], {args})", ""
    if t == "vmap":
        return f"nnx.vmap({fn}, in_axes=None, axis_size=2)({args})", ""
    if t == "pmap":
        return (f"nnx.vmap({fn}, in_axes=None, axis_size=2)({args})",
                "# nnx.pmap: the same per-call copy; vmap stands in for it on one CPU device\n")
    if t in ("grad", "value_and_grad"):
        return f"nnx.{t}(lambda {args}: ({fn}({args}), {loss})[1])({args})", ""
    if t == "remat":
        return f"nnx.remat({fn})({args})", ""
    if t == "eval_shape":
        return f"nnx.eval_shape({fn}, {args})", ""
    if t in ("scan", "fori_loop", "while_loop"):
        return (f"nnx.jit({fn})({args})",
                f"# found under nnx.{t}: a loop carry cannot change structure in graph mode either, so the\n"
                "# same change runs under nnx.jit\n")
    found = f"nnx.{t}" if t in TRANSFORMS else t
    note = "" if t == "jit" else f"# found under {found}: the same change under nnx.jit\n"
    return f"nnx.jit({fn})({args})", note


def _entry_pin(context, reach: Reach) -> list[dict]:
    """Where a pin fix keeps graph mode: the transform that traces the reached code (and the
    transforms around it), if in this file."""
    return pin_sites_in(context, entry_pin_target(reach.entry))


class _TransformedCodeRule(Rule):
    """Shared walk: every function of this file that runs under a Tree Mode transform
    (and, where ``use_heuristic`` says so, unreached Module methods), plus functions of
    other project files reached from here (reported at the call that leaves this file)."""

    use_heuristic: ClassVar[bool] = False
    follow_files: ClassVar[bool] = True

    def leave_module(self, node: nodes.Module) -> None:
        service = transformed_code(self.context)
        reported_boundaries: set[int] = set()
        reached: set[int] = set()
        for reach in service.reaches():
            function = reach.function
            if function.root() is node:
                reached.add(id(function))
                if function.name == "__init__" and not isinstance(function, nodes.Lambda):
                    continue
                for target, facts in self.findings_for(service, reach):
                    self.report(target, **{**facts, **reach.facts(), "pin": _entry_pin(self.context, reach)})
            elif self.follow_files and reach.boundary is not None and id(reach.boundary) not in reported_boundaries:
                if getattr(function, "name", "") == "__init__":
                    continue
                for target, facts in self.findings_for(service, reach):
                    reported_boundaries.add(id(reach.boundary))
                    where = f" ({_relative(target)}:{target.lineno}, reached through this call)"
                    self.report(reach.boundary, **{**facts, **reach.facts(), "pin": _entry_pin(self.context, reach), "where": where,
                                                   "file": target.root().file, "line": target.lineno})
                    break
        if self.use_heuristic:
            for function in node.nodes_of_class(nodes.FunctionDef):
                if id(function) in reached:
                    continue
                reach = service.heuristic(function)
                if reach is not None and self.heuristic_applies(reach):
                    for target, facts in self.findings_for(service, reach):
                        self.report(target, **{**facts, **reach.facts(), "pin": _entry_pin(self.context, reach)})

    def heuristic_applies(self, reach: Reach) -> bool:
        return True

    def findings(self, service: TransformedCode, reach: Reach) -> Iterator[tuple[nodes.NodeNG, dict]]:
        raise NotImplementedError

    # helpers shared by the rules
    _current: Reach | None = None

    def findings_for(self, service: TransformedCode, reach: Reach):
        self._current = reach
        try:
            yield from self.findings(service, reach)
        finally:
            self._current = None

    def owner_class(self, service: TransformedCode, expression: nodes.NodeNG):
        """The class of the object whose attribute is touched, when known."""
        return service.class_of(expression, self._current)

    def is_module_like(self, service: TransformedCode, expression: nodes.NodeNG) -> tuple[bool, str | None]:
        """(may be an NNX Module, its class name or None): unknown classes count as maybe."""
        ref = self.owner_class(service, expression)
        if ref is None:
            return True, None
        if ref.qualified_name in VARIABLE_TYPES or _is_variable_class(self.context, ref):
            return False, ref.short_name
        if ref.definition is not None:
            return self.context.classes.info(ref.definition).is_nnx_module, ref.short_name
        return ref.qualified_name.startswith("flax.nnx."), ref.short_name


def _stores_on_self(method: nodes.FunctionDef) -> bool:
    """Whether a method assigns ``self.<attr>`` or calls ``init_cache`` for its effect."""
    if not method.args.args:
        return False
    self_name = method.args.args[0].name
    for node in body_nodes(method):
        if isinstance(node, nodes.AssignAttr):
            root = root_name(node)
            if root is not None and root.name == self_name:
                return True
        if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute) \
                and node.func.attrname == "init_cache" and isinstance(node.parent, nodes.Expr):
            return True
    return False


def _is_variable_class(context, ref, depth: int = 0) -> bool:
    if ref.qualified_name in VARIABLE_TYPES:
        return True
    if ref.definition is None or depth > 6:
        return False
    return any(_is_variable_class(context, base, depth + 1) for base in context.classes.info(ref.definition).bases)


def _relative(node: nodes.NodeNG) -> str:
    path = node.root().file or node.root().name
    return path.rsplit("/", 1)[-1]


def _stored_kinds(context, owner_expression: nodes.NodeNG, attribute: str, ref=None) -> set[str]:
    """What ``owner.attribute`` holds after construction: ``variable``, ``container``,
    ``other`` (or empty when the class or the attribute is unknown)."""
    ref = ref or context.classes.class_of_self(owner_expression)
    if ref is None or ref.definition is None:
        return set()
    kinds = set()
    for store in context.classes.info(ref.definition).stores_of(attribute):
        kinds.add(_value_kind(context, store.value))
    return kinds


def _value_kind(context, value: nodes.NodeNG | None) -> str:
    if isinstance(value, (nodes.List, nodes.Dict, nodes.ListComp, nodes.DictComp)):
        return "container"
    if isinstance(value, nodes.Call):
        ref = context.classes.class_of(value)
        name = ref.qualified_name if ref else None
        if name in _CONTAINER_TYPES:
            return "container"
        if ref is not None and (name in VARIABLE_TYPES or _is_variable_class(context, ref)):
            return "variable"
    return "other"


def _literal_shape(value: nodes.NodeNG | None) -> str:
    """``tuple`` / ``list`` / ``dict`` when the assigned value is (or extends) such a literal."""
    for node in (value, getattr(value, "left", None), getattr(value, "right", None)):
        for literal, name in ((nodes.Tuple, "tuple"), (nodes.List, "list"), (nodes.Dict, "dict")):
            if isinstance(node, literal):
                return name
    return "other"


def _class_is_known(context, owner_expression: nodes.NodeNG, ref=None) -> bool:
    ref = ref or context.classes.class_of_self(owner_expression)
    return ref is not None and ref.definition is not None


class GraphUpdateInTransform(_TransformedCodeRule):
    """Structural or static change to a Module inside transformed code.

    What it does:
        Flags, in code that runs inside a Tree Mode NNX transform (a function decorated by
        or passed to `nnx.jit`, `vmap`, `scan`, `grad`, `cond` branches, loop bodies, ...,
        and the functions and Module methods it calls, also in other project files), changes
        to objects that came from outside the transform: assigning or augmenting a
        non-Variable attribute (`self.count += 1`, `m.training = False`), adding, deleting
        (`del`, `delattr`) or rebinding attributes and submodules, rebinding a Variable
        attribute to a new Variable or a plain array, and `append`/`insert`/`pop`/item
        assignment on list or dict attributes. Writes through Variables (`v[...] = x`,
        `v[...] += 1`, `v.set_value(x)`, and the deprecated `v.value = x`) stay silent,
        and so do changes to modules constructed inside the transform, graph-mode opt-ins
        (`graph=True, graph_updates=True`, `nnx.compat.*`, graph-mode scopes) and
        transforms that already pin Tree Mode (`graph_updates=False`). The `confidence` fact says whether the code is
        the transformed function itself (`transform`) or reached through calls (`called`).

    Why is this bad?:
        Tree Mode transforms run the function on a pytree copy of their inputs and write
        back only Variable values. Every other change is silently dropped: the counter
        stays 0, the flag stays set, the appended layer never appears. Keep dynamic state in
        Variables (`self.count = nnx.Variable(jnp.array(0))`, then `self.count[...] += 1`),
        flip static flags outside the transform, and build new Variables or modules as
        outputs of the transform and attach them outside.

    References:
        - Catalogue rows C1, C8, C9 (`r20_structural_updates_in_jit.py`, `r28_static_container_mutation.py`, `r72_control_flow.py`)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX301"
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

    #: How each container method is reproduced (on a list / a dict of one Linear).
    _LIST_CHANGES = {
        "append": "OBJ.ATTR.append(nnx.Linear(2, 2, rngs=nnx.Rngs(1)))",
        "extend": "OBJ.ATTR.extend([nnx.Linear(2, 2, rngs=nnx.Rngs(1))])",
        "insert": "OBJ.ATTR.insert(0, nnx.Linear(2, 2, rngs=nnx.Rngs(1)))",
        "pop": "OBJ.ATTR.pop()",
        "remove": "OBJ.ATTR.remove(OBJ.ATTR[0])",
        "clear": "OBJ.ATTR.clear()",
    }
    _DICT_CHANGES = {
        "update": "OBJ.ATTR.update({'b': nnx.Linear(2, 2, rngs=nnx.Rngs(1))})",
        "setdefault": "OBJ.ATTR.setdefault('b', nnx.Linear(2, 2, rngs=nnx.Rngs(1)))",
        "popitem": "OBJ.ATTR.popitem()",
    }

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """The flagged kind of change (``change_kind``) on the flagged attribute, made under the
        flagged transform (in a method when the finding was reached through calls); the
        observation is the caller's attribute afterwards. The control makes the same change
        the Tree Mode way (outside the transform, or as a Variable value write)."""
        kind = facts.get("change_kind") or "assign"
        setter = (facts.get("change") or "").startswith(("Setting", "Deleting")) and "`" not in (facts.get("change") or "")
        attr = _attribute(facts, {"augment": "count", "add-attribute": "extra", "assign-variable": "extra",
                                  "rebind-variable": "w2", "rebind-container": "tags", "container-mutation": "layers",
                                  "container-item": "layers"}.get(kind, "training"))
        one_linear = "nnx.List([nnx.Linear(2, 2, rngs=nnx.Rngs(0))])"
        op = facts.get("op") if facts.get("op") in ("+=", "-=", "*=") else "+="
        graph_count = {"+=": 3, "-=": -1, "*=": 2}[op]
        control_change = None
        if kind == "augment":
            init, change = "1", f"OBJ.ATTR {op} 2"
            observe, tree, graph = "m.ATTR", 1, graph_count
            control_init, control_change = "nnx.Variable(jnp.array(1))", f"OBJ.ATTR[...] {op} 2"
            control_observe = "int(m.ATTR[...])"
        elif kind == "rebind-variable" and facts.get("op"):
            # `m.v += 1` on a Variable: flax 0.12.8 raises in graph mode too (no in-place Variable ops)
            init, change = "nnx.Param(jnp.ones(2))", f"OBJ.ATTR {op} 1"
            observe = "list(m.ATTR.shape)"
            tree = graph = None
            control_init, control_change, control_observe = init, f"OBJ.ATTR[...] {op} 1", "list(m.ATTR.shape)"
        elif kind == "rebind-variable":
            init, change = "nnx.Param(jnp.ones(2))", "OBJ.ATTR = nnx.Param(jnp.zeros(3))"
            observe, tree, graph = "list(m.ATTR.shape)", [2], [3]
            control_init, control_change, control_observe = init, "OBJ.ATTR.value = jnp.zeros(3)", observe
        elif kind in ("add-attribute", "assign-variable"):
            init = None
            change = ("setattr(OBJ, 'ATTR', nnx.Param(jnp.zeros(3)))" if setter
                      else "OBJ.ATTR = nnx.Param(jnp.zeros(3))")
            observe, tree, graph = "hasattr(m, 'ATTR')", False, True
        elif kind == "delete":
            init, change = "True", "delattr(OBJ, 'ATTR')" if setter else "del OBJ.ATTR"
            observe, tree, graph = "hasattr(m, 'ATTR')", True, False
        elif kind == "rebind-container" or (kind == "assign" and facts.get("value_shape") in ("tuple", "list")):
            init, change = "('a',)", "OBJ.ATTR = OBJ.ATTR + ('b',)"
            observe, tree, graph = "list(m.ATTR)", ["a"], ["a", "b"]
        elif kind == "container-mutation" and facts.get("method") in cls._DICT_CHANGES:
            init = "nnx.Dict({'a': nnx.Linear(2, 2, rngs=nnx.Rngs(0))})"
            change = cls._DICT_CHANGES[facts["method"]]
            observe, tree = "sorted(m.ATTR)", ["a"]
            graph = [] if facts["method"] == "popitem" else ["a", "b"]
        elif kind == "container-mutation":
            method = facts.get("method") if facts.get("method") in cls._LIST_CHANGES else "append"
            init, change = one_linear, cls._LIST_CHANGES[method]
            observe, tree = "len(m.ATTR)", 1
            graph = 2 if method in ("append", "extend", "insert") else 0
        elif kind == "container-item" and facts.get("statement") == "delete":
            init, change = one_linear, "del OBJ.ATTR[0]"
            observe, tree, graph = "len(m.ATTR)", 1, 0
        elif kind == "container-item":
            init, change = one_linear, "OBJ.ATTR[0] = nnx.Linear(2, 5, rngs=nnx.Rngs(1))"
            observe, tree, graph = "m.ATTR[0].out_features", 2, 5
        else:  # assign: a static flag
            init = "True"
            change = "setattr(OBJ, 'ATTR', False)" if setter else "OBJ.ATTR = False"
            observe, tree, graph = "m.ATTR", True, False
        if control_change is None:  # the rewrite: the same change outside the transform, which only reads
            control_init, control_observe = init, observe
        in_method = len(facts.get("call_chain") or []) > 1

        def program(init_value, change_text, observation, outside=False, transform=facts.get("transform")):
            init_line = f"\n        self.{attr} = {init_value}" if init_value is not None else ""
            body = change_text.replace("ATTR", attr)
            if in_method and not outside:
                method = f"\n\n    def change(self):\n        {body.replace('OBJ', 'self')}"
                function = "def change(m):\n    m.change()\n"
            else:
                method = ""
                function = f"def change(m):\n    {body.replace('OBJ', 'm')}\n"
            header = (f"class M(nnx.Module):\n    def __init__(self):\n        self.w = nnx.Param(jnp.ones(2))"
                      f"{init_line}{method}\n\n\nm = M()\n")
            if outside:
                statement, note = _under(transform, "read")
                run = (f"{function.replace('def change(m):', 'def change_outside(m):')}change_outside(m)  "
                       "# the change, outside the transform\n"
                       f"def read(m):\n    return m.w[...].sum()\n{note}{statement}\n")
            else:
                statement, note = _under(transform, "change")
                run = f"{function}{note}{statement}\n"
            return header + run + f"return {observation.replace('ATTR', attr)}\n"

        main = program(init, change, observe)
        if control_change is not None:
            control = program(control_init, control_change, control_observe, transform="jit")
            if kind == "augment":  # a Variable's value is abstract under the trace: evaluate it concretely
                control = "with jax.ensure_compile_time_eval():\n" + textwrap.indent(control, "    ")
        else:
            control = program(control_init, change, control_observe, outside=True)
        if tree is None:
            return Reproduction(main, expect_error="variable-inplace", control=control)
        return Reproduction(main, expect_tree=tree, expect_graph=graph, control=control)

    def findings(self, service: TransformedCode, reach: Reach) -> Iterator[tuple[nodes.NodeNG, dict]]:
        if reach.entry is not None and reach.entry.transform == "eval_shape":
            return  # graph mode drops changes made under eval_shape too: the flip changes nothing
        external = reach.external
        for node in body_nodes(reach.function):
            if isinstance(node, nodes.AssignAttr) and node.attrname not in _VALUE_ATTRIBUTES:
                statement = node.parent
                while isinstance(statement, (nodes.Tuple, nodes.List, nodes.Starred)):
                    statement = statement.parent
                if isinstance(statement, (nodes.Assign, nodes.AugAssign, nodes.AnnAssign)):
                    found = self._assignment(service, node, statement, external)
                    if found:
                        yield statement, found
            elif isinstance(node, nodes.DelAttr) and service.is_external(node.expr, external):
                maybe, cls = self.is_module_like(service, node.expr)
                if maybe:
                    yield node.parent if isinstance(node.parent, nodes.Delete) else node, self._facts(
                        "Deleting attribute", node.expr, node.attrname, cls, "delete",
                        "Set it to `None` outside the transform, or keep the slot and change its value.")
            elif isinstance(node, nodes.Call):
                found = self._call(service, node, external)
                if found:
                    yield node, found
            elif isinstance(node, (nodes.Assign, nodes.AugAssign, nodes.Delete)):
                targets = node.targets if isinstance(node, (nodes.Assign, nodes.Delete)) else [node.target]
                for target in targets:
                    if isinstance(target, nodes.Subscript) and isinstance(target.value, nodes.Attribute):
                        owner = target.value
                        if service.is_external(owner.expr, external) and _stored_kinds(
                                self.context, owner.expr, owner.attrname, self.owner_class(service, owner.expr)) == {"container"}:
                            yield node, {**self._facts(
                                "Item assignment on list/dict attribute", owner.expr, owner.attrname, None,
                                "container-item", "Build the new container outside the transform, or keep the "
                                "entries in Variables and update their values."),
                                "statement": type(node).__name__.lower()}

    def _assignment(self, service, target: nodes.AssignAttr, statement, external) -> dict | None:
        owner = target.expr
        if not service.is_external(owner, external):
            return None
        if not isinstance(statement, nodes.AugAssign) and _value_kind(self.context, statement.value) == "variable" \
                and self._popped_in_same_trace(service):
            return None  # a Variable created and popped in the same trace (sow-like): nothing has to propagate
        maybe, cls = self.is_module_like(service, owner)
        if not maybe:
            return None
        owner_ref = self.owner_class(service, owner)
        kinds = _stored_kinds(self.context, owner, target.attrname, owner_ref)
        value = statement.value if not isinstance(statement, nodes.AugAssign) else None
        new_kind = _value_kind(self.context, value) if value is not None else None
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
        if kinds == {"container"} or isinstance(value, (nodes.List, nodes.Dict, nodes.Tuple)):
            return self._facts("Rebinding container attribute", owner, target.attrname, cls, "rebind-container",
                               "Build the new container outside the transform.")
        return self._facts("Assigning non-Variable attribute", owner, target.attrname, cls, "assign",
                           "Flip static flags outside the transform (or use `nnx.view`), keep dynamic state in "
                           "Variables, and return new objects as outputs.")

    def _call(self, service, node: nodes.Call, external) -> dict | None:
        func = node.func
        if isinstance(func, nodes.Name) and func.name in ("setattr", "delattr") and node.args:
            if service.qualified_name(func) not in (None, "builtins.setattr", "builtins.delattr", "setattr", "delattr"):
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
            if service.is_external(owner.expr, external) and _stored_kinds(
                    self.context, owner.expr, owner.attrname, self.owner_class(service, owner.expr)) == {"container"}:
                return {**self._facts(f"`.{func.attrname}()` on list/dict attribute", owner.expr, owner.attrname,
                                      None, "container-mutation", "Build the new container outside the transform "
                                      "(a static list mutated in a trace changes only once, at trace time)."),
                        "method": func.attrname}
        return None

    def _popped_in_same_trace(self, service: TransformedCode) -> bool:
        entry = self._current.entry if self._current is not None else None
        if entry is None:
            return False
        for node in entry.function.nodes_of_class(nodes.Call):  # nested loss functions included
            call = service.nnx_call(node)
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


class SowPopAcrossTransform(Rule):
    """`nnx.pop` / `nnx.state` of sown intermediates after a transformed forward pass.

    What it does:
        Flags `nnx.pop(model, nnx.Intermediate)` (also `nnx.Perturbation`, and
        `nnx.state(model, nnx.Intermediate)`) when `model` was passed, earlier in the same
        function, to a function transformed by a Tree Mode NNX transform (`step(model, x)`
        with `step = nnx.jit(...)` or decorated, `nnx.jit(f)(model, x)`). Popping inside the
        transform that ran the forward pass stays silent.

    Why is this bad?:
        `self.sow(...)` creates a new `Intermediate` attribute on first use. Inside a Tree
        Mode transform that attribute lands on the per-call copy and is dropped, so
        `nnx.pop` after the call silently returns an empty State (`{}`) — or, when an eager
        call created the attribute first, a mix that depends on call order. Use
        `y, intermediates = nnx.capture(model, nnx.Intermediate)(x)` inside the transform
        (or around it) instead.

    References:
        - Catalogue row C2 (`r21_sow_pop.py`, rewrite `r21_sow_pop_fix.py`)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX302"
    fixes = ("pin",)
    symbol = "sow-pop-across-transform"
    kind = "silent"
    catalogue = ("C2",)
    message = (
        "`nnx.{api}({model}, nnx.{collection})` after `{model}` ran under `nnx.{transform}` (line "
        "{transform_line}) is silently empty in Tree Mode"
    )
    help = (
        "In Tree Mode the {collection} attributes sown inside the transform are dropped. Use `out, "
        "{collection_lower} = nnx.capture({model}, nnx.{collection})(...)` inside the transform (or "
        "around the transformed call) instead"
    )
    VALID = [
        Valid(
            "capture-inside-and-around",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Foo(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                def __call__(self, x):
                    y = self.lin(x)
                    self.sow(nnx.Intermediate, 'y_mean', jnp.mean(y))
                    return y

            def run():
                x = jnp.ones((1, 2))
                model = Foo(nnx.Rngs(0))
                @nnx.jit
                def forward(m, x):
                    return nnx.capture(m, nnx.Intermediate)(x)
                y, interms = forward(model, x)
                y2, interms2 = nnx.capture(nnx.jit(lambda m, x: m(x)), nnx.Intermediate)(model, x)
                return dict(interms), dict(interms2)
            """,
        ),
        Valid(
            "pop-in-same-transform-and-eager",
            """
            from flax import nnx

            @nnx.jit
            def train_step(model, x):
                y = model(x)
                intermediates = nnx.pop(model, nnx.Intermediate)
                return y, intermediates

            def eager(model, x):
                model(x)
                return nnx.pop(model, nnx.Intermediate)

            def opted_in(model, x):
                nnx.compat.jit(lambda m, x: m(x))(model, x)
                return nnx.pop(model, nnx.Intermediate)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "pop-after-jit",
            """
            import jax.numpy as jnp
            from flax import nnx

            def run(m2, x):
                nnx.jit(lambda m, x: m(x))(m2, x)
                jitted = nnx.pop(m2, nnx.Intermediate)  # NNX302
                return jitted
            """,
            tree_mode=differs("nnx.pop returns an empty State ({}) instead of the sown value"),
        ),
        Invalid(
            "decorated-step-then-state",
            """
            from flax import nnx

            @nnx.jit
            def forward(model, x):
                return model(x)

            def evaluate(model, batches):
                for x in batches:
                    forward(model, x)
                    acts = nnx.state(model, nnx.Intermediate)  # NNX302
                return acts
            """,
            tree_mode=differs("nnx.state(model, nnx.Intermediate) is empty after the jitted call"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """A module that sows (or perturbs) in ``__call__``, run once through the flagged
        transform, then ``nnx.pop``/``nnx.state`` of the collection: the observation is the
        names found. The control captures inside the transform with ``nnx.capture``."""
        collection = "Perturbation" if facts.get("collection") == "Perturbation" else "Intermediate"
        api = "state" if facts.get("api") == "state" else "pop"
        record = ("x = self.perturb('grad_of_x', x)\n" + " " * 20 + "y = self.lin(x)" if collection == "Perturbation"
                  else "y = self.lin(x)\n" + " " * 20 + "self.sow(nnx.Intermediate, 'y_mean', jnp.mean(y))")
        name = "grad_of_x" if collection == "Perturbation" else "y_mean"
        transform = facts.get("transform")
        if transform in ("vmap", "pmap"):
            transform = "jit"  # graph-mode vmap needs out_axes for the sown value; the copy is the same
        model = _code(f"""
            class Foo(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)

                def __call__(self, x):
                    {record}
                    return y


            model = Foo(nnx.Rngs(0))
            x = jnp.ones((1, 2))
        """)
        statement, note = _under(transform, "forward", "model, x", loss="jnp.sum(model(x))")
        main = model + _code("""
            def forward(m, x):
                return m(x)
        """) + note + statement + "\n" + \
            f"return sorted(nnx.{api}(model, nnx.{collection}).keys())\n"
        control = model + _code(f"""
            @nnx.jit
            def forward(m, x):
                return nnx.capture(m, nnx.{collection})(x)

            y, captured = forward(model, x)
            return sorted(captured.keys())
        """)
        return Reproduction(main, expect_tree=[], expect_graph=[name], control=control)

    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        if call is None or call.name not in ("pop", "state") or len(call.args) < 2:
            return
        collection = _sown_collection(self.context, call.args[1:])
        if collection is None:
            return
        model = root_name(call.args[0])
        if model is None or not isinstance(call.args[0], nodes.Name):
            return
        if collection == "Perturbation" and _perturb_recipe_diffstate(self.context, node) is not None:
            return  # NNX303 tells the whole perturb story
        service = transformed_code(self.context)
        scope = node.scope()
        if _uses_capture(self.context, scope):
            return
        found = _earlier_transformed_call(self.context, service, scope, node, model.name)
        if found is None:
            return
        transform_call, entry = found
        self.report(
            node,
            api=call.name,
            model=model.name,
            collection=collection,
            collection_lower=collection.lower() + "s",
            transform=entry.transform,
            transform_line=transform_call.lineno,
            entry=getattr(entry.function, "name", "<lambda>"),
            confidence="transform",
            pin=pin_sites_in(self.context, entry_pin_target(entry)),
        )


def _sown_collection(context, filters: list[nodes.NodeNG]) -> str | None:
    for expression in filters:
        name = context.qualified_name(expression)
        if name in ("flax.nnx.Intermediate", "flax.nnx.Perturbation"):
            return name.rpartition(".")[2]
    return None


def _uses_capture(context, scope: nodes.NodeNG) -> bool:
    for call in scope.nodes_of_class(nodes.Call):
        found = context.nnx_call(call)
        if found is not None and found.name == "capture":
            return True
    return False


def _earlier_transformed_call(context, service: TransformedCode, scope, node: nodes.Call, model: str):
    """The last call before ``node`` in ``scope`` that passes ``model`` to a Tree Mode
    transformed function, with its entry."""
    best = None
    for call in scope.nodes_of_class(nodes.Call):
        if call.lineno is None or call.lineno >= node.lineno or call.scope() is not scope:
            continue
        if not any(isinstance(a, nodes.Name) and a.name == model for a in call.args):
            continue
        entry = service.transformed_callable(call.func)
        if entry is None or not entry.affected:
            continue
        if best is None or call.lineno > best[0].lineno:
            best = (call, entry)
    return best


def _perturb_recipe_diffstate(context, node: nodes.NodeNG) -> nodes.Call | None:
    """A `nnx.DiffState(..., (..., nnx.Perturbation))` in the scope of ``node`` (or the
    module) that does not feed only graph-mode `grad`s."""
    for scope in dict.fromkeys((node.scope(), node.root())):
        for call in scope.nodes_of_class(nodes.Call):
            if call.scope() is not scope:
                continue
            found = context.nnx_call(call)
            if found is None or found.name != "DiffState" or len(found.args) < 2:
                continue
            if any(context.qualified_name(e) == "flax.nnx.Perturbation" for e, _ in expressions_within(found.args[1])):
                if not _feeds_only_graph_mode(context, call):
                    return call
    return None


def _feeds_only_graph_mode(context, diffstate: nodes.Call) -> bool:
    uses = _grads_of(context, diffstate)
    return bool(uses) and all(context.keeps_graph_mode(u) for u in uses)


def _grads_of(context, diffstate: nodes.Call) -> list[NNXCall]:
    """The ``grad`` / ``value_and_grad`` calls whose ``argnums`` holds ``diffstate``."""
    uses = []
    for call in diffstate.root().nodes_of_class(nodes.Call):
        found = context.nnx_call(call)
        if found is None or found.name not in ("grad", "value_and_grad") or "argnums" not in found.keywords:
            continue
        if any(e is diffstate for e, _ in expressions_within(found.keywords["argnums"])):
            uses.append(found)
    return uses


class PerturbDiffStateRecipe(Rule):
    """The graph-mode `perturb` recipe: Perturbation state read back after a `DiffState` grad.

    What it does:
        Flags the first read of `nnx.Perturbation` state (`nnx.state(grads, nnx.Param,
        nnx.Perturbation)`, `nnx.pop(model, nnx.Perturbation)`, `nnx.split(...,
        nnx.Perturbation, ...)`) in a function that differentiates with
        `nnx.DiffState(..., (..., nnx.Perturbation))` and does not use `nnx.capture`. The
        `DiffState` itself is reported by NNX202; this diagnostic points at the rest of the
        recipe and at its Tree Mode rewrite.

    Why is this bad?:
        The recipe (`self.perturb(...)` in the model, an eager `model(x)` to create the
        Perturbation attributes, `DiffState(0, (Param, Perturbation))`, `nnx.state(grads,
        ...)`, `nnx.pop`) depends on graph mode twice: the `DiffState` raises a ValueError
        when the `grad` is created, and perturbations created inside a transform would be
        dropped. Tree Mode's recipe: `_, perturbs = nnx.capture(model, nnx.Perturbation)(x)`,
        then `nnx.grad(loss, argnums=(0, 1))(model, perturbs)` with `nnx.capture(model,
        init=perturbs)(x)` inside the loss.

    References:
        - Catalogue row C3 (`r22_perturb_diffstate.py`, rewrite `r22_perturb_diffstate_fix.py`)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX303"
    fixes = ("pin",)
    symbol = "perturb-diffstate-recipe"
    kind = "raises"
    catalogue = ("C3",)
    message = (
        "Perturbation gradients read here come from `nnx.DiffState(..., nnx.Perturbation)` (line "
        "{diffstate_line}): Tree Mode raises ValueError"
    )
    help = (
        "This is the graph-mode perturb recipe, and Tree Mode rejects its DiffState prefix filter "
        "(NNX202). Rewrite: `_, perturbs = nnx.capture(model, nnx.Perturbation)(x)`, then "
        "`nnx.grad(loss, argnums=(0, 1))(model, perturbs)` with `nnx.capture(model, init=perturbs)(x)` "
        "in the loss"
    )
    VALID = [
        Valid(
            "capture-recipe",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                def __call__(self, x):
                    x = self.perturb('grad_of_x', x)
                    return self.lin(x)

            def run():
                model, x = Model(nnx.Rngs(0)), jnp.ones((1, 2))
                @nnx.jit
                def step(model, x):
                    _, perturbs = nnx.capture(model, nnx.Perturbation)(x)
                    def loss_fn(model, perturbs):
                        y = nnx.capture(model, init=perturbs)(x)
                        return jnp.mean(y ** 2)
                    grads, interm_grads = nnx.grad(loss_fn, argnums=(0, 1))(model, perturbs)
                    return interm_grads
                return step(model, x)
            """,
        ),
        Valid(
            "compat-grad-recipe",
            """
            from flax import nnx

            def run(model, x, loss_fn):
                model(x)
                diff_state = nnx.DiffState(0, (nnx.Param, nnx.Perturbation))
                grads = nnx.compat.grad(loss_fn, argnums=diff_state)(model)
                grads, interm_grads = nnx.state(grads, nnx.Param, nnx.Perturbation)
                nnx.pop(model, nnx.Perturbation)
                return interm_grads
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "old-recipe",
            """
            import jax.numpy as jnp
            from flax import nnx

            def run(model, x):
                model(x)
                loss_fn = lambda m: jnp.mean(m(x) ** 2)
                diff_state = nnx.DiffState(0, (nnx.Param, nnx.Perturbation))
                grads = nnx.grad(loss_fn, argnums=diff_state)(model)
                grads, interm_grads = nnx.state(grads, nnx.Param, nnx.Perturbation)  # NNX303
                nnx.pop(model, nnx.Perturbation)
                return interm_grads
            """,
            tree_mode=raises("ValueError", "cannot contain `DiffState` objects"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """The old recipe with the flagged read-back API (``DiffState`` grad, then
        ``nnx.{state,pop,split}`` of the Perturbation state); the control is the
        ``nnx.capture`` recipe."""
        api = facts.get("api") if facts.get("api") in ("state", "pop", "split") else "state"
        model = _code("""
            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)

                def __call__(self, x):
                    x = self.perturb('grad_of_x', x)
                    return self.lin(x)


            model, x = Model(nnx.Rngs(0)), jnp.ones((1, 2))
        """)
        read = {
            "state": "grads, interm_grads = nnx.state(grads, nnx.Param, nnx.Perturbation)\n"
                     "nnx.pop(model, nnx.Perturbation)",
            "pop": "interm_grads = nnx.state(grads, nnx.Perturbation)\nnnx.pop(model, nnx.Perturbation)",
            "split": "_, grads, interm_grads = nnx.split(grads, nnx.Param, nnx.Perturbation)",
        }[api]
        main = model + _code("""
            model(x)  # creates the Perturbation attribute eagerly
            diff_state = nnx.DiffState(0, (nnx.Param, nnx.Perturbation))
            grads = nnx.grad(lambda m: jnp.mean(m(x) ** 2), argnums=diff_state)(model)
        """) + read + "\nreturn sorted(interm_grads.keys())\n"
        control = model + _code("""
            _, perturbs = nnx.capture(model, nnx.Perturbation)(x)

            def loss_fn(model, perturbs):
                return jnp.mean(nnx.capture(model, init=perturbs)(x) ** 2)

            grads, interm_grads = nnx.grad(loss_fn, argnums=(0, 1))(model, perturbs)
            return sorted(interm_grads.keys())
        """)
        return Reproduction(main, expect_error="prefix-filter", control=control)

    def __init__(self, context) -> None:
        super().__init__(context)
        self._reported_scopes: set[int] = set()

    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        if call is None or call.name not in ("pop", "state", "split") or len(call.args) < 2:
            return
        if _sown_collection(self.context, call.args[1:]) != "Perturbation":
            return
        scope = node.scope()
        if id(scope) in self._reported_scopes or _uses_capture(self.context, scope):
            return
        diffstate = _perturb_recipe_diffstate(self.context, node)
        if diffstate is None:
            return
        self._reported_scopes.add(id(scope))
        pin = pin_sites_in(self.context, *(g for g in _grads_of(self.context, diffstate) if not self.context.keeps_graph_mode(g)))
        self.report(node, api=call.name, diffstate_line=diffstate.lineno,
                    diffstate=diffstate.as_string(), confidence="transform", pin=pin)


class _MethodCallInTransform(_TransformedCodeRule):
    """Calls of given methods on an outside object in transformed code."""

    methods: ClassVar[frozenset[str]]

    def findings(self, service: TransformedCode, reach: Reach) -> Iterator[tuple[nodes.NodeNG, dict]]:
        for node in body_nodes(reach.function):
            if not isinstance(node, nodes.Call) or not isinstance(node.func, nodes.Attribute):
                continue
            if node.func.attrname not in self.methods:
                continue
            receiver = node.func.expr
            if not service.is_external(receiver, reach.external):
                continue
            maybe, cls = self.is_module_like(service, receiver)
            if not maybe:
                continue
            if any(k.arg == "graph" and constant_bool(k.value) is not False for k in node.keywords or []):
                continue
            yield node, {"method": node.func.attrname, "receiver": receiver.as_string(), "object_class": cls,
                         "where": ""}


class EvalTrainInTransform(_MethodCallInTransform):
    """`model.eval()` / `model.train()` / `set_attributes(...)` inside transformed code.

    What it does:
        Flags `.eval()`, `.train()` and `.set_attributes(...)` called, inside code that runs
        under a Tree Mode NNX transform, on a module that came from outside the transform
        (a parameter of the transformed function, `self` of a method it calls).

    Why is this bad?:
        These methods flip static attributes (`deterministic`, `use_running_average`). In
        graph mode the flip reaches the caller's module; in Tree Mode it stays inside the
        call, so the caller's Dropout keeps dropping and BatchNorm keeps updating its
        statistics, silently. Call `model.eval()` outside the transform, or pass
        `nnx.view(model, deterministic=True)` in.

    References:
        - Catalogue row C5 (`r24_eval_train_view.py`)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX304"
    fixes = ("pin",)
    symbol = "eval-train-in-transform"
    kind = "silent"
    catalogue = ("C5",)
    methods = frozenset({"eval", "train", "set_attributes"})
    message = (
        "`{receiver}.{method}(...)` under {traced_by}{where}: Tree Mode silently keeps "
        "the caller's module in its old mode"
    )
    help = (
        "In Tree Mode the flag change stays inside the call. Call it outside the transform, or pass "
        "`nnx.view({receiver}, deterministic=...)` in"
    )
    VALID = [
        Valid(
            "eval-outside-and-view",
            """
            import jax.numpy as jnp
            from flax import nnx

            def run(m, x):
                m.eval()
                y = nnx.jit(lambda m, x: m(x))(m, x)
                yv = nnx.jit(lambda m, x: nnx.view(m, deterministic=True)(x))(m, x)
                m2 = nnx.compat.jit(lambda m: m.eval())(m)
                return y, yv
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "eval-inside-jit",
            """
            from flax import nnx

            @nnx.jit
            def evaluate(m, x):
                m.eval()  # NNX304
                return m(x)
            """,
            tree_mode=differs("after evaluate(m, x) the caller's m.drop.deterministic is still False"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """The flagged method called on a Dropout-holding module under the flagged transform;
        the observation is the caller's ``drop.deterministic`` afterwards. The control calls
        it outside, before the transformed forward pass."""
        method = facts.get("method") if facts.get("method") in ("eval", "train", "set_attributes") else "eval"
        call = {"eval": "m.eval()", "train": "m.train()",
                "set_attributes": "m.set_attributes(deterministic=True)"}[method]
        start = "model.eval()  # starts in evaluation mode\n" if method == "train" else ""
        tree, graph = (True, False) if method == "train" else (False, True)
        model = _code("""
            class Net(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                    self.drop = nnx.Dropout(0.5)

                def __call__(self, x):
                    return self.drop(self.lin(x))


            model = Net(nnx.Rngs(0))
        """) + start
        statement, note = _under(facts.get("transform"), "switch_mode", "model", loss="model.lin.kernel[...].sum()")
        main = model + f"def switch_mode(m):\n    {call}\n" + note + statement + \
            "\nreturn model.drop.deterministic\n"
        read, read_note = _under(facts.get("transform"), "forward", "model", loss="model.lin.kernel[...].sum()")
        control = model + call.replace("m.", "model.", 1) + "  # outside the transform\n" + \
            "def forward(m):\n    return m.lin.kernel[...].sum()\n" + read_note + read + \
            "\nreturn model.drop.deterministic\n"
        return Reproduction(main, expect_tree=tree, expect_graph=graph, control=control)


class InitCacheInTransform(_MethodCallInTransform):
    """`init_cache(...)` inside transformed code.

    What it does:
        Flags `.init_cache(...)` called, inside code that runs under a Tree Mode NNX
        transform, on a module that came from outside the transform.

    Why is this bad?:
        `init_cache` creates new `nnx.Cache` attributes. Inside a Tree Mode transform they
        land on the per-call copy and are dropped: the caller's module has no cache, and the
        next decode step raises `ValueError: Autoregressive cache not initialized`, far from
        the cause. Create the cache eagerly before the transformed decode loop and only
        update it inside.

    References:
        - Catalogue row C6 (`r25_init_cache_in_jit.py`)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX305"
    fixes = ("pin",)
    symbol = "init-cache-in-transform"
    kind = "silent"
    catalogue = ("C6",)
    methods = frozenset({"init_cache"})

    def findings(self, service: TransformedCode, reach: Reach) -> Iterator[tuple[nodes.NodeNG, dict]]:
        for node, facts in super().findings(service, reach):
            if not isinstance(node.parent, nodes.Expr):
                continue  # `cache = model.init_cache(...)`: a functional cache, returned not stored
            ref = self.owner_class(service, node.func.expr)
            if ref is not None and ref.definition is not None:
                method = service.method_of(ref.definition, "init_cache")
                if method is not None and not _stores_on_self(method):
                    continue
            yield node, facts
    message = (
        "`{receiver}.init_cache(...)` under {traced_by}{where}: Tree Mode silently "
        "drops the new Cache Variables"
    )
    help = (
        "The next decode step then raises 'Autoregressive cache not initialized'. Call `init_cache` "
        "eagerly before the transformed decode loop"
    )
    VALID = [
        Valid(
            "init-cache-outside",
            """
            import jax.numpy as jnp
            from flax import nnx

            def run(x):
                mha = nnx.MultiHeadAttention(num_heads=2, in_features=4, decode=True, rngs=nnx.Rngs(0))
                mha.init_cache(x.shape)
                for _ in range(2):
                    nnx.jit(lambda m, x: m(x))(mha, x)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "init-cache-in-jit",
            """
            from flax import nnx

            @nnx.jit
            def prefill_and_step(m, x):
                m.init_cache(x.shape)  # NNX305
                return m(x)
            """,
            tree_mode=differs("mha.cached_key is None after the call; the next step raises ValueError"),
        ),
    ]

    #: MultiHeadAttention's cache mechanism with names both implementations provide: a slot
    #: declared empty in ``__init__``, filled with a new ``nnx.Cache`` by ``init_cache``.
    _DECODER = """
        class Decoder(nnx.Module):
            def __init__(self):
                self.w = nnx.Param(jnp.ones((4, 4)))
                self.cached_key = nnx.data(None)

            def init_cache(self, shape):
                self.cached_key = nnx.Cache(jnp.zeros(shape))

            def __call__(self, x):
                if self.cached_key is None:
                    raise ValueError("Autoregressive cache not initialized, call ``init_cache`` first.")
                self.cached_key[...] = self.cached_key[...] + x
                return x @ self.w


        model, x = Decoder(), jnp.ones((1, 4))
    """

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """``init_cache`` then a decode step, under the flagged transform; the observation is
        the caller's cache shape (None when the Cache Variables were dropped). The control
        initialises the cache eagerly and only decodes inside ``nnx.jit``."""
        statement, note = _under(facts.get("transform"), "prefill", "model, x", loss="jnp.sum(model(x))")
        main = _code(cls._DECODER) + _code("""
            def prefill(m, x):
                m.init_cache(x.shape)  # creates new Cache Variables
                return m(x)
        """) + note + statement + "\nreturn None if model.cached_key is None else list(model.cached_key.shape)\n"
        control = _code(cls._DECODER) + _code("""
            model.init_cache(x.shape)  # eagerly, before the transformed decode loop
            for _ in range(2):
                nnx.jit(lambda m, x: m(x))(model, x)
            return None if model.cached_key is None else list(model.cached_key.shape)
        """)
        return Reproduction(main, expect_tree=None, expect_graph=[1, 4], control=control)


class TransformOnInit(Rule):
    """An NNX transform decorating `__init__`.

    What it does:
        Flags an NNX transform (`@nnx.vmap`, `@nnx.scan`, `@nnx.pmap`, `@nnx.jit`, ...)
        decorating a class's `__init__`, unless it keeps graph mode.

    Why is this bad?:
        The graph-mode idiom builds stacked layers in place on the traced `self`. A Tree Mode
        transform runs `__init__` on a copy, so every attribute it creates is dropped:
        the object silently has no `linear` at all and the first use raises `AttributeError`.
        Transform a factory that returns the layer and assign the stacked output:
        `self.linear = nnx.vmap(make, in_axes=0)(rngs.split(n))`.

    References:
        - Catalogue row C7 (`r27_vmapped_init_method.py`, rewrite `r27_vmapped_init_method_fix.py`)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX306"
    fixes = ("pin",)
    symbol = "transform-on-init"
    kind = "silent"
    catalogue = ("C7",)
    message = (
        "`@nnx.{transform}` on `{class_name}.__init__`: Tree Mode silently drops the attributes "
        "`__init__` creates on `self`"
    )
    help = (
        "They are created on the traced `self`, and the object ends up without them. Transform a "
        "factory that returns the layer and assign its output: `self.x = nnx.{transform}(make, "
        "...)(...)`"
    )
    VALID = [
        Valid(
            "factory",
            """
            from flax import nnx

            class Stack(nnx.Module):
                def __init__(self, rngs):
                    @nnx.vmap(in_axes=0, out_axes=0)
                    def make(rngs):
                        return nnx.Linear(3, 3, rngs=rngs)
                    self.linear = make(rngs.split(4))

                def __call__(self, x):
                    @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
                    def body(layer, x):
                        return layer(x)
                    return body(self.linear, x)
            """,
        ),
        Valid(
            "compat-decorator",
            """
            from flax import nnx

            class Stack(nnx.Module):
                @nnx.split_rngs(splits=4)
                @nnx.compat.vmap(in_axes=(0, 0), out_axes=0)
                def __init__(self, rngs):
                    self.linear = nnx.Linear(3, 3, rngs=rngs)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "vmapped-init",
            """
            from flax import nnx

            class Stack(nnx.Module):
                @nnx.split_rngs(splits=4)
                @nnx.vmap(in_axes=(0, 0), out_axes=0)  # NNX306
                def __init__(self, rngs):
                    self.linear = nnx.Linear(3, 3, rngs=rngs)
            """,
            tree_mode=differs("Stack(nnx.Rngs(0)) has no attribute 'linear'"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """``__init__`` decorated by the flagged transform (under ``@nnx.split_rngs`` when the
        finding has it) building a layer on ``self``; the observation is whether the object
        has the layer. The control transforms a factory and assigns its output."""
        transform = choice_or(facts.get("transform") or "vmap", TRANSFORMS, "jit")
        note = ""
        if transform in ("vmap", "pmap", "scan"):
            if transform != "vmap":
                note = (f"# found: @nnx.{transform} on __init__; vmap builds the same stacked layer on the traced "
                        "`self`\n# (pmap needs devices, scan cannot carry a Module that gains attributes)\n")
            if facts.get("split_rngs", True):
                decorators, construct = "@nnx.split_rngs(splits=4)\n    @nnx.vmap(in_axes=(0, 0), out_axes=0)", \
                    "Stack(nnx.Rngs(0))"
            else:
                decorators, construct = "@nnx.vmap(in_axes=(0, 0), out_axes=0)", "Stack(nnx.Rngs(0).split(4))"
        else:
            if transform != "jit":
                note = f"# found: @nnx.{transform} on __init__; the same per-call copy of `self` under nnx.jit\n"
            decorators, construct = "@nnx.jit", "Stack(nnx.Rngs(0))"
        main = note + (
            "class Stack(nnx.Module):\n"
            f"    {decorators}\n"
            "    def __init__(self, rngs):\n"
            "        self.linear = nnx.Linear(3, 3, rngs=rngs)  # created on the traced `self`\n\n\n"
            f"m = {construct}\n"
            "return hasattr(m, 'linear')\n"
        )
        control = _code("""
            class Stack(nnx.Module):
                def __init__(self, rngs):
                    @nnx.vmap(in_axes=0, out_axes=0)
                    def make(rngs):
                        return nnx.Linear(3, 3, rngs=rngs)

                    self.linear = make(rngs.split(4))  # the stacked layer is an output of the transform


            m = Stack(nnx.Rngs(0))
            return hasattr(m, 'linear')
        """)
        return Reproduction(main, expect_tree=False, expect_graph=True, control=control)

    def visit_functiondef(self, node: nodes.FunctionDef) -> None:
        if node.name != "__init__" or not isinstance(node.parent, nodes.ClassDef) or node.decorators is None:
            return
        for entry in transformed_code(self.context).entries_of(node):
            if entry.form == "decorator" and entry.affected:
                split = any(self.context.nnx_call(d) is not None and self.context.nnx_call(d).name == "split_rngs"
                            for d in node.decorators.nodes if isinstance(d, nodes.Call))
                self.report(entry.node, transform=entry.transform, class_name=node.parent.name,
                            confidence="transform", split_rngs=split,
                            pin=pin_sites_in(self.context, entry_pin_target(entry), *self._split_rngs_decorators(node)))
                return


    def _split_rngs_decorators(self, function: nodes.FunctionDef) -> list[NNXCall]:
        """``@nnx.split_rngs(...)`` decorators: graph-mode splitting in place is part of the
        pattern, so a pin keeps their graph mode too."""
        calls = [self.context.nnx_call(d) for d in function.decorators.nodes if isinstance(d, nodes.Call)]
        return [c for c in calls if c is not None and c.name == "split_rngs"]


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
        - Catalogue row C10 (`r26_scan_broadcast_and_identity.py`)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX307"
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
    def reproduce(cls, facts: dict) -> Reproduction:
        """A counter Variable on a broadcast (``in_axes=None``) scan argument, written in the
        body of a three-step scan (by ``.value =`` when the finding writes ``.value``); the
        observation is the counter afterwards. The control only reads it.

        Not traced: the observation is the counter's number, which is abstract under a trace."""
        target = facts.get("target_text") or ""
        attr = target.split(".")[1].split("[")[0] if target.count(".") >= 1 else "n"
        attr = attr if is_identifier(attr) and attr not in _RESERVED else "n"
        write = (f"cnt.{attr}.value = cnt.{attr}[...] + 1.0" if target.endswith((".value", ".raw_value"))
                 else f"cnt.{attr}[...] += 1.0")
        model = _code(f"""
            class Counter(nnx.Module):
                def __init__(self):
                    self.{attr} = nnx.BatchStat(jnp.array(0.0))


            cnt = Counter()
        """)
        main = model + _code(f"""
            def body(carry, cnt, x):
                {write}  # a write on the broadcast argument
                return carry + x, None

            nnx.scan(body, in_axes=(nnx.Carry, None, 0), out_axes=(nnx.Carry, 0))(0.0, cnt, jnp.arange(3.0))
            return float(cnt.{attr}[...])
        """)
        control = model + _code(f"""
            def body(carry, cnt, x):
                return carry + x * cnt.{attr}[...], None  # reads only

            nnx.scan(body, in_axes=(nnx.Carry, None, 0), out_axes=(nnx.Carry, 0))(0.0, cnt, jnp.arange(3.0))
            return float(cnt.{attr}[...])
        """)
        return Reproduction(main, expect_tree=3.0, expect_graph=0.0, control=control, traced=False)

    def visit_call(self, node: nodes.Call) -> None:
        service = transformed_code(self.context)
        call = self.context.nnx_call(node)
        if call is None or call.name != "scan" or "in_axes" not in call.keywords:
            return
        if self.context.keeps_graph_mode(call) or explicit_tree(call):
            return
        in_axes = call.keywords["in_axes"]
        functions = [e.function for e in service.entries if e.call is not None and e.call.node is node]
        for function in dict.fromkeys(functions):
            parameters = [a.name for a in (function.args.posonlyargs or []) + (function.args.args or [])]
            if isinstance(in_axes, nodes.Const) and in_axes.value is None:
                broadcast = set(parameters)
            elif isinstance(in_axes, (nodes.Tuple, nodes.List)):
                broadcast = {parameters[i] for i, axis in enumerate(in_axes.elts)
                             if i < len(parameters) and isinstance(axis, nodes.Const) and axis.value is None}
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
                        isinstance(target, nodes.AssignAttr) and target.attrname in _VALUE_ATTRIBUTES):
                    root = root_name(target)
                    if root is not None and root.name in names and _is_parameter_of(root, function):
                        yield node, root.name
                        break


def _target_of(statement):
    return statement.target if isinstance(statement, nodes.AugAssign) else statement.targets[0]


def _is_parameter_of(name: nodes.Name, function) -> bool:
    try:
        scope, assignments = lookup(name)
    except Exception:
        return False
    return scope is function and any(isinstance(a.parent, nodes.Arguments) for a in assignments)


#: `while_loop` is left out: graph mode raises on a new carry there too (same-reference check).
_LOOPS = frozenset({"fori_loop"})


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
        - Catalogue row C9 (`r72_control_flow.py`, rewrite `r72_control_flow_fix.py`)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX308"
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
    def reproduce(cls, facts: dict) -> Reproduction:
        """A ``fori_loop`` body returning the flagged kind of new object (a Module
        construction, ``nnx.clone``, ``nnx.merge`` of new state); Tree Mode rejects it. The
        control updates the input in place and returns it."""
        built = facts.get("built") or ""
        if "clone" in built:
            body = "def body(i, m):\n    return nnx.clone(m)\n"
        elif "merge" in built:
            body = ("def body(i, m):\n    graphdef, state = nnx.split(m)\n"
                    "    return nnx.merge(graphdef, jax.tree.map(lambda a: a + 1, state))\n")
        else:
            body = "def body(i, m):\n    new = M()\n    new.w[...] = m.w[...] + 1\n    return new\n"
        model = _code("""
            class M(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.zeros(()))


        """)
        main = model + "\n\n" + body + "return list(nnx.fori_loop(0, 3, body, M()).w.shape)\n"
        control = model + "\n\n" + _code("""
            def body(i, m):
                m.w[...] += 1
                return m

            return list(nnx.fori_loop(0, 3, body, M()).w.shape)
        """)
        return Reproduction(main, expect_error="carry-identity", control=control)

    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        if call is None or call.name not in _LOOPS:
            return
        service = transformed_code(self.context)
        for entry in service.entries:
            if entry.call is None or entry.call.node is not node or not entry.affected:
                continue
            if call.name == "while_loop":
                body = call.args[1] if len(call.args) > 1 else call.keywords.get("body_fun")
                if not any(f is entry.function for f in service.functions_of(body)):
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
                if not self._unpacked_from_split(argument):
                    return False
            else:
                return False
        return True

    def _unpacked_from_split(self, name: nodes.Name) -> bool:
        try:
            _scope, assignments = lookup(name)
        except Exception:
            return False
        for assignment in assignments:
            parent = assignment.parent
            if not (isinstance(parent, nodes.Tuple) and isinstance(parent.parent, nodes.Assign)):
                return False
            split = self.context.nnx_call(parent.parent.value)
            if split is None or split.name != "split":
                return False
        return bool(assignments)

    def _built(self, value: nodes.NodeNG, depth: int) -> str | None:
        if isinstance(value, nodes.Name) and depth < 3:
            from nnx_lint.flow import bound_values

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
        if ref is None or ref.qualified_name in VARIABLE_TYPES:
            return None
        if ref.definition is not None and self.context.classes.info(ref.definition).is_nnx_module:
            return f"`{ref.short_name}(...)`"
        return None
