"""Objects reached twice: how the file's calls use objects and instances of project classes
(given to a graph API, a transform or an Optimizer, with or without graph mode), the shape of
an alias a class's construction makes, and two arguments that hold one object. The shared
references rules ask it as ``nnx_lint.api.shared_objects``."""
from __future__ import annotations

from astroid import nodes

from nnx_lint.analysis.calls import NNXCall
from nnx_lint.analysis.fact_index import fact_index
from nnx_lint.analysis.class_info import ClassRef, assigned_value
from nnx_lint.analysis.flow import expressions_within, inside
from nnx_lint.analysis.pin_sites import pin_sites, pin_sites_in
from nnx_lint.analysis.refs import SHARED_KINDS, STATEFUL_KINDS, Alias, Ref, StoreEvent, join_path
from nnx_lint.analysis.transform_types import Argument
from nnx_lint.base.node_index import nodes_of_class
from nnx_lint.flax_table import table as flax_table

__all__ = [
    "graph_uses", "GraphUses", "alias_shape", "alias_category", "overlapping_pair", "relative_parts", "self_path_parts",
    "child_stores", "child_store_of", "holds_state_besides_cycles", "alias_location", "ClassUses",
]


def alias_shape(alias: Alias) -> dict:
    """What a reproduction needs beyond the paths: which part of the shared object each
    path holds (``rngs`` and ``rngs.dropout``: ``""`` and ``"dropout"``) and the container."""
    first_ref = alias.first.ref if alias.first is not None else None
    first_part = second_part = ""
    if first_ref is not None and first_ref.overlaps(alias.ref):
        common = min(len(first_ref.path), len(alias.ref.path))
        first_part, second_part = join_path(first_ref.path[common:]), join_path(alias.ref.path[common:])
    return {"first_part": first_part, "second_part": second_part,
            "container_type": _container_type(alias.second.container)}


def _container_type(container: nodes.NodeNG | None) -> str | None:
    """``List`` / ``Sequential`` / ``Dict`` for ``nnx.*`` containers, ``list`` etc. for literals."""
    if isinstance(container, nodes.Call):
        func = container.func
        name = func.attrname if isinstance(func, nodes.Attribute) else getattr(func, "name", None)
        return name if name in flax_table.CONTAINER_NAMES else None
    if isinstance(container, (nodes.List, nodes.ListComp, nodes.BinOp)):
        return "list"
    if isinstance(container, (nodes.Tuple, nodes.Dict)):
        return type(container).__name__.lower()
    return None


def alias_category(alias: Alias) -> str:
    """``rngs``, ``container`` (two elements of one container) or ``attribute``: the shape of an alias."""
    first, second = alias.first, alias.second
    if alias.kind == "rngs":
        return "rngs"
    if first is not None and first.container is not None and first.container is second.container:
        return "container"
    a, b = alias.first_path, second.path
    if len(a) == len(b) and a[:-1] == b[:-1] and a[-1:] and a[-1].startswith("[") and b[-1].startswith("["):
        return "container"
    return "attribute"


def overlapping_pair(classes, refs: list[tuple[Argument, Ref | None]]):
    """The first two arguments denoting the same stateful object (or one and its part)."""
    for i, (first, ref_a) in enumerate(refs):
        if ref_a is None:
            continue
        for second, ref_b in refs[i + 1:]:
            if ref_b is None or not ref_a.overlaps(ref_b):
                continue
            kinds = (classes.kind_of(ref_a), classes.kind_of(ref_b))
            if all(kind in SHARED_KINDS for kind in kinds):
                return first, ref_a, second, ref_b, kinds
    return None


def relative_parts(ref_a: Ref, ref_b: Ref) -> tuple[str, str]:
    """The attribute paths of two overlapping refs below their common object
    (``model`` and ``model.encoder``: ``""`` and ``"encoder"``); state-view parts dropped."""
    a = tuple(p for p in ref_a.path if not p.startswith("<"))
    b = tuple(p for p in ref_b.path if not p.startswith("<"))
    common = min(len(a), len(b))
    return join_path(a[common:]), join_path(b[common:])



