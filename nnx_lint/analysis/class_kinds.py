"""What a class's instances hold, a part of the class model: the kind of an instance
(``"module"``, ``"variable"``, ``"rngs"``, ... or None), worked out from its class's bases
and stores (and, for one construction, the arguments it passes), and the classes of
parameters (annotations narrowed by what callers pass).

:class:`ClassKinds` is a part of :class:`nnx_lint.analysis.classes.ClassModel`: it asks
:class:`~nnx_lint.analysis.class_hierarchy.ClassHierarchy` about classes,
:class:`~nnx_lint.analysis.expression_classes.ExpressionClasses` the classes of values and
parameters, and :class:`~nnx_lint.analysis.refs.RefQueries` which object a stored value is.
"""
from __future__ import annotations

from astroid import nodes

from nnx_lint.flax_table import nnx_api
from nnx_lint.analysis.class_info import (MAX_DEPTH, ClassInfo, ClassRef, Store, attribute_chain,
                                          bind_arguments, stored_fields)
from nnx_lint.analysis.annotations import annotation_expression, parameter_annotation
from nnx_lint.analysis.class_hierarchy import ClassHierarchy
from nnx_lint.analysis.expression_classes import ExpressionClasses
from nnx_lint.analysis.flow import lookup
from nnx_lint.analysis.refs import (MAX_REF_DEPTH, RNG_CLASSES, RNG_TYPES, STATEFUL_KINDS, VARIABLE_CLASSES, Ref,
                                    RefQueries, names_rngs)
from nnx_lint.base.node_index import nodes_of_class
from nnx_lint.flax_table.flax_layers import FLAX_SUBMODULE_ATTRIBUTES, FLAX_VARIABLE_ATTRIBUTES
from nnx_lint.flax_table.names import (ARRAY_FUNCTION_MODULES, GENERIC_MODULE_CLASSES, MUTABLE_ARRAY_CONSTRUCTORS,
                                       MUTABLE_ARRAY_TYPES, NNX_MODULE_BASES, NNX_PREFIX)


#: Attributes and methods that read or write a Variable's value (``m.w.value``, ``m.w.get_value()``).
_VARIABLE_ACCESSORS = frozenset({"value", "get_value", "set_value"})


def _is_subscript_store(node: nodes.Subscript) -> bool:
    """``x[...] = v`` / ``x[i] += v``: an in-place Variable write (jax arrays cannot be written)."""
    parent = node.parent
    return (isinstance(parent, nodes.Assign) and node in parent.targets) or (
        isinstance(parent, nodes.AugAssign) and parent.target is node)


