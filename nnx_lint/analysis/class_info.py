"""The class model's base types: a class (:class:`ClassRef`), what it stores (:class:`Store`,
:class:`ClassInfo`), and the tree helpers the parts of the model share (a store on ``self``,
a class's dataclass-like fields, a call's arguments bound to a function's parameters).

The model itself is :class:`nnx_lint.analysis.classes.ClassModel`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from astroid import nodes

from nnx_lint.analysis.annotations import annotation_name


#: How deep the model follows bases, helper calls, call sites and nested stores.
MAX_DEPTH = 6


@dataclass(frozen=True)
class ClassRef:
    """A class an expression is known to have: its qualified name and, for project
    classes, its definition (None for flax.nnx and other external classes)."""

    qualified_name: str
    definition: nodes.ClassDef | None = None

    @property
    def short_name(self) -> str:
        return self.qualified_name.rpartition(".")[2]


@dataclass
class Store:
    """One ``self.<path> = value`` found while following a class's construction."""

    path: str
    value: nodes.NodeNG | None
    target: nodes.NodeNG
    method: str
    #: The class whose code holds the store (a base class for inherited stores).
    owner: str


@dataclass
class ClassInfo:
    """What one class stores during construction."""

    ref: ClassRef
    bases: list[ClassRef] = field(default_factory=list)
    stores: list[Store] = field(default_factory=list)
    is_nnx_module: bool = False

    def stores_of(self, path: str) -> list[Store]:
        return [store for store in self.stores if store.path == path]

    def add_inherited(self, stores: list[Store]) -> None:
        """Add a base class's stores, each store statement once: in a diamond (``class
        C(A, B)``, both deriving from ``Base``) ``Base``'s stores reach ``C`` through both
        bases, and keeping every copy doubles the list at each level of a deep diamond."""
        present = {id(store) for store in self.stores}
        self.stores.extend(store for store in stores if id(store) not in present)

    def attribute_names(self) -> list[str]:
        return list(dict.fromkeys(s.path.split(".")[0] for s in self.stores))


def self_store(node: nodes.NodeNG, self_name: str) -> tuple[tuple[str, ...], nodes.NodeNG | None] | None:
    """``(path, value)`` when ``node`` stores on ``self``: the one definition of a store.

    ``self.a.b = v`` (also in tuple unpacking and augmented assignment) gives
    ``(("a", "b"), v)``; ``setattr(self, "a", v)`` with a literal name gives ``(("a",), v)``
    (the name is one part, whatever characters it holds). Both store models of
    this module (:attr:`ClassInfo.stores` and the construction replay) read stores here.
    """
    if isinstance(node, nodes.AssignAttr):
        path = self_path(node, self_name)
        return (tuple(path.split(".")), assigned_value(node)) if path is not None else None
    if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Name) and node.func.name == "setattr" \
            and len(node.args) >= 3 and isinstance(node.args[0], nodes.Name) and node.args[0].name == self_name:
        name = node.args[1]
        if isinstance(name, nodes.Const) and isinstance(name.value, str):
            return (name.value,), node.args[2]
    return None


def self_path(node: nodes.AssignAttr, self_name: str) -> str | None:
    """``self.a.b = ...`` -> ``"a.b"``; None when the chain does not start at ``self``."""
    base, parts = attribute_chain(node)
    if isinstance(base, nodes.Name) and base.name == self_name:
        return ".".join(parts)
    return None


def attribute_chain(node: nodes.AssignAttr | nodes.Attribute) -> tuple[nodes.NodeNG, tuple[str, ...]]:
    """``x.a.b = ...`` -> ``(x, ("a", "b"))``: the expression the chain starts at, and its names."""
    parts = [node.attrname]
    current = node.expr
    while isinstance(current, nodes.Attribute):
        parts.insert(0, current.attrname)
        current = current.expr
    return current, tuple(parts)


def store_target_path(node: nodes.NodeNG) -> tuple[str, ...] | None:
    """``("a", "b")`` for the statement ``<self>.a.b = ...`` (the attribute chain it assigns,
    whatever the first name); None for other kinds of stores."""
    return attribute_chain(node)[1] if isinstance(node, nodes.AssignAttr) else None


