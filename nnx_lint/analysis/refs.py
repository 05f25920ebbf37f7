"""Object identity, a part of the class model: which object an expression denotes (a
:class:`Ref`: where it comes from plus an attribute path); the kinds of objects (a Module, a
Variable, an ``Rngs``, a State view, a raw mutable array ref), and the records a
construction replay keeps (:class:`StoreEvent`, :class:`Alias`, :class:`SelfReference`).

:class:`RefQueries` is a part of :class:`nnx_lint.analysis.classes.ClassModel`: it asks
:class:`~nnx_lint.analysis.class_hierarchy.ClassHierarchy` about names,
:class:`~nnx_lint.analysis.expression_classes.ExpressionClasses` the class of a copied
container, and :class:`~nnx_lint.analysis.class_kinds.ClassKinds` whether a replaced field
holds Variables (which asks back the identity of stored values: the two are wired to each
other).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.flax_table import nnx_api
from nnx_lint.analysis.class_info import class_fields, is_named_tuple, is_static_method
from nnx_lint.analysis.flow import default_fallback, lookup, resolved_default

if TYPE_CHECKING:
    from nnx_lint.analysis.class_hierarchy import ClassHierarchy
    from nnx_lint.analysis.class_kinds import ClassKinds
    from nnx_lint.analysis.expression_classes import ExpressionClasses


#: How deep identity and kind questions follow names, attributes and calls.
MAX_REF_DEPTH = 12
#: Kinds of objects that hold NNX Variables (and so may not be reachable twice).
STATEFUL_KINDS = frozenset({"module", "variable", "rngs", "state"})
#: Kinds of objects Tree Mode may not reach twice: those holding Variables, and raw mutable
#: array refs (``jax.new_ref``): flax's graph APIs raise "Duplicate Ref ... does not support
#: shared references", and its transforms hand the tree to JAX, which rejects one ref passed
#: twice ("only one reference to a mutable array may be passed"). Graph mode deduplicates both.
SHARED_KINDS = STATEFUL_KINDS | {"ref"}
RNG_CLASSES = nnx_api.RNG_OBJECTS
#: Qualified names of what holds RNG state: the Rngs objects and the RNG Variables.
RNG_TYPES = nnx_api.qualified(nnx_api.RNG_OBJECTS | nnx_api.variable_types("rng"))


def names_rngs(name: str) -> bool:
    """The naming convention of an ``nnx.Rngs`` parameter whose class nothing states:
    ``rngs``, ``dropout_rngs`` (flax's own layers and examples follow it)."""
    return name == "rngs" or name.endswith("_rngs")


VARIABLE_CLASSES = nnx_api.variable_types()


@dataclass(frozen=True)
class Ref:
    """A statically known object: where it comes from (``root``) and a path within it.

    Roots: ``("self", ClassDef)`` — the instance under construction in a method;
    ``("param", function, name)`` — whatever a caller passed; ``("new", Call)`` — the
    object one construction (or ``.fork()``) made. Two refs *overlap* when they share the
    root and one path is a prefix of the other: the same object, or an object and its part.
    Path parts are attribute names, ``[i]`` for sequence positions and ``<...>`` for
    filtered state views (``nnx.state(m, nnx.Param)``).
    """

    root: tuple
    path: tuple[str, ...] = ()

    def child(self, *parts: str) -> Ref:
        return Ref(self.root, self.path + tuple(parts))

    def overlaps(self, other: Ref) -> bool:
        if self.root != other.root:
            return False
        shorter = min(len(self.path), len(other.path))
        return self.path[:shorter] == other.path[:shorter]

    @property
    def origin(self) -> str:
        return self.root[0]

    def describe(self) -> str:
        """Source-like text: ``self.embed.embedding``, ``rngs.dropout``, ``Linear(...)``."""
        if self.root[0] == "self":
            base = "self"
        elif self.root[0] == "param":
            base = self.root[2]
        else:
            call = self.root[1]
            func = call.func.as_string() if isinstance(call, nodes.Call) else "?"
            base = f"{func}(...)"
        return join_path((base,) + self.path)


def join_path(parts: tuple[str, ...] | list[str]) -> str:
    """``("layers", "[0]", "bias")`` -> ``layers[0].bias``."""
    text = ""
    for part in parts:
        if part.startswith("[") or not text:
            text += part
        else:
            text += "." + part
    return text


@dataclass
class StoreEvent:
    """One object placed into (or, ``deleted``, removed from) the tree under construction."""

    path: tuple[str, ...]
    ref: Ref | None
    #: The statement's node (an ``AssignAttr``, a ``setattr``/``delattr`` call, ...).
    node: nodes.NodeNG
    #: The node in the replayed class's own code that causes the store: ``node`` itself,
    #: or the ``super().__init__(...)`` call for stores made by a base class.
    origin: nodes.NodeNG
    #: Enclosing branches, ``(id(node), branch)``: a later store only undoes an earlier
    #: one when it runs whenever the earlier one ran.
    guards: frozenset
    #: The container/constructor expression the stored object sits in, if any.
    container: nodes.NodeNG | None = None
    deleted: bool = False

    @property
    def display_path(self) -> str:
        return join_path(self.path)


@dataclass
class Alias:
    """One object reachable at two paths of a constructed instance."""

    first: StoreEvent | None
    first_path: tuple[str, ...]
    second: StoreEvent
    ref: Ref
    kind: str


@dataclass
class SelfReference:
    """A store that puts a graph node below itself: ``self.sub = self``,
    ``self.child = Child(self)`` when ``Child`` keeps ``self.owner = owner``, or
    ``self.block.up = self.block``. ``store.path`` is where the back-reference sits and
    ``target`` the path of the node it points back to (``()``: the instance itself)."""

    store: StoreEvent
    target: tuple[str, ...]


def store_overwritten(
    events: list[StoreEvent], event: StoreEvent, start: int, end: int,
    path: tuple[str, ...] | None = None, guards: frozenset | None = None,
) -> bool:
    """Whether a store/delete in ``events[start:end]`` replaces ``path`` (or a parent) for sure."""
    path = event.path if path is None else path
    guards = event.guards if guards is None else guards
    for later in events[start:end]:
        if later.node is event.node and not later.deleted:
            continue  # items of the same statement
        if len(later.path) <= len(path) and path[: len(later.path)] == later.path and later.guards <= guards:
            return True
    return False


class RefQueries:
    """Object identity, a part of :class:`nnx_lint.analysis.classes.ClassModel`: which object an
    expression denotes (:meth:`ref_of`). What kind of object that is, is
    :meth:`nnx_lint.analysis.class_kinds.ClassKinds.kind_of`."""

    def __init__(self, hierarchy: ClassHierarchy, expressions: ExpressionClasses, kinds: ClassKinds) -> None:
        self.hierarchy = hierarchy
        self.expressions = expressions
        #: Whether a ``replace`` keeps a field that holds Variables (a copy then holds the same objects).
        self.kinds = kinds

    def ref_of(
        self, expression: nodes.NodeNG | None, substitutions: dict | None = None, depth: int = 0
    ) -> Ref | None:
        """The object ``expression`` denotes, as a :class:`Ref`, or None when unknown.

        ``substitutions`` maps ``(function, parameter name)`` to the :class:`Ref` (or None)
        of the argument a caller passed, for replaying helper and base ``__init__`` calls.
        """
        ref = self._raw_ref(expression, depth)
        if ref is None or not substitutions or ref.root[0] != "param":
            return ref
        key = (ref.root[1], ref.root[2])
        if key not in substitutions:
            return ref
        replacement = substitutions[key]
        if replacement is None:
            return None
        return Ref(replacement.root, replacement.path + ref.path)

    def _raw_ref(self, expression: nodes.NodeNG | None, depth: int) -> Ref | None:
        if expression is None or depth > MAX_REF_DEPTH:
            return None
        if isinstance(expression, nodes.Name):
            _scope, assignments = lookup(expression)
            # `if rngs is None: rngs = self.rngs`: on the default path it is the replacement
            resolved = resolved_default(assignments)
            if resolved is not None:
                assignments = [resolved]
            refs = set()
            for assignment in assignments:
                ref = self._ref_of_binding(assignment, depth + 1)
                if ref is None:
                    return None
                refs.add(ref)
            return refs.pop() if len(refs) == 1 else None
        if isinstance(expression, nodes.Attribute):
            base = self._raw_ref(expression.expr, depth + 1)
            return base.child(expression.attrname) if base is not None else None
        if isinstance(expression, nodes.Subscript):
            index = expression.slice
            if isinstance(expression.value, nodes.Call) and self.hierarchy.nnx_name(expression.value) == "split":
                if isinstance(index, nodes.Const) and isinstance(index.value, int):
                    return self._split_element(expression.value, index.value, depth)
                return None
            base = self._raw_ref(expression.value, depth + 1)
            if base is None or not isinstance(index, nodes.Const):
                return None
            if isinstance(index.value, str):
                return base.child(index.value)
            if isinstance(index.value, int) and not isinstance(index.value, bool):
                return base.child(f"[{index.value}]")
            return None
        if isinstance(expression, nodes.NamedExpr):
            return self._raw_ref(expression.value, depth + 1)
        if isinstance(expression, nodes.Call):
            return self._ref_of_call(expression, depth)
        if isinstance(expression, (nodes.IfExp, nodes.BoolOp)):
            # `rngs if rngs is not None else self.rngs`, `rngs or self.rngs`: the object the
            # default path uses (measured: with `self.rngs`, `nnx.vmap(f)(self, xs, rngs)`
            # raises Duplicate RngCount in Tree Mode)
            fallback = default_fallback(expression)
            return self._raw_ref(fallback, depth + 1) if fallback is not None else None
        return None

    def _ref_of_call(self, call: nodes.Call, depth: int) -> Ref | None:
        nnx_name = self.hierarchy.nnx_name(call)
        if nnx_name in ("data", "view") and call.args:
            # nnx.view(m, deterministic=True) is a copy of m's tree holding m's own Variables
            # (measured: `nnx.jit(f)(m, nnx.view(m))` raises Duplicate Param in Tree Mode)
            return self._raw_ref(call.args[0], depth + 1)
        if nnx_name in ("state", "variables") and call.args:
            base = self._raw_ref(call.args[0], depth + 1)
            if base is None:
                return None
            filters = call.args[1:]
            return base.child(_view_part(filters)) if filters else base
        if nnx_name == "merge" and len(call.args) >= 2 and not _keyword_may_be_true(call, "copy"):
            merged = self._merged(call, depth)
            if merged is not None:
                return merged
        if isinstance(call.func, nodes.Attribute) and call.func.attrname == "fork" and not call.args:
            return Ref(("new", call))
        if call.args and self.hierarchy.resolver_for(call).qualified_name(call.func) == "dataclasses.replace" \
                and not any(self.kinds.field_holds_variables(call.args[0], k.arg) for k in call.keywords or []):
            # dataclasses.replace(c, steps=...) keeps every other field: it still holds c's objects
            return self._raw_ref(call.args[0], depth + 1)
        copied = self._copied_container(call)
        if copied is not None:
            return self._raw_ref(copied, depth + 1)
        # Any other call: one object per evaluation — what it is stays unknown (kind None),
        # but two names bound to the same call result denote the same object.
        return Ref(("new", call))

    def _copied_container(self, call: nodes.Call) -> nodes.NodeNG | None:
        """The receiver of ``state.replace(step=...)`` (a ``flax.struct`` dataclass or
        ``PyTreeNode``) or ``point._replace(...)`` (a NamedTuple) when the copy keeps every
        field that holds NNX state: the copy still holds the receiver's objects (measured with
        flax 0.12.8: ``nnx.jit`` returning ``state.replace(step=...)`` of its input raises
        Duplicate Param in Tree Mode). Only classes known to be such containers, and without
        a method of that name of their own, count."""
        func = call.func
        if not isinstance(func, nodes.Attribute) or func.attrname not in ("replace", "_replace") or call.args:
            return None
        cls = self.expressions.class_of(func.expr)
        if cls is None or cls.definition is None or func.attrname in cls.definition.locals:
            return None
        if func.attrname == "_replace" and not is_named_tuple(cls.definition):
            return None
        if not class_fields(cls.definition) or any(k.arg is None or self.kinds.field_holds_variables(func.expr, k.arg)
                                               for k in call.keywords or []):
            return None
        return func.expr

    def _merged(self, call: nodes.Call, depth: int) -> Ref | None:
        """``nnx.merge(graphdef, state, *states)`` without ``copy=True``: the object whose
        Variables are the states' own (measured with flax 0.12.8: a transform returning the
        merge of its state input, or the split of that merge, raises Duplicate Param in Tree Mode).

        Several states that are parts of one object (``nnx.split(model, nnx.Param, ...)``'s
        groups) denote that object (their common part); states of different objects denote
        the first one's (the Params, as a rule), and the others' Variables are not followed.
        None (a new object) when the first state is unknown or unpacked (``*states``).
        """
        states = call.args[1:]
        if isinstance(states[0], nodes.Starred):
            return None
        first = self._raw_ref(states[0], depth + 1)
        if first is None:
            return None
        path = first.path
        for state in states[1:]:
            other = self._raw_ref(state, depth + 1) if not isinstance(state, nodes.Starred) else None
            if other is None or other.root != first.root:
                break
            common = 0
            while common < min(len(path), len(other.path)) and path[common] == other.path[common]:
                common += 1
            path = path[:common]
        return Ref(first.root, path)

    def _split_element(self, call: nodes.Call, index: int, depth: int) -> Ref | None:
        """``nnx.split(x, *filters)[index]``: the graphdef (no state) or one state group."""
        if index <= 0 or not call.args:
            return None
        base = self._raw_ref(call.args[0], depth + 1)
        if base is None:
            return None
        filters = call.args[1:]
        if len(filters) <= 1:
            return base.child(_view_part(filters)) if filters else base
        if index - 1 < len(filters):
            return base.child(_view_part([filters[index - 1]]))
        return None

    def _ref_of_binding(self, assignment: nodes.NodeNG, depth: int) -> Ref | None:
        if not isinstance(assignment, nodes.AssignName):
            return None
        parent = assignment.parent
        if isinstance(parent, nodes.Arguments):
            function = parent.parent
            if (
                isinstance(function, nodes.FunctionDef)
                and isinstance(function.parent, nodes.ClassDef)
                and parent.args
                and parent.args[0] is assignment
                and not is_static_method(function)
            ):
                return Ref(("self", function.parent))
            return Ref(("param", function, assignment.name))
        if isinstance(parent, nodes.Assign) and assignment in parent.targets:
            return self._raw_ref(parent.value, depth + 1)
        if isinstance(parent, nodes.AnnAssign) and parent.value is not None:
            return self._raw_ref(parent.value, depth + 1)
        if isinstance(parent, (nodes.Tuple, nodes.List)) and isinstance(parent.parent, nodes.Assign):
            position = parent.elts.index(assignment)
            value = parent.parent.value
            if isinstance(value, (nodes.Tuple, nodes.List)) and len(value.elts) == len(parent.elts):
                return self._raw_ref(value.elts[position], depth + 1)
            if isinstance(value, nodes.Call) and self.hierarchy.nnx_name(value) == "split":
                return self._split_element(value, position, depth)
        return None


def _keyword_may_be_true(call: nodes.Call, name: str) -> bool:
    """Whether ``call`` may pass ``name=True``: given as anything but the constant False,
    or possibly inside ``**kwargs``."""
    for keyword in call.keywords or []:
        if keyword.arg is None or keyword.arg == name:
            return not (isinstance(keyword.value, nodes.Const) and keyword.value.value is False)
    return False


def _view_part(filters: list[nodes.NodeNG]) -> str:
    return "<" + ", ".join(f.as_string() for f in filters) + ">"
