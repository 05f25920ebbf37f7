"""The shared references family's base rule classes: the family's services and the class-alias rules'
base (the returns rules' base is in :mod:`checkers.shared_references.returns`)."""
from __future__ import annotations

from typing import ClassVar

from dataclasses import dataclass

from astroid import nodes

from checkers.shared_references.analysis import (
    KIND_WORDS,
    alias_category,
    alias_shape,
    inside,
    self_text,
    short_source,
)
from nnx_lint.api import (
    Alias,
    assigned_value,
    expressions_within,
    fact_index,
    Facts,
    flax_table,
    join_path,
    NNXCall,
    object_flow,
    pin_sites,
    pin_sites_in,
    Ref,
    Rule,
    transform_resolver,
)


_SPEC = "[FLIP 5310](https://github.com/google/flax/issues/5310)"


class FamilyRule(Rule):
    """Services every NNX1xx rule uses (no ``code``: not a rule itself)."""

    def __init_subclass__(cls, **kwargs) -> None:
        # The family's docstrings cite the spec as ``{spec}``: one link text for all of them.
        super().__init_subclass__(**kwargs)
        if cls.__doc__:
            cls.__doc__ = cls.__doc__.replace("{spec}", _SPEC)

    def __init__(self, context) -> None:
        super().__init__(context)
        self.finder = transform_resolver(context)

    @property
    def classes(self):
        return self.context.classes

    def kind_of_expression(self, expression: nodes.NodeNG | None) -> str | None:
        return self.classes.kind_of(self.classes.ref_of(expression))


def self_path_parts(target: nodes.AssignAttr) -> tuple[str, ...]:
    """``("noise",)`` for ``self.noise = ...``; ``("a", "b")`` for ``self.a.b = ...``."""
    parts = [target.attrname]
    current = target.expr
    while isinstance(current, nodes.Attribute):
        parts.insert(0, current.attrname)
        current = current.expr
    return tuple(parts)


def _store_sites(alias: Alias, where: nodes.NodeNG) -> list[tuple[nodes.NodeNG, str]]:
    """Every store the finding involves (also in a child's or base class's ``__init__``, in
    any file), as related locations; the reported line itself is left out."""
    sites = []
    if alias.first is not None:
        sites.append((alias.first.node, f"`{self_text(alias.first_path)}` stored here"))
    if alias.second.node is not where:
        sites.append((alias.second.node, f"`{self_text(alias.second.path)}` stored here"))
    return sites


@dataclass(frozen=True, kw_only=True)
class ClassAliasFacts(Facts):
    """What the class-alias rules (NNX101, NNX102, NNX105) report, in this order."""

    #: The shared object's paths, as flax's aliasing errors name them (``Facts.paths``).
    paths: ClassVar[tuple[tuple[str, ...], ...]] = (("first_path",), ("second_path",))

    class_name: str
    first_path: str
    second_path: str
    kind: str
    shared: str
    container: str | None
    conditional: bool
    stored_in: str | None
    confidence: str
    first_part: str
    second_part: str
    container_type: str | None
    used_with: str | None
    pin: list
    pin_every_use: bool


