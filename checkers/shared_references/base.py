"""The shared references family's base rule classes: the family's services and the class-alias rules'
base (the returns rules' base is in :mod:`checkers.shared_references.returns`)."""
from __future__ import annotations

from typing import ClassVar

from dataclasses import dataclass

from astroid import nodes

from checkers.shared_references.messages import KIND_WORDS, self_text, short_source
from nnx_lint.api import (
    Alias,
    Facts,
    NNXCall,
    Rule,
    join_path,
    object_flow,
    shared_objects,
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
        #: This rule's view of the file's uses, per class and per object (read once, when the walk is over).
        self._view(shared_objects.ClassUses(self.classes))
        self._folded = False

    def _view(self, uses: shared_objects.ClassUses) -> None:
        self.uses, self._uses, self._object_uses = uses, uses.per_class, uses.per_object
        self._use_names, self._pin_targets = uses.names, uses.pin_targets

    def visit_classdef(self, node: nodes.ClassDef) -> None:
        self._classdefs.append(node)

    def visit_call(self, node: nodes.Call) -> None:
        """Record how instances of project classes are used (for the class opt-in): once per
        call for all the class-alias rules (:class:`~nnx_lint.analysis.shared_objects.GraphUses`), read back by each at the end."""
        shared_objects.graph_uses(self.context).record(node)

    def _fold_uses(self) -> None:
        """This rule's view of the file's uses (:meth:`_record_use`, which a rule may refine; plain rules share one)."""
        if not self._folded:
            self._folded = True
            refined = type(self)._record_use is not ClassAliasRule._record_use
            self._view(shared_objects.graph_uses(self.context).fold_into(self.uses, self._record_use if refined else None))

    def _record_use(self, expression: nodes.NodeNG, keeps: bool, name: str | None = None,
                    pin_target: NNXCall | None = None) -> None:
        self.uses.record(expression, keeps, name, pin_target)

    def leave_module(self, node: nodes.Module) -> None:
        self._fold_uses()
        reported: set[tuple[int, int]] = set()
        for classdef in self._classdefs:
            if not self.uses.may_break(classdef):
                continue
            for alias in self.classes.construction(classdef).aliases:
                if shared_objects.alias_category(alias) != self.category:
                    continue
                where = shared_objects.alias_location(self.context, classdef, alias, self.category)
                if where is None or (where.lineno, where.col_offset) in reported:
                    continue
                if self.context.mode.scope_keeps_graph_mode(where, transform=True):
                    continue
                # Not a second path: one a plain Python object holds, or one no analysed call builds.
                model, path = object_flow.object_model(self.context), alias.second.path
                if object_flow.leaves_the_tree(model, classdef, path) or object_flow.never_built(model, classdef, path):
                    continue
                reported.add((where.lineno, where.col_offset))
                sites = _store_sites(alias, where) + self._child_store_sites(alias)
                self.report(where, related=sites, **self._facts(classdef, alias))
            self.model_findings(classdef, reported)

    def model_findings(self, classdef: nodes.ClassDef, reported: set[tuple[int, int]]) -> None:
        """Findings the object-flow model shows beyond the construction replay (a rule overrides
        it); ``reported`` holds the ``(line, column)`` already reported, to add to."""

    def _child_store_sites(self, alias: Alias) -> list[tuple[nodes.NodeNG, str]]:
        """Where a child class keeps the shared argument, as related locations."""
        return [(inner.node, f"`{self_text(rest)}` stored here, in `{child.short_name}`")
                for inner, rest, child in shared_objects.child_stores(self.classes, alias)]

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
            **shared_objects.alias_shape(alias),
            "used_with": next(iter(self._use_names.get(id(classdef), [])), None),
            **self._pin_facts(id(classdef)),
        }

    def _pin_facts(self, key: object) -> dict:
        """A class-level finding is fixed by pinning every use of the class (or object)."""
        sites, every_use = self.uses.pin_sites(self.context, key)
        return {"pin": sites, "pin_every_use": every_use}
