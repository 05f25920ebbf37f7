"""The value model: what an expression is, for every rule family.

Rules ask one service (:func:`value_model`) what a value is instead of working it out
themselves: its candidate classes, whether it is an ``nnx.State``, whether it may be a
Module, what a stored attribute holds, and the evidence that a parameter is a Module. The
answers are built on :class:`nnx_lint.analysis.classes.ClassModel` (classes, stores, identity)
and :class:`nnx_lint.analysis.variables.VariableModel` (what a Module holds), so an inference
improvement made there (a new store form, call-site classes, ...) reaches every rule
through here.

Unknown is an answer: a rule that needs a fact stays silent when the model cannot give it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.base import bounds
from nnx_lint.flax_table import nnx_api
from nnx_lint.analysis.annotations import annotation_outer, binding_annotation
from nnx_lint.analysis.call_sites import argument_for, calls_of, parameter_of
from nnx_lint.analysis.class_info import ClassRef, assigned_value
from nnx_lint.analysis.pytrees import not_pytree_part
from nnx_lint.analysis.refs import SHARED_KINDS, STATEFUL_KINDS, Ref, join_path
from nnx_lint.analysis.value_kinds import is_module_class, is_rngs, may_hold_a_module
from nnx_lint.analysis.flow import bound_values, lookup, unpacked_binding
from nnx_lint.analysis.state_values import StateValues
from nnx_lint.base.node_index import nodes_of_class
from nnx_lint.flax_table.nnx_api import GRAPHDEF_FIRST, GRAPHDEF_SOURCES
from nnx_lint.flax_table.names import NNX_DATA, NNX_DATA_ANNOTATION, NNX_MODULE_BASES, NNX_PREFIX

if TYPE_CHECKING:
    from nnx_lint.analysis.calls import NNXCall
    from nnx_lint.analysis.context import FileContext

_MAX_DEPTH = 4
#: Variable types of flax.nnx, qualified (a stored value of one of these is a Variable).
VARIABLE_TYPES = nnx_api.qualified(nnx_api.variable_types())
#: Classes whose instances are list- or dict-like containers of other values.
CONTAINER_TYPES = nnx_api.CONTAINER_MODULES | frozenset({"builtins.list", "builtins.dict", "list", "dict"})
#: What :meth:`ValueModel.stored_kind` calls a container an attribute stores. A *data* container
#: (``nnx.List``, ``nnx.Dict``, ``nnx.data({...})``, or a plain one on an attribute the class
#: declares ``nnx.data()``) is a pytree node of the Module: a Tree Mode transform rebuilds it, so
#: an in-place change inside is dropped. A *static* container (a plain list or dict, which flax
#: 0.12 keeps only without data in it) is carried by reference: the change survives in both modes.
DATA_CONTAINER = "data-container"
STATIC_CONTAINER = "static-container"
CONTAINER_KINDS = frozenset({DATA_CONTAINER, STATIC_CONTAINER})


@dataclass(frozen=True)
class SharedPair:
    """One object reachable at two places inside one value (``[v, v]``, ``Foo(a=v, b=v)``)."""

    #: Paths inside the value, flax-style: ``[0]``, ``['b']``, ``a``.
    first_path: str
    second_path: str
    #: The shared object and what it is (``module``, ``variable``, ``rngs``, ``state``, ``ref``).
    ref: Ref
    kind: str
    #: The container expression the second place sits in (``nnx.List([...])``, a list
    #: literal, ...), None for constructor arguments.
    container: nodes.NodeNG | None = None
    #: The assignment that made two places share it (``m2.kernel = m1.kernel``), when
    #: the places hold different objects that a tie joined.
    tie: nodes.NodeNG | None = None


@dataclass(frozen=True)
class Tie:
    """``m2.kernel = m1.kernel`` outside a class body: after it, two objects share a part."""

    target: Ref
    value: Ref
    node: nodes.NodeNG


@dataclass(frozen=True)
class BackReference:
    """``model.loop = model`` outside a class body: after it, a graph node holds itself."""

    #: Where the back-reference is stored (``model.loop``).
    holder: Ref
    #: The node it points back to (``model``), a prefix of ``holder``.
    value: Ref
    node: nodes.AssignAttr


@dataclass(frozen=True)
class Candidate:
    """One class a value may have, with where that is known from."""

    ref: ClassRef
    #: ``class`` (annotation, construction, store), or ``call site`` (a caller passes it).
    evidence: str
    #: For ``call site``: the call that passes an instance of this class.
    call: nodes.Call | None = None


def value_model(context: FileContext) -> ValueModel:
    """The (memoised) :class:`ValueModel` of one linted file."""
    return context.service(ValueModel)


class ValueModel(StateValues):
    """Per-file answers to "what is this value?"."""

    def __init__(self, context: FileContext) -> None:
        self.context = context
        self.classes = context.classes
        self._ties: dict[int, list[Tie]] = {}
        self._items: dict[int, list] = {}
        self._loop_calls: dict[int, tuple | None] = {}

    # -- classes ------------------------------------------------------------------------------
    def candidates(self, expression: nodes.NodeNG) -> list[Candidate]:
        """The classes ``expression`` may have: the one known class, or, for a parameter that
        is unannotated (or annotated with the generic ``nnx.Module``) whose callers disagree,
        every class some caller passes (each with its call)."""
        if isinstance(expression, nodes.Name):
            found = parameter_of(expression) or self.classes.method_parameter(expression)
            annotation = self.classes.annotated_class_of(expression) if found is not None else None
            if found is not None and (annotation is None or annotation.qualified_name in NNX_MODULE_BASES):
                # Its class is what the callers pass (in this file or another): each with its call;
                # under a generic annotation, only the Module classes among them.
                callers = [Candidate(ref, "call site", call) for ref, call in self.classes.call_site_classes(*found)
                           if annotation is None or self.may_be_module(ref)]
                if callers or annotation is None:
                    return callers
        ref = self.classes.class_of_self(expression)
        if isinstance(expression, nodes.Attribute) and (ref is None or ref.qualified_name in NNX_MODULE_BASES):
            # `state.model` stored from `TrainState(model, ...)`, where `model` is a parameter the
            # callers give several classes: those classes, each with its call
            passed = self.classes.stored_argument(expression)
            if isinstance(passed, nodes.Name):
                callers = [c for c in self.candidates(passed) if c.evidence == "call site"]
                if callers:
                    return callers
        return [Candidate(ref, "class")] if ref is not None else []

    def is_variable_class(self, ref: ClassRef) -> bool:
        """Whether ``ref`` is a flax Variable type or a project subclass of one."""
        return self.classes.class_kind(ref) == "variable"

    def is_rngs(self, expression: nodes.NodeNG) -> bool:
        """Whether ``expression`` holds an ``nnx.Rngs``, a stream of one or an RNG Variable: the one
        answer (:func:`nnx_lint.analysis.value_kinds.is_rngs`)."""
        return is_rngs(self.context, expression, self.candidates)

    def is_module_class(self, ref: ClassRef | None) -> bool:
        """Whether instances of ``ref`` are NNX Modules for certain (an unknown class is not:
        :meth:`may_be_module`); :func:`nnx_lint.analysis.value_kinds.is_module_class`."""
        return is_module_class(self.context, ref)

    def may_hold_a_module(self, ref: ClassRef) -> bool:
        """Whether an instance of ``ref`` may hold another Module
        (:func:`nnx_lint.analysis.value_kinds.may_hold_a_module`)."""
        return may_hold_a_module(self.context, ref)

    def not_pytree(self, ref: ClassRef, levels: int = 2) -> tuple[str, str, str | None] | None:
        """``(class name, reason, part)`` when an instance of ``ref`` is not a pytree or holds a
        part that is not, ``levels`` levels down (:func:`nnx_lint.analysis.pytrees.not_pytree_part`)."""
        return not_pytree_part(self.context, ref, levels)

    def may_be_module(self, ref: ClassRef | None) -> bool:
        """Whether an instance of ``ref`` may be an NNX Module (unknown classes may be)."""
        if ref is None:
            return True
        if self.is_variable_class(ref):
            return False
        if ref.definition is not None:
            return self.classes.info(ref.definition).is_nnx_module
        return ref.qualified_name.startswith(NNX_PREFIX)

    def stored_kind(self, value: nodes.NodeNG | None) -> str:
        """What a stored value is: :data:`DATA_CONTAINER` (``nnx.List``, ``nnx.Dict``,
        ``nnx.data([...])``), :data:`STATIC_CONTAINER` (a plain list or dict), ``variable``
        (a Variable construction) or ``other``."""
        if isinstance(value, (nodes.List, nodes.Dict, nodes.ListComp, nodes.DictComp)):
            return STATIC_CONTAINER
        if isinstance(value, nodes.Call):
            if value.args and self.context.qualified_name(value.func) == NNX_DATA:
                inner = self.stored_kind(value.args[0])
                return DATA_CONTAINER if inner in CONTAINER_KINDS else inner
            ref = self.classes.class_of(value)
            name = ref.qualified_name if ref else None
            if name in nnx_api.CONTAINER_MODULES:
                return DATA_CONTAINER
            if name in CONTAINER_TYPES:
                return STATIC_CONTAINER
            if ref is not None and self.is_variable_class(ref):
                return "variable"
        return "other"

    def stored_kinds(self, owner: nodes.NodeNG, attribute: str, ref: ClassRef | None = None) -> set[str]:
        """:meth:`stored_kind` of every store of ``owner.attribute`` during construction
        (empty when the class or the attribute is unknown). A plain container on an attribute
        the class (or a base) declares data (``cache: dict = nnx.data()``, ``nnx.Data[...]``)
        is a :data:`DATA_CONTAINER`."""
        ref = ref or self.classes.class_of_self(owner)
        if ref is None or ref.definition is None:
            return set()
        kinds = {self.stored_kind(store.value) for store in self.classes.info(ref.definition).stores_of(attribute)}
        if STATIC_CONTAINER in kinds and self._declared_data(ref.definition, attribute):
            kinds = (kinds - {STATIC_CONTAINER}) | {DATA_CONTAINER}
        return kinds

    def _declared_data(self, classdef: nodes.ClassDef, attribute: str) -> bool:
        """Whether ``classdef`` or a base declares ``attribute`` data at class level."""
        # The project's own bases, through the class model: astroid's ancestors() would infer
        # (and load) flax's classes, which linting never does.
        classes, pending = [], [(classdef, 0)]
        while pending:
            cls, depth = pending.pop()
            if cls in classes or depth > 6:
                continue
            classes.append(cls)
            pending += [(base.definition, depth + 1) for base in self.classes.info(cls).bases
                        if base.definition is not None]
        for cls in classes:
            for statement in cls.body:
                if isinstance(statement, nodes.AnnAssign) and isinstance(statement.target, nodes.AssignName):
                    target, value, annotation = statement.target, statement.value, statement.annotation
                elif isinstance(statement, nodes.Assign) and len(statement.targets) == 1 \
                        and isinstance(statement.targets[0], nodes.AssignName):
                    target, value, annotation = statement.targets[0], statement.value, None
                else:
                    continue
                if target.name != attribute:
                    continue
                if isinstance(value, nodes.Call) and self.context.qualified_name(value.func) == NNX_DATA:
                    return True
                base = annotation_outer(annotation)
                if base is not None and self.context.qualified_name(base) == NNX_DATA_ANNOTATION:
                    return True
        return False

    # -- identity -----------------------------------------------------------------------------
    def shared_within(self, expression: nodes.NodeNG) -> SharedPair | None:
        """The first object that ``expression`` holds at two places, when it holds Variables.

        Covers list, tuple and dict literals, ``dict(...)``, ``nnx.List``/``nnx.Dict``/
        ``nnx.Sequential`` and constructions of project classes through what their
        ``__init__`` stores (``Foo(a=v, b=v)`` with ``self.a = a; self.b = b``), followed
        through local names, and ties made before it (``m2.kernel = m1.kernel``, then
        ``[m1, m2]``). Arrays and unknown objects never count.
        """
        items = self._stored_items(expression)
        internal = self._class_internal_pairs(expression)
        for position, (path_b, ref_b, container) in enumerate(items):
            if ref_b is None or not path_b:
                continue
            for path_a, ref_a, _ in items[:position]:
                if ref_a is None or not path_a or _prefix_related(path_a, path_b):
                    continue
                if frozenset((path_a, path_b)) in internal:
                    continue  # the class itself stores one argument twice: its own rules say so
                tie, place_a, place_b = None, path_a, path_b
                if ref_a.overlaps(ref_b):
                    shared = ref_a if len(ref_a.path) <= len(ref_b.path) else ref_b
                else:
                    tie = self.tie_between(ref_a, ref_b, expression)
                    if tie is None:
                        continue
                    shared = tie.value
                    # the places of the tied part itself: `layers[1].kernel`, `layers[0].kernel`
                    place_a, place_b = _tied_place(path_a, ref_a, tie), _tied_place(path_b, ref_b, tie)
                kind = self.classes.kind_of(shared)
                if kind in SHARED_KINDS:
                    return SharedPair(join_path(place_a), join_path(place_b), shared, kind, container,
                                      tie.node.parent if tie is not None else None)
        return self._tied_within(expression)

    def shared_node_within(self, expression: nodes.NodeNG) -> SharedPair | None:
        """The first graph node holding no Variables that ``expression`` holds at two places
        (kind ``node``): ``[foo, foo]`` with ``foo`` a Variable-free Pytree, a construction
        whose class stores one such node twice (``self.right = self.left``, or one argument
        at two attributes), or a part of the value built that way. Tree Mode accepts it
        reachable twice (so :meth:`shared_within` leaves it out), but walks it once per path.

        Only nodes of a known class count: a plain Python object is a static leaf that keeps
        its identity in both modes, and an unknown object may hold Variables.
        """
        items = self._stored_items(expression)
        for position, (path_b, ref_b, container) in enumerate(items):
            if ref_b is None or not path_b:
                continue
            for path_a, ref_a, _ in items[:position]:
                if ref_a is None or not path_a or _prefix_related(path_a, path_b) or not ref_a.overlaps(ref_b):
                    continue
                shared = ref_a if len(ref_a.path) <= len(ref_b.path) else ref_b
                if self.classes.variable_free_node(shared):
                    return SharedPair(join_path(path_a), join_path(path_b), shared, "node", container)
        for path, ref, _container in items:
            cls = self.classes.class_of_self(expression) if not path else (
                self.classes.class_of(ref.root[1]) if ref is not None and ref.origin == "new" and not ref.path
                else None)
            if cls is None or cls.definition is None:
                continue
            for alias in self.classes.variable_free_aliases(cls.definition):
                # `self.right = self.left`: the object is what the first store put there
                shared = alias.first.ref if alias.first is not None and alias.first.ref is not None else alias.ref
                return SharedPair(join_path(path + alias.first_path), join_path(path + alias.second.path),
                                  shared, "node", alias.second.node)
        return None

    def graphdef_source(self, expression: nodes.NodeNG, depth: int = 0) -> NNXCall | None:
        """The ``nnx.split`` / ``nnx.graphdef`` / ``nnx.flatten`` call a GraphDef comes from:
        the call itself, ``nnx.split(...)[0]``, a name bound to either by its one assignment
        (``graphdef, state = nnx.split(m)``), or a parameter that every call of its function
        in this file passes such a GraphDef (``step(graphdef, state)``). Its flags say whether
        the GraphDef is a graph-mode or a Tree Mode one. None when the origin is not that visible."""
        if isinstance(expression, nodes.Name) and depth < 3 and (found := parameter_of(expression)) is not None:
            function, parameter = found
            sources = [self.graphdef_source(argument, depth + 1) for call in calls_of(function)
                       if (argument := argument_for(function, call, parameter)) is not None]
            nodes_found = {id(source.node) if source is not None else None for source in sources}
            return sources[0] if len(nodes_found) == 1 and None not in nodes_found else None
        if isinstance(expression, nodes.Name):
            unpacked = unpacked_binding(expression)
            if unpacked is not None:  # `graphdef, state = nnx.split(m)`
                value, position = unpacked
                call = self.context.nnx_call(value) if position == 0 else None
                return call if call is not None and call.name in GRAPHDEF_FIRST else None
            _scope, assignments = lookup(expression)
            if len(assignments) != 1 or not isinstance(assignments[0], nodes.AssignName) \
                    or not isinstance(assignments[0].parent, nodes.Assign):
                return None
            expression = assignments[0].parent.value
        if isinstance(expression, nodes.Subscript) and isinstance(expression.slice, nodes.Const) \
                and expression.slice.value == 0:
            call = self.context.nnx_call(expression.value)
            return call if call is not None and call.name in GRAPHDEF_FIRST else None
        call = self.context.nnx_call(expression)
        return call if call is not None and call.name in GRAPHDEF_SOURCES else None

    def shared_between(self, first: nodes.NodeNG, second: nodes.NodeNG) -> SharedPair | None:
        """The first object that two values both hold below themselves (``Container(v)``
        twice), when it holds Variables or is a raw ref. The paths are relative to each value. The values
        themselves, and one value that is a part of the other, are not this question
        (:meth:`ClassModel.ref_of` overlap answers those)."""
        items_b = [item for item in self._stored_items(second) if item[0] and item[1] is not None]
        if not items_b:
            return None
        for path_a, ref_a, _ in self._stored_items(first):
            if not path_a or ref_a is None:
                continue
            for path_b, ref_b, container in items_b:
                if not ref_a.overlaps(ref_b):
                    continue
                shared = ref_a if len(ref_a.path) <= len(ref_b.path) else ref_b
                kind = self.classes.kind_of(shared)
                if kind in SHARED_KINDS:
                    return SharedPair(join_path(path_a), join_path(path_b), shared, kind, container)
        return None

    def held_part_of(self, holder: nodes.NodeNG, other: Ref) -> str | None:
        """Where the value ``holder`` holds a stateful part of the object ``other`` below
        itself (``SGD(nnx.variables(model, nnx.Param))`` holds model's Params at ``params``),
        or None."""
        for path, ref, _container in self._stored_items(holder):
            if path and ref is not None and _within_ref(ref, other) and self.classes.kind_of(ref) in STATEFUL_KINDS:
                return join_path(path)
        return None

    def _stored_items(self, expression: nodes.NodeNG) -> list:
        """:meth:`ClassModel.stored_items` of ``expression``, once per expression: every
        transform call asks about each argument alone and about each pair of arguments."""
        key = id(expression)
        if key not in self._items:
            self._items[key] = self.classes.stored_items(expression)
        return self._items[key]

    def _tied_within(self, expression: nodes.NodeNG) -> SharedPair | None:
        """One object given two attributes of the value after construction (``child.a = v``
        then ``child.d = v``, or ``model.linear2 = model.linear1``), before ``expression`` uses it."""
        root = self.classes.ref_of(expression)
        if root is None or isinstance(expression, nodes.Call):
            return None
        inside = [tie for tie in self.ties_in(_code_scope(expression))
                  if (tie.node.lineno or 0) < (expression.lineno or 0) and _within_ref(tie.target, root)
                  and not self._undone_before(tie, expression)]
        for tie in inside:  # `model.linear2 = model.linear1`: a part of the value stored again
            if _within_ref(tie.value, root):
                path_a, path_b = tie.value.path[len(root.path):], tie.target.path[len(root.path):]
                kind = self.classes.kind_of(tie.value)
                if not _prefix_related(path_a, path_b) and kind in STATEFUL_KINDS:
                    return SharedPair(join_path(path_a), join_path(path_b), tie.value, kind, None)
        for position, second in enumerate(inside):
            for first in inside[:position]:
                path_a, path_b = first.target.path[len(root.path):], second.target.path[len(root.path):]
                if _prefix_related(path_a, path_b) or not first.value.overlaps(second.value):
                    continue
                kind = self.classes.kind_of(first.value)
                if kind in STATEFUL_KINDS:
                    return SharedPair(join_path(path_a), join_path(path_b), first.value, kind, None)
        return None

    def _class_internal_pairs(self, expression: nodes.NodeNG) -> set[frozenset]:
        """Path pairs a project construction (``Cls(...)`` or a name bound to one) shares by
        its own code: one ``__init__`` parameter stored at two paths. Those are reported at
        the class (NNX101/NNX105), not at every value built from it."""
        value = expression
        if isinstance(value, nodes.Name):
            bound = bound_values(value)
            value = bound[0] if len(bound) == 1 else None
        if not isinstance(value, nodes.Call):
            return set()
        ref = self.classes.class_of(value)
        if ref is None or ref.definition is None:
            return set()
        pairs = set()
        for entries in self.classes.construction(ref.definition).stored_parameters().values():
            paths = [path for path, _part in entries]
            pairs.update(frozenset((a, b)) for i, a in enumerate(paths) for b in paths[i + 1:])
        return pairs

    def tie_between(self, a: Ref, b: Ref, at: nodes.NodeNG) -> Tie | None:
        """A tie made before ``at`` in its scope that makes ``a`` and ``b`` share a part:
        ``m2.kernel = m1.kernel`` ties ``m2`` and ``m1`` (and ``m2`` and ``m1.kernel``)."""
        for tie in self.ties_in(_code_scope(at)):
            if (tie.node.lineno or 0) >= (at.lineno or 0):
                break
            for first, second in ((a, b), (b, a)):
                if _within_ref(tie.target, first) and tie.value.overlaps(second):
                    return tie
        return None

    def ties_in(self, scope: nodes.NodeNG) -> list[Tie]:
        """Attribute stores in ``scope`` (a function or module, not a class body's methods'
        ``self``) whose value is a known stateful object, in source order."""
        key = id(scope)
        if key not in self._ties:
            ties = []
            for node in nodes_of_class(scope, nodes.AssignAttr, skip_klass=(nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)):
                if node.scope() is not scope:
                    continue
                target = self.classes.ref_of(node.expr)
                value = self.classes.ref_of(assigned_value(node))
                if target is None or value is None or target.origin == "self" or _within_ref(target, value):
                    continue  # (``m.loop = m`` holds m below itself: a cycle, see back_references_in)
                if self.classes.kind_of(value) in STATEFUL_KINDS:
                    ties.append(Tie(target.child(node.attrname), value, node))
            self._ties[key] = sorted(ties, key=lambda t: (t.node.lineno or 0, t.node.col_offset or 0))
        return self._ties[key]

    def back_references_in(self, scope: nodes.NodeNG) -> list[BackReference]:
        """Attribute stores in ``scope`` (a function or module, not through a method's
        ``self``) that put a graph node below itself: ``model.loop = model``,
        ``model.a.back = model`` (every object between them a graph node). A store undone by
        a later ``del`` of the same attribute in ``scope`` does not count."""
        found = []
        for node in nodes_of_class(scope, nodes.AssignAttr, skip_klass=(nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)):
            if node.scope() is not scope:
                continue
            bounds.checkpoint("looking for objects stored below themselves")
            owner = self.classes.ref_of(node.expr)
            if owner is None or owner.origin == "self":
                continue  # the value is asked about only for stores that may count (most are `self.x = ...`)
            value = self.classes.ref_of(assigned_value(node))
            if value is None or not _within_ref(owner, value):
                continue
            if not all(self.classes.graph_node(Ref(owner.root, owner.path[:length]))
                       for length in range(len(value.path), len(owner.path) + 1)):
                continue
            holder = owner.child(node.attrname)
            if any(self._deletes(later, holder) for later in nodes_of_class(scope, nodes.DelAttr)
                   if later.scope() is scope and (later.lineno or 0) > (node.lineno or 0)):
                continue
            found.append(BackReference(holder, value, node))
        return found

    def _undone_before(self, tie: Tie, at: nodes.NodeNG) -> bool:
        """Whether ``del`` removes the tied attribute between the tie and ``at``."""
        scope = _code_scope(at)
        return any(self._deletes(node, tie.target) for node in nodes_of_class(scope, nodes.DelAttr)
                   if node.scope() is scope and (tie.node.lineno or 0) < (node.lineno or 0) < (at.lineno or 0))

    def _deletes(self, node: nodes.DelAttr, holder: Ref) -> bool:
        owner = self.classes.ref_of(node.expr)
        return owner is not None and owner.child(node.attrname) == holder

    # -- Modules ------------------------------------------------------------------------------
    def module_evidence(self, function: nodes.FunctionDef, parameter: nodes.AssignName) -> str | None:
        """Evidence that a parameter of ``function`` is a Module (not a State or an array):
        ``annotation``, ``attribute access in the primal`` or ``called in the primal``."""
        annotation = binding_annotation(parameter)
        if annotation is not None:
            ref = self.classes.annotated_class(annotation)
            if ref is None or ref.qualified_name in nnx_api.STATE_CLASSES:
                return None
            if ref.definition is not None:
                return "annotation" if self.classes.info(ref.definition).is_nnx_module else None
            return "annotation" if ref.qualified_name.startswith(NNX_PREFIX) else None
        for node in nodes_of_class(function, (nodes.Attribute, nodes.Call)):
            target = node.expr if isinstance(node, nodes.Attribute) else node.func
            if isinstance(target, nodes.Name) and target.name == parameter.name:
                return "attribute access in the primal" if isinstance(node, nodes.Attribute) else "called in the primal"
        return None


def _code_scope(node: nodes.NodeNG) -> nodes.NodeNG:
    """The function or module whose statements run before ``node``: a comprehension's own
    scope (``[n for n in nnx.iter_graph(root)]``) holds no statements."""
    scope = node.scope()
    while isinstance(scope, (nodes.ListComp, nodes.SetComp, nodes.DictComp, nodes.GeneratorExp)):
        scope = scope.parent.scope()
    return scope


def _tied_place(path: tuple[str, ...], ref: Ref, tie: Tie) -> tuple[str, ...]:
    """Where, below ``path`` (which holds ``ref``), the tie's shared part sits."""
    for end in (tie.target, tie.value):
        if _within_ref(end, ref):
            return path + end.path[len(ref.path):]
    return path


def _within_ref(inner: Ref, outer: Ref) -> bool:
    """Whether ``inner`` is ``outer`` or a part of it."""
    return inner.root == outer.root and inner.path[:len(outer.path)] == outer.path


def _prefix_related(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]