def assigned_value(target: nodes.AssignAttr) -> nodes.NodeNG | None:
    """The value stored into ``target`` (also one element of a tuple-to-tuple assignment)."""
    parent = target.parent
    if isinstance(parent, (nodes.Assign, nodes.AnnAssign, nodes.AugAssign)):
        return parent.value
    if isinstance(parent, (nodes.Tuple, nodes.List)) and isinstance(parent.parent, nodes.Assign):
        value = parent.parent.value
        if isinstance(value, (nodes.Tuple, nodes.List)) and len(value.elts) == len(parent.elts):
            return value.elts[parent.elts.index(target)]
    return None


def is_static_method(function: nodes.FunctionDef) -> bool:
    """``@staticmethod`` or ``@classmethod``: a method whose first parameter is not the instance."""
    decorators = function.decorators.nodes if function.decorators else []
    return any(isinstance(d, nodes.Name) and d.name in ("staticmethod", "classmethod") for d in decorators)


#: The attributes of a class's node that keep its fields (on the node, so they live and die
#: with its tree: the kinds of a class's fields ask for the fields once per field).
_FIELDS_ATTRIBUTE = "_nnx_lint_class_fields"
_STORED_FIELDS_ATTRIBUTE = "_nnx_lint_stored_fields"


def class_fields(classdef: nodes.ClassDef) -> dict[str, nodes.NodeNG]:
    """Annotated class-body fields of a dataclass-decorated class, a ``flax.struct.PyTreeNode``
    or a ``typing.NamedTuple`` (name -> annotation; memoised: not to be modified)."""
    found = classdef.__dict__.get(_FIELDS_ATTRIBUTE)
    if found is None:
        found = classdef.__dict__[_FIELDS_ATTRIBUTE] = _class_fields(classdef)
    return found


def _class_fields(classdef: nodes.ClassDef) -> dict[str, nodes.NodeNG]:
    decorators = classdef.decorators.nodes if classdef.decorators else []
    names = {d.attrname if isinstance(d, nodes.Attribute) else getattr(d, "name", None)
             for d in (dd.func if isinstance(dd, nodes.Call) else dd for dd in decorators)}
    if not names & {"dataclass", "struct", "pytree_dataclass"} and not is_named_tuple(classdef) \
            and not _base_named(classdef, _FIELD_CLASS_BASES):
        return {}
    return {statement.target.name: statement.annotation for statement in classdef.body
            if isinstance(statement, nodes.AnnAssign) and isinstance(statement.target, nodes.AssignName)
            and annotation_name(statement.annotation) != "ClassVar"}  # not an __init__ parameter


#: Bases whose subclasses are dataclasses (fields from annotations, ``.replace``).
_FIELD_CLASS_BASES = frozenset({"PyTreeNode"})


def is_named_tuple(classdef: nodes.ClassDef) -> bool:
    """``class Point(NamedTuple)`` / ``typing.NamedTuple``."""
    return _base_named(classdef, frozenset({"NamedTuple"}))


def _base_named(classdef: nodes.ClassDef, names: frozenset[str]) -> bool:
    return any((base.attrname if isinstance(base, nodes.Attribute) else getattr(base, "name", None)) in names
               for base in classdef.bases)


def stored_fields(classdef: nodes.ClassDef) -> dict[str, nodes.NodeNG]:
    """The dataclass fields an instance keeps: an ``InitVar`` only reaches ``__post_init__``
    (memoised: not to be modified)."""
    found = classdef.__dict__.get(_STORED_FIELDS_ATTRIBUTE)
    if found is None:
        found = classdef.__dict__[_STORED_FIELDS_ATTRIBUTE] = {
            name: annotation for name, annotation in class_fields(classdef).items()
            if annotation_name(annotation) != "InitVar"}
    return found


def bind_arguments(
    function: nodes.FunctionDef | nodes.Lambda, call: nodes.Call, skip_first: bool = True, argument_offset: int = 0
) -> dict[str, nodes.NodeNG]:
    """Parameter name -> argument expression for a call of ``function`` (best effort).

    ``skip_first``: the function is a method called on an instance (``self`` is implicit);
    ``argument_offset``: leading call arguments that are not the function's (``Base.__init__(self, ...)``).
    """
    arguments = function.args
    positional = list(arguments.posonlyargs or []) + list(arguments.args or [])
    if skip_first and positional:
        positional = positional[1:]
    bound: dict[str, nodes.NodeNG] = {}
    for parameter, argument in zip(positional, call.args[argument_offset:]):
        if isinstance(argument, nodes.Starred):
            break
        bound[parameter.name] = argument
    names = {p.name for p in positional} | {p.name for p in arguments.kwonlyargs or []}
    for keyword in call.keywords or []:
        if keyword.arg in names:
            bound[keyword.arg] = keyword.value
    return bound