def self_path_parts(target: nodes.AssignAttr) -> tuple[str, ...]:
    """``("noise",)`` for ``self.noise = ...``; ``("a", "b")`` for ``self.a.b = ...``."""
    parts = [target.attrname]
    current = target.expr
    while isinstance(current, nodes.Attribute):
        parts.insert(0, current.attrname)
        current = current.expr
    return tuple(parts)


def child_stores(classes, alias: Alias) -> list[tuple[StoreEvent, tuple[str, ...], ClassRef]]:
    """Where a child class keeps the shared argument (``self.noise = Noise(rngs)`` and
    ``Noise.__init__`` stores ``self.rngs = rngs``), in whatever file the child lives: per store of
    the alias, the child's store, the path below the child and the child's class."""
    found = []
    for event in (alias.first, alias.second):
        value = assigned_value(event.node) if event is not None and isinstance(event.node, nodes.AssignAttr) else None
        if event is None or not isinstance(value, nodes.Call):
            continue
        child = classes.class_of(value)
        if child is None or child.definition is None:
            continue
        own = len(self_path_parts(event.node))
        rest = event.path[own:]
        for inner in classes.construction(child.definition).events:
            if inner.path == rest and not inner.deleted:
                found.append((inner, rest, child))
                break
    return found


def child_store_of(classes, store: StoreEvent) -> tuple[nodes.NodeNG, str, tuple[str, ...]] | None:
    """``(node, class name, path)`` of the store in a child class's ``__init__`` (in whatever file)
    that keeps the constructor argument a store puts below the instance: ``self.child = Child(self)``
    and ``Child.__init__`` storing ``self.owner = owner``, also through list elements and NNX
    containers of them (``nnx.List([Child(self)])``, a comprehension building every element)."""
    if not isinstance(store.node, nodes.AssignAttr):
        return None
    own = len(self_path_parts(store.node))
    value, rest = assigned_value(store.node), store.path[own:]
    while rest and isinstance(value, (nodes.Call, nodes.List, nodes.Tuple, nodes.ListComp)):
        child = classes.class_of(value) if isinstance(value, nodes.Call) else None
        if child is not None and child.definition is not None:
            for inner in classes.construction(child.definition).events:
                if inner.path == rest and not inner.deleted:
                    return inner.node, child.short_name, rest
            return None
        # a list (or an NNX container of one: nnx.List([Child(self)])): the element at the next position
        elements = value if not isinstance(value, nodes.Call) else (value.args[0] if value.args else None)
        if isinstance(elements, nodes.ListComp) and rest[0].startswith("["):
            value, rest = elements.elt, rest[1:]  # every element is built by the one expression
            continue
        index = int(rest[0][1:-1]) if rest[0].startswith("[") and rest[0][1:-1].isdigit() else -1
        if not isinstance(elements, (nodes.List, nodes.Tuple)) or not 0 <= index < len(elements.elts):
            return None
        value, rest = elements.elts[index], rest[1:]
    return None


def holds_state_besides_cycles(classes, classdef: nodes.ClassDef, target: tuple[str, ...]) -> bool:
    """Whether the node at ``target`` below an instance of ``classdef`` (``()``: the instance) holds
    Variables apart from the back-references its construction makes: a store below it of a Variable,
    an Rngs, a State or a Module, leaving out the back-references and the Modules they sit in (a
    child kept only for its owner would count otherwise)."""
    construction = classes.construction(classdef)
    cycles = [reference.store.path for reference in construction.self_references]
    for event in construction.events:
        if event.deleted or event.ref is None or event.path[:len(target)] != target:
            continue
        if event.ref.root == ("self", classdef) or any(path[:len(event.path)] == event.path for path in cycles):
            continue
        if classes.kind_of(event.ref) in STATEFUL_KINDS:
            return True
    return False