class ClassKinds:
    """What a class's instances hold, a part of :class:`nnx_lint.analysis.classes.ClassModel`:
    the kind of an instance (:meth:`class_kind`), of an object (:meth:`kind_of`), of a
    parameter, of a stored attribute."""

    def __init__(self, hierarchy: ClassHierarchy, expressions: ExpressionClasses) -> None:
        self.hierarchy = hierarchy
        self.expressions = expressions
        #: Object identity: set by :meth:`connect` (it asks this part back).
        self.refs: RefQueries | None = None
        #: Classes whose kind is being worked out: one that holds itself through its stores
        #: (``A`` stores a ``B()``, ``B`` an ``A()``) must not recurse without end.
        self._kinds_in_progress: set[int] = set()
        #: Per function: the parameters it uses as a Module (kind from use).
        self._module_uses: dict[int, set[str]] = {}

    def connect(self, refs: RefQueries) -> None:
        """Wire the part that answers which object an expression denotes (built after this one:
        it asks this part whether a replaced field holds Variables)."""
        self.refs = refs

    # -- what parameters and classes hold ----------------------------------------------
    def parameter_class(self, function: nodes.NodeNG, name: str, depth: int = 0) -> ClassRef | None:
        """The class of ``function``'s parameter ``name``: its annotation, narrowed by what the
        project's calls pass when the annotation says only "a Module" (or is missing)."""
        known = self.parameter_annotation_class(function, name)
        if known is None or known.qualified_name in NNX_MODULE_BASES:
            known = self.hierarchy.narrowed(known, self.expressions.call_site_class(function, name, depth))
        return known

    def parameter_is_rngs(self, function: nodes.NodeNG, name: str, depth: int = 0) -> bool:
        """The one answer to "is this parameter an ``nnx.Rngs``?" that every rule gets (the
        shared-reference rules through :meth:`kind_of`, the grad rules through what a Module
        holds): an Rngs, an RngStream or an RNG Variable by its class (:meth:`parameter_class`),
        else, when nothing says its class, by the naming convention (:func:`names_rngs`)."""
        known = self.parameter_class(function, name, depth)
        if known is not None:
            return known.qualified_name in RNG_TYPES or self.class_kind(known) == "rngs"
        annotation = annotation_expression(parameter_annotation(function, name))
        if annotation is not None:  # a stated type (`int`, `nnx.Rngs | None`): does it name an Rngs?
            resolver = self.hierarchy.resolver_for(annotation)
            return any(resolver.qualified_name(part) in RNG_TYPES
                       for part in (annotation, *annotation.nodes_of_class((nodes.Name, nodes.Attribute))))
        return names_rngs(name)

    def parameter_annotation_class(self, function: nodes.NodeNG, name: str) -> ClassRef | None:
        """The class the annotation of ``function``'s parameter ``name`` names, or None."""
        return self.hierarchy.annotated_class(parameter_annotation(function, name))

    def _annotation_name(self, function: nodes.NodeNG, name: str) -> str | None:
        """The qualified name a parameter's annotation spells (``jax.Ref``), class or not."""
        return self.hierarchy.annotation_qualified_name(parameter_annotation(function, name))

    def class_kind(self, ref: ClassRef | None, call: nodes.Call | None = None) -> str | None:
        """The kind of an instance of class ``ref`` (see :meth:`kind_of`)."""
        if ref is None:
            return None
        name = ref.short_name
        if ref.definition is None:
            if not ref.qualified_name.startswith(NNX_PREFIX):
                return None
            if name in RNG_CLASSES:
                return "rngs"
            if name in VARIABLE_CLASSES:
                return "variable"
            if name in nnx_api.STATELESS_MODULE_CLASSES:  # a Dropout without rngs holds no state
                return "module" if call is not None and _has_keyword(call, "rngs") else None
            if nnx_api.holds_variables(ref.qualified_name):
                return "module"
            return None
        if self.hierarchy.derives_from(ref.definition, VARIABLE_CLASSES):
            return "variable"
        if self.hierarchy.derives_from(ref.definition, RNG_CLASSES):
            return "rngs"
        if id(ref.definition) in self._kinds_in_progress:
            return None  # the class again, below itself: its other stores decide
        self._kinds_in_progress.add(id(ref.definition))
        try:
            info = self.hierarchy.info(ref.definition)
            arguments = self._init_arguments(ref.definition, call)
            if info.is_nnx_module and (self._flax_base_holds_variables(info)
                                       or any(self._store_may_hold_variables(store, info, arguments)
                                              for store in info.stores)):
                return "module"
            if not info.is_nnx_module and any(self.field_kind(ref.definition, name)
                                              for name in stored_fields(ref.definition)):
                return "module"  # a dataclass holder (a registered pytree) with a Module/Variable field
            return None  # a Module storing only constants and plain arrays holds no Variables
        finally:
            self._kinds_in_progress.discard(id(ref.definition))

    def _flax_bases(self, info: ClassInfo, depth: int = 0) -> list[ClassRef]:
        """The ``flax.nnx`` classes a project class derives from, directly or through project bases."""
        found = []
        for base in info.bases:
            if base.definition is None:
                if base.qualified_name.startswith(NNX_PREFIX):
                    found.append(base)
            elif depth < MAX_DEPTH:
                found.extend(self._flax_bases(self.hierarchy.info(base.definition), depth + 1))
        return found

    def _flax_base_holds_variables(self, info: ClassInfo) -> bool:
        """Whether a ``flax.nnx`` class that holds Variables is a base (``class
        MyAccuracy(nnx.metrics.Accuracy)`` adding only methods holds Accuracy's). The generic
        bases (``nnx.Module``, ``nnx.Pytree``, ``nnx.List``, ...) hold only what the class stores."""
        return any(nnx_api.holds_variables(base.qualified_name) for base in self._flax_bases(info)
                   if base.qualified_name not in NNX_MODULE_BASES and base.qualified_name not in nnx_api.CONTAINER_MODULES)

    def _init_arguments(self, classdef: nodes.ClassDef, call: nodes.Call | None) -> tuple | None:
        """``(__init__, {parameter: argument})`` for one construction ``call`` of ``classdef``:
        a store of a parameter holds what this call passes (``Foo(10)`` with ``self.d = d``
        holds an int, not "anything"). None when there is no call or no ``__init__``."""
        if call is None:
            return None
        init = self.hierarchy.init_of(classdef)
        if init is None:
            return None
        # `Foo(*xs)` / `Foo(**cfg)` may pass any parameter: only the ones bound by name count
        unpacked = any(isinstance(a, nodes.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords or [])
        return init, bind_arguments(init, call), unpacked

    def field_kind(self, classdef: nodes.ClassDef, name: str) -> str | None:
        """The kind an annotated dataclass field holds (``net: nnx.Module`` -> module)."""
        annotation = stored_fields(classdef).get(name)
        if annotation is None:
            return None
        ref = self.hierarchy.annotated_class(annotation)
        kind = self.class_kind(ref) if ref is not None and ref.definition is not classdef else None
        if kind is None and ref is not None and ref.qualified_name in GENERIC_MODULE_CLASSES:
            kind = "module"
        return kind if kind in STATEFUL_KINDS else None

    def field_holds_variables(self, holder: nodes.NodeNG, field: str | None) -> bool:
        """Whether replacing ``field`` of ``holder``'s dataclass replaces a stateful object
        (unknown classes and fields count as not)."""
        ref = self.expressions.class_of(holder)
        return field is not None and ref is not None and ref.definition is not None \
            and self.field_kind(ref.definition, field) is not None

    def _store_may_hold_variables(self, store: Store, info: ClassInfo, arguments: tuple | None,
                                  seen: frozenset[str] = frozenset()) -> bool:
        """:meth:`_may_hold_variables` for one store of a class, for one construction
        (``arguments``: :meth:`_init_arguments`); ``self.right = self.left`` holds what the
        class stores at ``left`` (an alias, not an unknown value)."""
        value = store.value
        if isinstance(value, nodes.Attribute):
            root, parts = attribute_chain(value)
            owner, _ = attribute_chain(store.target) if isinstance(store.target, nodes.AssignAttr) else (None, ())
            path = ".".join(parts)
            aliased = [other for other in info.stores_of(path) if other is not store]
            if isinstance(root, nodes.Name) and isinstance(owner, nodes.Name) and root.name == owner.name \
                    and aliased and path not in seen:
                return any(self._store_may_hold_variables(other, info, arguments, seen | {path}) for other in aliased)
        return self._may_hold_variables(_argument_stored(value, arguments))

    def _may_hold_variables(self, value: nodes.NodeNG | None, depth: int = 0) -> bool:
        """Whether a stored value may be or hold an NNX Variable: unknown values may.

        Literals, functions and plain arrays (``jnp.array(1.0)``, ``np.zeros(3)``,
        ``jax.random.normal(...)``) never do: sharing them runs in Tree Mode (a pytree may
        hold one array twice), so a class storing only those is not stateful. A construction
        of a project class holds Variables exactly when that class does, and so does an
        ``nnx.Dropout`` (only when given ``rngs``).
        """
        if _is_static_value(value):
            return False
        if isinstance(value, nodes.Call) and depth <= MAX_DEPTH:
            name = self.hierarchy.resolver_for(value).qualified_name(value.func) or ""
            if name.startswith(_ARRAY_MODULES):
                return False
            ref = self.hierarchy.resolve(name, at=value)
            if ref is not None and ref.definition is not None and not self.hierarchy.derives_from(
                    ref.definition, VARIABLE_CLASSES | RNG_CLASSES):
                return self.class_kind(ref, value) is not None
            if ref is not None and ref.definition is None and ref.qualified_name.startswith(f"{nnx_api.NNX}.") \
                    and ref.short_name in nnx_api.STATELESS_MODULE_CLASSES:
                return self.class_kind(ref, value) is not None  # `nnx.Dropout(0.5)`: no rngs, no state
        return True

    def is_instance_of(self, ref: ClassRef | None, short_names: frozenset[str]) -> bool:
        """Whether an instance of ``ref`` is one of the flax.nnx classes named ``short_names``:
        the class itself, or a project class deriving from it."""
        if ref is None:
            return False
        if ref.definition is None:
            return ref.qualified_name.startswith(NNX_PREFIX) and ref.short_name in short_names
        return self.hierarchy.derives_from(ref.definition, short_names)

    def _descend(self, cls: ClassRef | None, path: tuple[str, ...], call: nodes.Call | None, depth: int) -> str | None:
        kind = self.class_kind(cls, call)
        if not path or kind is None:
            return kind
        if kind == "rngs":
            return "rngs"  # a stream of an Rngs shares its RngKey/RngCount
        if kind != "module":
            return None  # attributes of a Variable are arrays
        head = path[0]
        if head.startswith("<"):
            return "state"
        if cls.definition is not None:
            # Alternative stores (`if`/`else`) mean "may be": the one stateful kind some
            # branch that can run gives is the answer; branches that never run don't count.
            kinds = {self.kind_of(_extend(self.refs.ref_of(store.value), path[1:]), depth + 1)
                     for store in self.hierarchy.info(cls.definition).stores_of(head) if not _never_runs(store.target)}
            kinds.discard(None)
            if kinds or len(path) != 1:
                return kinds.pop() if len(kinds) == 1 else None
            # not stored by the project class: an attribute its flax base stores (`MyLinear.kernel`)
            return next(filter(None, (self._flax_attribute_kind(base, head) for base in self._flax_bases(
                self.hierarchy.info(cls.definition)))), None)
        if len(path) == 1:
            return self._flax_attribute_kind(cls, head)
        return None

    @staticmethod
    def _flax_attribute_kind(cls: ClassRef, head: str) -> str | None:
        """The kind of attribute ``head`` of an instance of the flax class ``cls``."""
        if head in FLAX_VARIABLE_ATTRIBUTES.get(cls.short_name, ()):
            return "variable"
        if head in FLAX_SUBMODULE_ATTRIBUTES.get(cls.short_name, ()):
            return "module"
        return None

    def kind_of(self, ref: Ref | None, depth: int = 0) -> str | None:
        """What the object holds: "module", "variable", "rngs", "state", "ref" or None (unknown).

        The first four hold NNX Variables; "ref" is a raw mutable array (``jax.new_ref``),
        which Tree Mode may not reach twice either (:data:`SHARED_KINDS`). The aliasing
        rules ignore everything else.
        """
        if ref is None or depth > MAX_REF_DEPTH:
            return None
        origin = ref.root[0]
        if origin == "self":
            return self._descend(self.hierarchy.ref_of_definition(ref.root[1]), ref.path, None, depth)
        if origin == "new":
            call = ref.root[1]
            if isinstance(call.func, nodes.Attribute) and call.func.attrname == "fork":
                return "rngs"
            if not ref.path and self.hierarchy.resolver_for(call).qualified_name(
                    call.func) in MUTABLE_ARRAY_CONSTRUCTORS:
                return "ref"
            return self._descend(self.expressions.class_of(call), ref.path, call, depth)
        if origin == "param":
            function, name = ref.root[1], ref.root[2]
            known = self.parameter_class(function, name, depth)
            if known is not None:
                return self._descend(known, ref.path, None, depth)
            if not ref.path and self._annotation_name(function, name) in MUTABLE_ARRAY_TYPES:
                return "ref"
            if self.parameter_is_rngs(function, name, depth):  # unknown class: the naming convention
                return "rngs"
            if not ref.path and self.used_as_module(function, name):
                return "module"
        return None

    def used_as_module(self, function: nodes.NodeNG, name: str) -> bool:
        """Whether ``function`` uses its parameter ``name`` as an NNX Module (kind from use):
        hands it to an API that takes one (the model of ``nnx.Optimizer`` /
        ``nnx.ModelAndOptimizer``), or reads or writes Variables through its attributes
        (``name.w.value``, ``name.w.get_value()``, ``name.w[...] = v``)."""
        key = id(function)
        if key not in self._module_uses:  # one walk per function, whatever is asked of it
            self._module_uses[key] = self._module_uses_in(function)
        return name in self._module_uses[key]

    def _module_uses_in(self, function: nodes.NodeNG) -> set[str]:
        names = {
            call.args[0].name for call in nodes_of_class(function, nodes.Call)
            if call.args and isinstance(call.args[0], nodes.Name) and call.scope() is function
            and self.hierarchy.nnx_name(call) in nnx_api.OPTIMIZER_CLASSES
        }
        for node in nodes_of_class(function, (nodes.Attribute, nodes.Subscript)):
            if node.scope() is not function:
                continue
            if isinstance(node, nodes.Attribute) and node.attrname in _VARIABLE_ACCESSORS:
                held = node.expr
            elif isinstance(node, nodes.Subscript) and _is_subscript_store(node):
                held = node.value
            else:
                continue
            if not isinstance(held, nodes.Attribute):
                continue  # `m.value` / `m[...] = v` on the parameter itself: m may be the Variable
            while isinstance(held, nodes.Attribute):
                held = held.expr
            if isinstance(held, nodes.Name):
                names.add(held.name)
        return names


def _never_runs(node: nodes.NodeNG) -> bool:
    """Whether ``node`` sits in a branch that cannot run: ``if False:``, ``if 0:``, the
    ``else`` of ``if True:``, ``if TYPE_CHECKING:``."""
    child, parent = node, node.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.ClassDef, nodes.Module)):
        if isinstance(parent, nodes.If):
            test = parent.test
            constant = test.value if isinstance(test, nodes.Const) else None
            if isinstance(test, nodes.Name) and test.name == "TYPE_CHECKING":
                constant = True  # the body is for type checkers only
                if child in parent.body:
                    return True
            if isinstance(test, nodes.Const) and child in parent.body and not constant:
                return True
            if isinstance(test, nodes.Const) and child in parent.orelse and constant:
                return True
        child, parent = parent, parent.parent
    return False