class ClassAliasRule(FamilyRule):
    """Replays each NNX class of the file and reports the aliases of one category."""

    facts_type = ClassAliasFacts

    category: str

    def __init__(self, context) -> None:
        super().__init__(context)
        self._classdefs: list[nodes.ClassDef] = []
        #: id(ClassDef) -> [keeps graph mode?] for each use of an instance in this file
        self._uses: dict[int, list[bool]] = {}
        #: the same per object (Ref), for containers built outside classes
        self._object_uses: dict[Ref, list[bool]] = {}
        #: id(ClassDef) -> the NNX APIs its instances meet without graph mode (for --confirm)
        self._use_names: dict[int, list[str]] = {}
        #: id(ClassDef) / Ref -> the NNX call a pin fix would set graph mode on, for each use
        #: that does not keep it (None: a use no call keyword can pin, e.g. ``model.eval()``)
        self._pin_targets: dict[object, list[NNXCall | None]] = {}
        self._folded = False  # the file's uses are read into the tables above once (_fold_uses)

    def visit_classdef(self, node: nodes.ClassDef) -> None:
        self._classdefs.append(node)

    def visit_call(self, node: nodes.Call) -> None:
        """Record how instances of project classes are used (for the class opt-in): once per
        call for all the class-alias rules (:class:`GraphUses`), read back by each at the end."""
        graph_uses(self.context).record(node)

    def _fold_uses(self) -> None:
        """This rule's view of the file's uses (:meth:`_record_use`, which a rule may refine),
        taken once, when the walk is over."""
        if self._folded:
            return
        self._folded = True
        for event in graph_uses(self.context).events:
            if event[0] == "construct":
                self._uses.setdefault(event[1], []).append(event[2])
            else:
                self._record_use(*event[1:])

    def _record_use(self, expression: nodes.NodeNG, keeps: bool, name: str | None = None,
                    pin_target: NNXCall | None = None) -> None:
        if isinstance(expression, (nodes.Tuple, nodes.List, nodes.Dict)):
            return
        object_ref = self.classes.ref_of(expression)
        if object_ref is not None:
            self._object_uses.setdefault(object_ref, []).append(keeps)
            if not keeps:
                self._pin_targets.setdefault(object_ref, []).append(pin_target)
        ref = self.classes.class_of_self(expression)
        if ref is not None and ref.definition is not None:
            self._uses.setdefault(id(ref.definition), []).append(keeps)
            if not keeps:
                self._pin_targets.setdefault(id(ref.definition), []).append(pin_target)
            if not keeps and name:
                self._use_names.setdefault(id(ref.definition), []).append(name)

    def leave_module(self, node: nodes.Module) -> None:
        self._fold_uses()
        reported: set[tuple[int, int]] = set()
        for classdef in self._classdefs:
            info = self.classes.info(classdef)
            if not info.is_nnx_module:
                continue
            uses = self._uses.get(id(classdef))
            if uses and all(uses):
                continue  # every use in this file opts the class into graph mode
            if not uses and not isinstance(classdef.parent, nodes.Module):
                # A latent risk, not a break: a class local to a function (a test builds it)
                # whose instances never reach a transform, graph API or Optimizer here, and
                # which no other file can import. Module-level classes are always reported.
                continue
            construction = self.classes.construction(classdef)
            for alias in construction.aliases:
                if alias_category(alias) != self.category:
                    continue
                where = self._location(classdef, alias)
                if where is None or (where.lineno, where.col_offset) in reported:
                    continue
                if self.context.mode.scope_keeps_graph_mode(where, transform=True):
                    continue
                if object_flow.leaves_the_tree(object_flow.object_model(self.context), classdef, alias.second.path):
                    continue  # held by a plain Python object: static to NNX, not a second path
                if object_flow.never_built(object_flow.object_model(self.context), classdef, alias.second.path):
                    continue  # made only in a branch no analysed call takes: the second path never exists
                reported.add((where.lineno, where.col_offset))
                sites = _store_sites(alias, where) + self._child_store_sites(alias)
                self.report(where, related=sites, **self._facts(classdef, alias))
            self.model_findings(classdef, reported)

    def model_findings(self, classdef: nodes.ClassDef, reported: set[tuple[int, int]]) -> None:
        """Findings the object-flow model shows beyond the construction replay (a rule overrides
        it); ``reported`` holds the ``(line, column)`` already reported, to add to."""

    def _child_store_sites(self, alias: Alias) -> list[tuple[nodes.NodeNG, str]]:
        """Where a child class keeps the shared argument (``self.noise = Noise(rngs)`` and
        ``Noise.__init__`` stores ``self.rngs = rngs``), in whatever file the child lives."""
        sites = []
        for event in (alias.first, alias.second):
            value = assigned_value(event.node) if event is not None and isinstance(event.node, nodes.AssignAttr) else None
            if event is None or not isinstance(value, nodes.Call):
                continue
            child = self.classes.class_of(value)
            if child is None or child.definition is None:
                continue
            own = len(self_path_parts(event.node))
            rest = event.path[own:]
            for inner in self.classes.construction(child.definition).events:
                if inner.path == rest and not inner.deleted:
                    sites.append((inner.node, f"`{self_text(rest)}` stored here, in `{child.short_name}`"))
                    break
        return sites

    def _location(self, classdef: nodes.ClassDef, alias: Alias) -> nodes.NodeNG | None:
        second = alias.second
        where = second.container if self.category == "container" and second.container is not None else second.origin
        if not inside(where, classdef):
            where = second.origin
        if where.root() is not self.context.module or not inside(where, classdef):
            return None
        if not inside(second.node, classdef) and alias.first is not None and not inside(alias.first.node, classdef):
            # Both stores come from a base class: reported there, unless only our arguments tie them.
            owner = second.node.frame()
            owner = owner.parent if isinstance(owner, nodes.FunctionDef) else None
            if isinstance(owner, nodes.ClassDef):
                base = self.classes.construction(owner)
                if any(a.second.node is second.node for a in base.aliases):
                    return None
        return where

    def _facts(self, classdef: nodes.ClassDef, alias: Alias) -> dict:
        second = alias.second
        return {
            "class_name": classdef.name,
            "first_path": join_path(alias.first_path),
            "second_path": second.display_path,
            "kind": KIND_WORDS.get(alias.kind, alias.kind),
            "shared": alias.ref.describe(),
            "container": short_source(second.container) if second.container is not None else None,
            "conditional": bool(second.guards),
            "stored_in": second.node.frame().name if hasattr(second.node.frame(), "name") else None,
            "confidence": "static",
            **alias_shape(alias),
            "used_with": next(iter(self._use_names.get(id(classdef), [])), None),
            **self._pin_facts(id(classdef)),
        }

    def _pin_facts(self, key: object) -> dict:
        """A class-level finding is fixed by pinning every use of the class (or object): the
        ``pin`` sites of the uses this file shows, and whether they are all of its uses here."""
        targets = self._pin_targets.get(key, [])
        known = pin_sites(*targets, module=self.context.module)
        every_use = (bool(targets) and None not in targets
                     and len(known) == len(dict.fromkeys(id(t.node) for t in targets)))
        return {"pin": pin_sites_in(self.context, *targets), "pin_every_use": every_use}


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
            for inner in function.body.nodes_of_class(nodes.Call):
                ref = self.classes.class_of(inner)
                if ref is not None and ref.definition is not None:
                    self.events.append(("construct", id(ref.definition), keeps))