def alias_location(context, classdef: nodes.ClassDef, alias: Alias, category: str) -> nodes.NodeNG | None:
    """Where an alias of ``category`` made by ``classdef``'s construction is reported: its second
    store (or container) when it is in ``classdef`` and this file; None when both stores come from a
    base class, which reports it (unless only ``classdef``'s arguments tie them)."""
    classes = context.classes
    second = alias.second
    where = second.container if category == "container" and second.container is not None else second.origin
    if not inside(where, classdef):
        where = second.origin
    if where.root() is not context.module or not inside(where, classdef):
        return None
    if not inside(second.node, classdef) and alias.first is not None and not inside(alias.first.node, classdef):
        # Both stores come from a base class: reported there, unless only our arguments tie them.
        owner = second.node.frame()
        owner = owner.parent if isinstance(owner, nodes.FunctionDef) else None
        if isinstance(owner, nodes.ClassDef):
            base = classes.construction(owner)
            if any(a.second.node is second.node for a in base.aliases):
                return None
    return where


class ClassUses:
    """The file's uses (:class:`GraphUses`' events) folded per class and per object: whether
    each use keeps graph mode, the NNX APIs an instance meets without it, and the call a pin fix
    would set graph mode on."""

    def __init__(self, classes) -> None:
        self.classes = classes
        #: id(ClassDef) -> [keeps graph mode?] for each use of an instance in this file
        self.per_class: dict[int, list[bool]] = {}
        #: the same per object (Ref), for containers built outside classes
        self.per_object: dict[Ref, list[bool]] = {}
        #: id(ClassDef) -> the NNX APIs its instances meet without graph mode (for --confirm)
        self.names: dict[int, list[str]] = {}
        #: id(ClassDef) / Ref -> the NNX call a pin fix would set graph mode on, for each use
        #: that does not keep it (None: a use no call keyword can pin, e.g. ``model.eval()``)
        self.pin_targets: dict[object, list[NNXCall | None]] = {}

    def fold(self, events: list[tuple], record) -> None:
        """Fold ``events`` in: a construction directly, each use through ``record`` (:meth:`record`,
        or a refinement of it)."""
        for event in events:
            if event[0] == "construct":
                self.per_class.setdefault(event[1], []).append(event[2])
            else:
                record(*event[1:])

    def may_break(self, classdef: nodes.ClassDef) -> bool:
        """Whether ``classdef``'s construction findings count: an NNX Module that not every use in
        this file opts into graph mode, and that is defined at module level or used here. (A class
        local to a function, a test's, whose instances never reach a transform, graph API or
        Optimizer here, and which no other file can import, is a latent risk, not a break.)"""
        if not self.classes.info(classdef).is_nnx_module:
            return False
        uses = self.per_class.get(id(classdef))
        if uses and all(uses):
            return False  # every use in this file opts the class into graph mode
        return bool(uses) or isinstance(classdef.parent, nodes.Module)

    def pin_sites(self, context, key: object) -> tuple[list, bool]:
        """The ``pin`` sites of the uses of a class (``id(ClassDef)``) or object (its Ref) that do
        not keep graph mode, and whether they are all of its uses in this file."""
        targets = self.pin_targets.get(key, [])
        known = pin_sites(*targets, module=context.module)
        every_use = (bool(targets) and None not in targets
                     and len(known) == len(dict.fromkeys(id(t.node) for t in targets)))
        return pin_sites_in(context, *targets), every_use

    def record(self, expression: nodes.NodeNG, keeps: bool, name: str | None = None,
               pin_target: NNXCall | None = None) -> None:
        """One use of the object ``expression`` is (and of its class, for ``self``'s instances)."""
        if isinstance(expression, (nodes.Tuple, nodes.List, nodes.Dict)):
            return
        object_ref = self.classes.ref_of(expression)
        if object_ref is not None:
            self.per_object.setdefault(object_ref, []).append(keeps)
            if not keeps:
                self.pin_targets.setdefault(object_ref, []).append(pin_target)
        ref = self.classes.class_of_self(expression)
        if ref is not None and ref.definition is not None:
            self.per_class.setdefault(id(ref.definition), []).append(keeps)
            if not keeps:
                self.pin_targets.setdefault(id(ref.definition), []).append(pin_target)
            if not keeps and name:
                self.names.setdefault(id(ref.definition), []).append(name)