#: Modules whose functions return plain arrays (never Variables).
_ARRAY_MODULES = ARRAY_FUNCTION_MODULES


def _is_static_value(value: nodes.NodeNG | None) -> bool:
    """Literals and functions: never NNX state."""
    if isinstance(value, (nodes.Const, nodes.JoinedStr, nodes.Lambda)):
        return True
    if isinstance(value, (nodes.Tuple, nodes.List, nodes.Set)):
        return all(_is_static_value(element) for element in value.elts)
    return False


def _has_keyword(call: nodes.Call, name: str) -> bool:
    for keyword in call.keywords or []:
        if keyword.arg == name:
            return not (isinstance(keyword.value, nodes.Const) and keyword.value.value is None)
    return False


def _extend(ref: Ref | None, path: tuple[str, ...]) -> Ref | None:
    return Ref(ref.root, ref.path + tuple(path)) if ref is not None else None


def _argument_stored(value: nodes.NodeNG | None, arguments: tuple | None) -> nodes.NodeNG | None:
    """What a stored ``value`` is for one construction: the argument the call passes when
    ``value`` reads an ``__init__`` parameter unchanged (its default when the call passes
    none), else ``value`` itself (``arguments``: :meth:`ClassKinds._init_arguments`)."""
    if arguments is None or not isinstance(value, nodes.Name):
        return value
    init, bound, unpacked = arguments
    _scope, assignments = lookup(value)
    if len(assignments) != 1 or not isinstance(assignments[0], nodes.AssignName) \
            or assignments[0].parent is not init.args:
        return value
    if value.name in bound:
        return bound[value.name]
    if unpacked:
        return value
    try:
        return init.args.default_value(value.name)
    except Exception:  # astroid's NoDefault: a required parameter the call does not show
        return value
