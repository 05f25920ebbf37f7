"""NNX109 ``module-holds-itself``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from typing import ClassVar

from dataclasses import dataclass

from astroid import nodes

from checkers.shared_references.messages import self_text, short_source
from checkers.shared_references.base import ClassAliasRule
from checkers.shared_references.reproduction import BOX, REPRO_TRANSFORMS, applied, dedented, emit_tree, path_parts
from nnx_lint.api import (
    Facts,
    Invalid,
    Ref,
    Reproduction,
    STATEFUL_KINDS,
    SelfReference,
    Valid,
    fact_index,
    inside,
    join_path,
    programs,
    raises,
    shared_objects,
    value_model,
)


@dataclass(frozen=True, kw_only=True)
class ModuleHoldsItselfFacts(Facts):
    """What NNX109 saw, in this order."""

    #: The shared object's paths, as flax's aliasing errors name them (``Facts.paths``).
    paths: ClassVar[tuple[tuple[str, ...], ...]] = (("path",),)

    #: The class whose construction makes the cycle (None: a store after construction).
    class_name: str | None
    #: Source text of the object that holds itself: ``self``, ``self.block``, ``model``.
    holder: str
    #: Where the back-reference sits, from the instance (or object): ``sub``, ``child.owner``.
    path: str
    #: The node it points back to, from the instance: ``""`` for the instance itself.
    target: str
    #: The child class whose ``__init__`` keeps the back-reference (``Child(self)``), if any.
    via_class: str | None
    #: Whether the node holds Variables (the cycle breaks Tree Mode either way).
    holds_variables: bool
    after_construction: bool
    used_with: str | None
    confidence: str
    pin: list
    pin_every_use: bool


class ModuleHoldsItself(ClassAliasRule):
    """A Module stores itself (or a Module that holds it) below itself: a cycle.

    What it does:
        Replays each NNX Module class's construction (as NNX101 does) and flags the store
        that puts the instance, or a Module inside it, below itself: `self.sub = self`,
        `self.child = Child(self)` when `Child.__init__` keeps `self.owner = owner` (in any
        file), `self.blocks = nnx.List([Block(self)])`, `self.block.up = self.block`. Outside
        class bodies it flags `model.loop = model` (also `model.a.back = model`) on an object
        the same function (or module) builds and hands to an NNX transform or graph API
        that does not keep graph mode. Related locations list the child's store and where
        the object was built.

        A cycle breaks Tree Mode whether or not the Module holds Variables, so, unlike
        NNX101, Variable-free Modules are flagged too. Silent when everything between the
        Module and the back-reference is not a graph node (a plain Python helper object is
        a static leaf to flax), for `weakref.ref(owner)`, for a back-reference deleted or
        overwritten before construction ends (or, after construction, deleted later in the
        same scope), and with NNX101's opt-in policy: a scope that keeps graph mode, every
        use in the file keeping graph mode or choosing Tree Mode explicitly (`graph=False`:
        that code fails today already), or a class local to a function whose instances
        never reach an NNX API there (a latent risk).

    Why is this bad?:
        Graph mode walks Modules as a graph and handles cycles. Tree Mode treats them as
        pytrees, and a pytree cannot contain itself: every NNX transform (`nnx.jit`,
        `nnx.grad`, `nnx.vmap`, `nnx.remat`, `nnx.cond`, `nnx.eval_shape`, ...) and
        `model.eval()` / `nnx.iter_graph` flatten without end (`RecursionError`) or report
        `ValueError: Cycle detected ... Cycles are not supported with graph=False`, and
        `nnx.split` / `nnx.state` / `nnx.clone` / `nnx.Optimizer` raise `ValueError:
        Duplicate Param ... does not support shared references` when the Module holds
        Variables (checked with flax 0.12.8, both modes). `jax.tree.leaves(model)` and
        `jax.jit` recurse in both modes.

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references) — pattern [A11](../catalogue.md#a11)
        - {spec}
    """

    code = "NNX109"
    facts_type = ModuleHoldsItselfFacts
    fixes = ("pin",)
    symbol = "module-holds-itself"
    kind = "raises"
    catalogue = ("A11",)
    category = "self-reference"
    message = (
        "`{class_name}` stores `{holder}` below itself (`self.{path}`), a cycle: Tree Mode raises "
        "RecursionError or ValueError"
    )
    help = (
        "Tree Mode treats Modules as pytrees, which cannot contain themselves. Do not store the owner: "
        "pass it to the method that needs it, or keep `weakref.ref(owner)`; or keep graph mode "
        "(`graph=True` / `nnx.compat.*`) at every use"
    )
    #: A cycle made after construction (``model.loop = model``).
    object_message = (
        "`{holder}` is stored below itself (`{holder}.{path}`), a cycle: Tree Mode raises RecursionError "
        "or ValueError"
    )
    VALID = [
        Valid(
            "pass-the-owner-or-weakref",
            """
            import weakref
            import jax.numpy as jnp
            from flax import nnx

            class Head(nnx.Module):
                def __init__(self, owner, rngs):
                    self._owner = weakref.ref(owner)
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                def __call__(self, owner, x):
                    return self.lin(x) * owner.scale[...]

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.scale = nnx.Param(jnp.ones(2))
                    self.head = Head(self, rngs)
                def __call__(self, x):
                    return self.head(self, x)

            y = nnx.jit(lambda m, x: m(x))(Model(nnx.Rngs(0)), jnp.ones((1, 2)))
            """,
        ),
        Valid(
            "plain-helper-or-deleted",
            """
            from flax import nnx

            class Logger:
                def __init__(self, owner):
                    self.owner = owner

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                    self.logger = Logger(self)
                    self.sub = self
                    del self.sub

            model = Model(nnx.Rngs(0))
            model.loop = model
            del model.loop
            graphdef, state = nnx.split(model)
            """,
        ),
        Valid(
            "graph-mode-kept",
            """
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                    self.sub = self

            model = Model(nnx.Rngs(0))
            y = nnx.jit(lambda m: None, graph=True, graph_updates=True)(model)
            state = nnx.state(model, graph=True)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "module-stores-itself",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                    self.sub = self  # NNX109
                def __call__(self, x):
                    return self.lin(x)

            y = nnx.jit(lambda m, x: m(x))(Model(nnx.Rngs(0)), jnp.ones((1, 2)))
            """,
            tree_mode=raises("RecursionError", "maximum recursion depth"),
        ),
        Invalid(
            "child-keeps-its-parent",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Child(nnx.Module):
                def __init__(self, owner, rngs):
                    self.owner = owner
                    self.lin = nnx.Linear(2, 2, rngs=rngs)

            class Parent(nnx.Module):
                def __init__(self, rngs):
                    self.child = Child(self, rngs)  # NNX109
                def __call__(self, x):
                    return self.child.lin(x)

            grads = nnx.grad(lambda m: m(jnp.ones((1, 2))).sum())(Parent(nnx.Rngs(0)))
            """,
            tree_mode=raises("RecursionError", "maximum recursion depth"),
        ),
        Invalid(
            "cycle-after-construction",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Stats(nnx.Module):
                def __init__(self):
                    self.mean = jnp.zeros(2)

            stats = Stats()
            stats.loop = stats  # NNX109
            y = nnx.jit(lambda s: s.mean + 1)(stats)
            """,
            tree_mode=raises("RecursionError", "maximum recursion depth"),
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._after: list[tuple[nodes.AssignAttr, Ref, Ref]] = []
        #: Ref -> the NNX APIs the object meets without graph mode (for --confirm)
        self._object_use_names: dict[Ref, list[str]] = {}

    def _record_use(self, expression, keeps, name=None, pin_target=None) -> None:
        # A use that chooses Tree Mode explicitly fails today already: no change to report.
        chosen = pin_target is not None and self.context.mode.chooses_tree_mode(pin_target)
        super()._record_use(expression, keeps or chosen, name, pin_target)
        ref = self.classes.ref_of(expression) if not isinstance(expression, (nodes.Tuple, nodes.List, nodes.Dict)) \
            else None
        if ref is not None and not (keeps or chosen) and name:
            self._object_use_names.setdefault(ref, []).append(name)

    def visit_module(self, node: nodes.Module) -> None:
        values = value_model(self.context)
        scopes = [node] + fact_index(self.context).functions_in(node)
        for scope in scopes:
            for back in values.back_references_in(scope):
                self._after.append((back.node, back.holder, back.value))

    def leave_module(self, node: nodes.Module) -> None:
        self._fold_uses()
        reported: set[tuple[int, int]] = set()
        for classdef in self._classdefs:
            if not self.uses.may_break(classdef):
                continue
            for reference in self.classes.construction(classdef).self_references:
                where = reference.store.origin
                if where.root() is not self.context.module or not inside(where, classdef):
                    continue
                if (where.lineno, where.col_offset) in reported:
                    continue
                if self.context.mode.scope_keeps_graph_mode(where, transform=True):
                    continue
                reported.add((where.lineno, where.col_offset))
                self.report(where, related=self._class_sites(reference), **self._class_facts(classdef, reference))
        for store, holder, value in self._after:
            if self.context.mode.scope_keeps_graph_mode(store, transform=True):
                continue
            root = Ref(value.root)
            uses = self._object_uses.get(root)
            # An object this scope builds, which reaches an NNX API here that does not keep
            # graph mode. (A parameter may come from graph-mode code: `m.ref = m` inside an
            # `nnx.jit(graph=True)` function; an object no NNX API sees here is a latent risk.)
            if value.root[0] != "new" or not uses or all(uses):
                continue
            self.report(store, message=self.object_message, related=self._object_sites(value),
                        **self._object_facts(store, holder, value, root))

    # -- facts and locations ---------------------------------------------------------------
    def _class_facts(self, classdef: nodes.ClassDef, reference: SelfReference) -> dict:
        child = shared_objects.child_store_of(self.classes, reference.store)
        return {
            "class_name": classdef.name,
            "holder": self_text(reference.target),
            "path": join_path(reference.store.path),
            "target": join_path(reference.target),
            "via_class": child[1] if child else None,
            "holds_variables": shared_objects.holds_state_besides_cycles(self.classes, classdef, reference.target),
            "after_construction": False,
            "used_with": next(iter(self._use_names.get(id(classdef), [])), None),
            "confidence": "static",
            **self._pin_facts(id(classdef)),
        }

    def _class_sites(self, reference: SelfReference) -> list[tuple[nodes.NodeNG, str]]:
        """Where a child class keeps the back-reference (``self.owner = owner`` in
        ``Child.__init__``, in whatever file), and the store itself when a helper or base
        class makes it."""
        store, sites = reference.store, []
        if store.node is not store.origin:
            sites.append((store.node, f"`{self_text(store.path)}` stored here"))
        child = shared_objects.child_store_of(self.classes, store)
        if child is not None:
            node, name, path = child
            sites.append((node, f"`{self_text(path)}` keeps the owner here, in `{name}`"))
        return sites

    def _object_facts(self, store: nodes.AssignAttr, holder: Ref, value: Ref, root: Ref) -> dict:
        used = self._object_use_names.get(root, [])
        return {
            "class_name": None,
            "holder": short_source(store.parent.value) if isinstance(store.parent, nodes.Assign) else value.describe(),
            "path": join_path(holder.path[len(value.path):]),
            "target": join_path(value.path),
            "via_class": None,
            "holds_variables": self.classes.kind_of(value) in STATEFUL_KINDS,
            "after_construction": True,
            "used_with": used[0] if used else None,
            "confidence": "static",
            **self._pin_facts(root),
        }

    def _object_sites(self, value: Ref) -> list[tuple[nodes.NodeNG, str]]:
        origin = value.root[1] if value.root[0] == "new" else None
        return [(origin, "the object is built here")] if isinstance(origin, nodes.Call) else []

    # -- reproduction ----------------------------------------------------------------------
    @classmethod
    def reproduce(cls, facts: ModuleHoldsItselfFacts) -> Reproduction:
        """The finding's class (its name; a Param, or only a plain array, as the finding
        says), with the back-reference at the finding's path (a `Box` stands for each
        Module in between, such as the child class that keeps its owner), given to the
        transform the file uses it with (`used_with`), or to `nnx.jit` for anything else
        (graph APIs raise a different error when the Module holds Variables, see above).
        Control: the same class without the back-reference."""
        parts = path_parts(facts.path)
        target = path_parts(facts.target)
        if not parts or len(target) >= len(parts) or target != parts[:len(target)]:
            raise programs.UnsafeFact("%s is not below %s" % (programs.shown(facts.path), programs.shown(facts.target)))
        if not isinstance(parts[0], str):
            raise programs.UnsafeFact("the path %s does not start with an attribute" % programs.shown(facts.path))
        class_name = programs.identifier(facts.class_name, "the class name") if facts.class_name else "Model"
        state = "nnx.Param(jnp.ones(2))" if facts.holds_variables else "jnp.ones(2)"
        state_name = "weight_" if parts[0] == "weight" else "weight"
        parent, last = parts[:-1], parts[-1]

        def build(with_cycle: bool) -> str:
            lines = [programs.set_attribute("self", state_name, state)]
            if parent:  # the Modules between the instance and the back-reference
                tree: dict = {}
                node = tree
                for part in parent[:-1]:
                    node = node.setdefault(part, {})
                node[parent[-1]] = "Box()"
                lines.append(programs.set_attribute("self", parts[0], emit_tree(tree[parts[0]])))
            if with_cycle:
                owner, back = programs.access("self", parent), programs.access("self", target)
                if isinstance(last, int):
                    lines.append(programs.assign(programs.subscript(owner, last), back))
                else:
                    lines.append(programs.set_attribute(owner, last, back))
            return programs.filled("class CLASS(nnx.Module):\n    def __init__(self):\n        STORES\n\n"
                                   "model = CLASS()\n", {"CLASS": class_name},
                                   statements={"STORES": programs.lines(*lines)})

        use = facts.used_with if facts.used_with in REPRO_TRANSFORMS else "jit"
        definition, call = applied(use, {"args[0]": "model"})
        apply = programs.lines(definition, call, "return 'ran'")
        return Reproduction(dedented(BOX, build(True), apply), expect_error="cycle",
                            control=dedented(BOX, build(False), apply))