def graph_uses(context) -> GraphUses:
    """The file's (memoised) :class:`GraphUses`."""
    return context.service(GraphUses)


class GraphUses:
    """How the file's calls use objects and instances of project classes: given to a graph
    API, a transform or an Optimizer, with or without graph mode. Every class-alias rule
    needs the same record; it is made once per call (by the first rule the walk gives the
    call to), from the file's fact index, and each rule reads it back when the walk is over."""

    def __init__(self, context) -> None:
        self.context = context
        self.facts = fact_index(context)
        self.classes = context.classes
        self._recorded: set[int] = set()
        #: In the walk's order: ``("construct", id(ClassDef), keeps)`` for a class constructed
        #: in a lambda given to an NNX call, ``("use", expression, keeps, name, pin target)``.
        self.events: list[tuple] = []
        self._plain: ClassUses | None = None

    def fold_into(self, uses: ClassUses, record=None) -> ClassUses:
        """``uses`` with the events folded by ``record`` (a rule's refinement of
        :meth:`ClassUses.record`); without one, the fold every plain rule shares (:meth:`plain_fold`)."""
        if record is None:
            return self.plain_fold(uses.classes)
        uses.fold(self.events, record)
        return uses

    def plain_fold(self, classes) -> ClassUses:
        """The events folded with :meth:`ClassUses.record` (no rule's refinement), once for every
        rule that reads them so, when the walk is over (the rules only read it)."""
        if self._plain is None:
            self._plain = ClassUses(classes)
            self._plain.fold(self.events, self._plain.record)
        return self._plain

    def record(self, node: nodes.Call) -> None:
        """Record the uses ``node`` makes (once per call, however many rules ask)."""
        if id(node) in self._recorded:
            return
        self._recorded.add(id(node))
        call = self.facts.nnx_call(node)
        if call is not None:
            self._constructions_inside(call)
        if call is not None and call.args and (call.is_graph_api or call.name in flax_table.GRAPH_USE_APIS):
            # an explicit graph flag either way leaves the call as it is at the flip: graph=True
            # keeps graph mode, graph=False rejects shared Variables today already
            keeps = call.is_compat or self.context.mode.call_mode(call).graph is not None
            self.events.append(("use", call.args[0], keeps, call.name,
                                call if call.is_graph_api or call.is_transform else None))
            return
        if isinstance(node.func, nodes.Attribute) and node.func.attrname in flax_table.MODE_SWITCH_METHODS:
            if self.classes.class_of_self(node.func.expr) is not None:
                keyword = next((k.value for k in node.keywords or [] if k.arg == "graph"), None)
                keeps = isinstance(keyword, nodes.Const) and isinstance(keyword.value, bool)
                keeps = keeps or self.context.mode.scope_keeps_graph_mode(node, transform=False)
                self.events.append(("use", node.func.expr, keeps, node.func.attrname, None))
            return
        use = self.facts.application(node)
        if use is not None:
            for argument in use.arguments:
                for expression, _reference in expressions_within(argument.expression, depth=1):
                    self.events.append(("use", expression, use.accepts_shared_inputs, use.name, use.transform))

    def _constructions_inside(self, call: NNXCall) -> None:
        """``nnx.compat.get_abstract_model(lambda: Foo(...), mesh)``: Foo is used by that call."""
        lambdas = [a for a in list(call.args) + list(call.keywords.values()) if isinstance(a, nodes.Lambda)]
        if not lambdas:
            return
        mode = self.context.mode.call_mode(call)
        keeps = mode.graph is False or (
            mode.graph is True and (mode.graph_updates is True or call.name not in flax_table.ALIAS_CHECKING_WITHOUT_UPDATES))
        for function in lambdas:
            for inner in nodes_of_class(function.body, nodes.Call):
                ref = self.classes.class_of(inner)
                if ref is not None and ref.definition is not None:
                    self.events.append(("construct", id(ref.definition), keeps))
