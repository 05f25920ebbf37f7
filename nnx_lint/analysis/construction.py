"""Construction replay, a part of the class model: how a class builds an instance — its
``__init__`` replayed in order (stores, deletions, helper and ``super().__init__`` calls with
their arguments, constructor arguments stored by child classes) into store events — and the
items a stored value places into the tree (containers, dataclass fields, ``replace``).

:class:`ConstructionReplay` is a part of :class:`nnx_lint.analysis.classes.ClassModel`: it asks
:class:`~nnx_lint.analysis.class_hierarchy.ClassHierarchy` about classes and methods, and
:class:`~nnx_lint.analysis.refs.RefQueries` which object each stored value is.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.base import bounds
from nnx_lint.analysis.class_info import MAX_DEPTH, bind_arguments, class_fields, self_path, stored_fields, self_store
from nnx_lint.analysis.flow import bound_values, lookup
from nnx_lint.analysis.refs import Alias, Ref, SelfReference, StoreEvent, store_overwritten
from nnx_lint.flax_table.flax_layers import FLAX_STORED_ARGUMENTS

if TYPE_CHECKING:
    from nnx_lint.analysis.class_hierarchy import ClassHierarchy
    from nnx_lint.analysis.refs import RefQueries


@dataclass
class Construction:
    """The replay of one class's construction (see :meth:`ConstructionReplay.replay`); its
    ``aliases`` and ``self_references`` are found from the events by
    :meth:`nnx_lint.analysis.aliases.AliasQueries.construction` (empty until then)."""

    classdef: nodes.ClassDef
    #: The ``__init__`` replayed (the class's own or an inherited one), if any.
    init: nodes.FunctionDef | None = None
    events: list[StoreEvent] = field(default_factory=list)
    #: Objects holding Variables (or raw refs) that the instance reaches at two paths.
    aliases: list[Alias] = field(default_factory=list)
    #: Stores that make the instance (or a Module inside it) hold itself (see SelfReference).
    self_references: list[SelfReference] = field(default_factory=list)

    def stored_parameters(self) -> dict[str, list[tuple[tuple[str, ...], tuple[str, ...]]]]:
        """``__init__`` parameters stored as they are: name -> [(stored path, part of it)].

        ``self.rngs = rngs`` gives ``{"rngs": [(("rngs",), ())]}``; ``self.r =
        rngs.dropout`` gives ``{"rngs": [(("r",), ("dropout",))]}``. Stores later undone
        (overwritten or deleted unconditionally) are left out.
        """
        result: dict[str, list[tuple[tuple[str, ...], tuple[str, ...]]]] = {}
        for position, event in enumerate(self.events):
            ref = event.ref
            if ref is None or ref.root[0] != "param" or event.deleted or ref.root[1] is not self.init:
                continue
            if store_overwritten(self.events, event, position + 1, len(self.events)):
                continue
            result.setdefault(ref.root[2], []).append((event.path, ref.path))
        return result


class ConstructionReplay:
    """Construction replay, a part of :class:`nnx_lint.analysis.classes.ClassModel`: how a class
    builds an instance (:meth:`replay`) and the items a value stores (:meth:`stored_items`)."""

    def __init__(self, hierarchy: ClassHierarchy, refs: RefQueries) -> None:
        self.hierarchy = hierarchy
        self.refs = refs
        self._constructions: dict[int, Construction] = {}
        #: Methods replayed and store events kept by this file's constructions (bounded:
        #: :attr:`nnx_lint.base.bounds.Limits.replay_steps`).
        self.replay_work = 0

    def replay(self, classdef: nodes.ClassDef, depth: int = 0) -> Construction:
        """Replay how ``classdef`` builds an instance: its stores in order (memoised; the
        aliases and self references are :meth:`nnx_lint.analysis.aliases.AliasQueries.construction`'s)."""
        key = id(classdef)
        if key in self._constructions:
            return self._constructions[key]
        result = Construction(classdef)
        self._constructions[key] = result  # placed before recursion: guards against cycles
        if depth > MAX_DEPTH:
            return result
        init = result.init = self.hierarchy.init_of(classdef)
        if init is not None:
            replay = _Replay(self, classdef, result, depth)
            replay.method(init, (), {}, None, frozenset())
            self.replay_work += len(result.events)  # kept with the construction, for the file
        return result

    def stored_items(
        self, value: nodes.NodeNG | None, substitutions: dict | None = None, depth: int = 0
    ) -> list[tuple[tuple[str, ...], Ref | None, nodes.NodeNG | None]]:
        """What storing ``value`` puts into the tree: ``(relative path, ref, container)``.

        The value itself at ``()``, then container elements (``nnx.List([...])``,
        ``nnx.Sequential(...)``, list/tuple/dict literals, ``[x] * n``, comprehensions
        repeating an outer object: listed twice) and the constructor arguments a
        child class stores (``Noise(rngs)`` when ``Noise`` keeps ``self.rngs = rngs``).
        """
        items: list[tuple[tuple[str, ...], Ref | None, nodes.NodeNG | None]] = []
        if value is None:
            return [((), None, None)]
        items.append(((), self.refs.ref_of(value, substitutions), None))
        self._expand(value, (), substitutions or {}, items, depth, None)
        return items

    def _expand(self, value, prefix, substitutions, items, depth, container) -> None:
        """Add what ``value`` places below ``prefix``; ``container`` is the outermost
        container expression (``nnx.List(...)``, a list literal, ...) the items sit in."""
        if depth > MAX_DEPTH:
            return
        inner = container if container is not None else value
        if isinstance(value, nodes.Call):
            name = self.hierarchy.nnx_name(value)
            if name == "data" and value.args:
                self._expand(value.args[0], prefix, substitutions, items, depth + 1, container)
                return
            if name == "List" and value.args:
                self._sequence([value.args[0]], prefix, substitutions, items, depth, inner, unpack=True)
                return
            if name == "Sequential":
                self._sequence(value.args, prefix + ("layers",), substitutions, items, depth, inner)
                return
            if name == "Dict":
                for keyword in value.keywords or []:
                    if keyword.arg:
                        self._element(keyword.value, prefix + (keyword.arg,), substitutions, items, depth, inner)
                for entry in value.args[:1]:
                    self._expand(entry, prefix, substitutions, items, depth + 1, inner)
                return
            if _is_builtin_dict(value.func) and not value.args:
                for keyword in value.keywords or []:  # dict(a=x, b=y): a dict literal
                    if keyword.arg:
                        self._element(keyword.value, prefix + (keyword.arg,), substitutions, items, depth, inner)
                return
            if name in FLAX_STORED_ARGUMENTS:
                for position, keyword, path in FLAX_STORED_ARGUMENTS[name]:
                    argument = _argument(value, position, keyword)
                    if argument is not None:
                        self._element(argument, prefix + path, substitutions, items, depth, container)
                return
            cls = (self.hierarchy.resolve(self.hierarchy.resolver_for(value).qualified_name(value.func))
                   or self.hierarchy.local_class(value.func))
            if cls is not None and cls.definition is not None:
                init = self.hierarchy.init_of(cls.definition)
                if init is None:
                    self._dataclass_fields(value, cls.definition, prefix, substitutions, items, container)
                    return
                stored = self.replay(cls.definition, depth + 1).stored_parameters()
                bound = bind_arguments(init, value)
                for parameter, entries in stored.items():
                    if parameter not in bound:
                        continue
                    argument_ref = self.refs.ref_of(bound[parameter], substitutions)
                    for path, part in entries:
                        ref = Ref(argument_ref.root, argument_ref.path + part) if argument_ref else None
                        items.append((prefix + path, ref, container))
            return
        if isinstance(value, (nodes.List, nodes.Tuple)):
            self._sequence([value], prefix, substitutions, items, depth, inner, unpack=True)
        elif isinstance(value, nodes.Dict):
            for key, element in value.items:
                if isinstance(key, nodes.Const) and isinstance(key.value, str):
                    self._element(element, prefix + (key.value,), substitutions, items, depth, inner)
        elif isinstance(value, (nodes.BinOp, nodes.ListComp)):
            self._sequence([value], prefix, substitutions, items, depth, inner, unpack=True)
        elif isinstance(value, nodes.Name):
            # `block = Block(rngs)` then `self.blocks.append(block)`: what the bound value stores
            bindings = bound_values(value)
            if len(bindings) == 1 and not isinstance(bindings[0], nodes.Name):
                self._expand(bindings[0], prefix, substitutions, items, depth + 1, container)
        elif isinstance(value, nodes.IfExp):
            # `Child(rngs) if rate > 0 else Identity()`: what either branch would store
            for branch in (value.body, value.orelse):
                self._expand(branch, prefix, substitutions, items, depth + 1, container)

    def _dataclass_fields(self, call: nodes.Call, classdef: nodes.ClassDef, prefix, substitutions, items,
                          container) -> None:
        """``Foo(a=v, b=v)`` for a dataclass (no ``__init__`` in the source): each argument is
        stored at its field, positional arguments in field order."""
        fields = list(class_fields(classdef))
        bound = dict(zip(fields, call.args))
        bound.update({k.arg: k.value for k in call.keywords or [] if k.arg in fields})
        if any(isinstance(a, nodes.Starred) for a in call.args):
            return
        stored = stored_fields(classdef)
        for name, argument in bound.items():
            if name in stored:
                items.append((prefix + (name,), self.refs.ref_of(argument, substitutions), container))

    def _element(self, element, path, substitutions, items, depth, container) -> None:
        items.append((path, self.refs.ref_of(element, substitutions), container))
        self._expand(element, path, substitutions, items, depth + 1, container)

    def _sequence(self, elements, prefix, substitutions, items, depth, container, unpack=False) -> None:
        """Elements of a sequence, flattened; repeated ones (``[x] * n``) listed twice."""
        flat: list[tuple[nodes.NodeNG, nodes.NodeNG | None]] = []  # (element, loop it repeats in)
        for element in elements:
            flat.extend(_flatten(element, unpack))
        index = 0
        for element, repeated_in in flat:
            copies = 2 if repeated_in is not None else 1
            for copy in range(copies):
                path = prefix + (f"[{index}]",)
                index += 1
                if copy == 0:
                    self._element(element, path, substitutions, items, depth, container)
                    continue
                # Later iterations: objects created inside the repetition are new ones.
                sub: list = []
                self._element(element, path, substitutions, sub, depth, container)
                for item_path, ref, item_container in sub:
                    if ref is not None and _created_within(ref, repeated_in):
                        ref = None
                    items.append((item_path, ref, item_container))


def _is_builtin_dict(function: nodes.NodeNG) -> bool:
    """``dict`` not rebound in this file (the name resolver leaves builtins unresolved)."""
    if not isinstance(function, nodes.Name) or function.name != "dict":
        return False
    scope, _assignments = lookup(function)
    return isinstance(scope, nodes.Module) and scope.name == "builtins"


def _argument(call: nodes.Call, position: int | None, keyword: str) -> nodes.NodeNG | None:
    for item in call.keywords or []:
        if item.arg == keyword:
            return item.value
    if position is not None and position < len(call.args):
        argument = call.args[position]
        if not any(isinstance(a, nodes.Starred) for a in call.args[: position + 1]):
            return argument
    return None


def _flatten(element: nodes.NodeNG, unpack: bool) -> list[tuple[nodes.NodeNG, nodes.NodeNG | None]]:
    """Elements of a sequence expression; the second item is the repetition they sit in."""
    if isinstance(element, nodes.Starred):
        return _flatten(element.value, True)
    if not unpack:
        return [(element, None)]
    if isinstance(element, (nodes.List, nodes.Tuple)):
        flat = []
        for item in element.elts:
            flat.extend(_flatten(item, False) if not isinstance(item, nodes.Starred) else _flatten(item, True))
        return flat
    if isinstance(element, nodes.BinOp) and element.op == "*":
        sequence = element.left if isinstance(element.left, (nodes.List, nodes.Tuple)) else element.right
        if isinstance(sequence, (nodes.List, nodes.Tuple)) and not (
            isinstance(element.left, nodes.Const) and isinstance(element.right, nodes.Const)
        ):
            count = element.right if sequence is element.left else element.left
            if isinstance(count, nodes.Const) and isinstance(count.value, int) and count.value < 2:
                return [(item, None) for item in sequence.elts]
            return [(item, element) for item in sequence.elts]
    if isinstance(element, (nodes.ListComp, nodes.GeneratorExp)):
        return [(element.elt, element)]
    return [(element, None)]


def _created_within(ref: Ref, scope: nodes.NodeNG) -> bool:
    """Whether the object ``ref`` denotes is created anew by code inside ``scope``."""
    if ref.root[0] == "new":
        node = ref.root[1]
    elif ref.root[0] == "param":
        node = ref.root[1]  # a lambda/function defined inside: a fresh parameter each time
    else:
        return False
    while node is not None:
        if node is scope:
            return True
        node = node.parent
    return False


def _guards(node: nodes.NodeNG, stop: nodes.NodeNG) -> frozenset:
    found = set()
    child, current = node, node.parent
    while current is not None and current is not stop:
        if isinstance(current, nodes.If):
            found.add((id(current), "body" if child in current.body else "orelse" if child in current.orelse else "test"))
        elif isinstance(current, (nodes.For, nodes.While)):
            found.add((id(current), "loop" if child in current.body else "loop-else"))
        elif isinstance(current, nodes.Try if hasattr(nodes, "Try") else nodes.TryExcept):
            found.add((id(current), "try"))
        elif isinstance(current, nodes.ExceptHandler):
            found.add((id(current), "except"))
        elif isinstance(current, nodes.IfExp):
            found.add((id(current), "ifexp"))
        child, current = current, current.parent
    return frozenset(found)


def _walk_nodes(statements: list[nodes.NodeNG]):
    """Nodes of ``statements`` in source order, not entering nested functions/classes."""
    stack = list(reversed(statements))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.Lambda, nodes.ClassDef)):
            continue
        stack.extend(reversed(list(node.get_children())))


class _Replay:
    """Replays one class's ``__init__`` (with helpers and base initialisers) into events."""

    def __init__(self, part: ConstructionReplay, classdef: nodes.ClassDef, result: Construction, depth: int) -> None:
        self.part = part
        self.classdef = classdef
        self.result = result
        self.depth = depth
        self.active: set[int] = set()
        self.step = f"replaying how class `{classdef.name}` is constructed"

    def method(self, method, guards, substitutions, origin, outer: frozenset) -> None:
        if id(method) in self.active or len(self.active) > MAX_DEPTH or not method.args.args:
            return
        # Initialisers calling base initialisers several times replay them that many times
        # over, up to MAX_DEPTH deep: the file's replay steps (and the events kept) are counted.
        self.part.replay_work += 1
        bounds.check_count(self.part.replay_work + len(self.result.events), bounds.LIMITS.replay_steps, self.step)
        bounds.checkpoint(self.step)
        self.active.add(id(method))
        self_name = method.args.args[0].name
        events = self.result.events
        for node in _walk_nodes(method.body):
            # the guards are asked for only where an event can come from: most nodes are neither
            stored = self_store(node, self_name)
            if stored is not None:
                path, value = stored
                self._store(path, value, node, origin, outer | _guards(node, method), substitutions)
            elif isinstance(node, nodes.DelAttr):
                path = self_path(node, self_name)
                if path is not None:
                    events.append(StoreEvent(tuple(path.split(".")), None, node, origin or node,
                                             outer | _guards(node, method), deleted=True))
            elif isinstance(node, nodes.Call):
                self._call(node, method, self_name, outer | _guards(node, method), substitutions, origin)
        self.active.discard(id(method))

    def _store(self, path, value, node, origin, guards, substitutions) -> None:
        for relative, ref, container in self.part.stored_items(value, substitutions, self.depth):
            self.result.events.append(
                StoreEvent(path + relative, ref, node, origin or node, guards, container if relative else None)
            )

    def _call(self, node: nodes.Call, method, self_name, guards, substitutions, origin) -> None:
        func = node.func
        is_self = lambda n: isinstance(n, nodes.Name) and n.name == self_name  # noqa: E731
        if isinstance(func, nodes.Name) and func.name in ("setattr", "delattr") and len(node.args) >= 2:
            target, name = node.args[0], node.args[1]
            if func.name == "delattr" and is_self(target) and isinstance(name, nodes.Const) \
                    and isinstance(name.value, str):
                self.result.events.append(StoreEvent((name.value,), None, node, origin or node, guards, deleted=True))
            return  # setattr is a store: handled by self_store in method()
        if not isinstance(func, nodes.Attribute):
            return
        # self.<path>.append(x): x placed in the list at <path>
        if func.attrname == "append" and len(node.args) == 1:
            path = _attribute_path(func.expr, self_name)
            if path:
                index = sum(1 for e in self.result.events if e.path[:-1] == path and e.path[-1:] and
                            e.path[-1].startswith("["))
                loop = _enclosing_loop(node, method)
                copies = 2 if loop is not None else 1
                for copy in range(copies):
                    items = self.part.stored_items(node.args[0], substitutions, self.depth)
                    for relative, ref, container in items:
                        if copy and ref is not None and _created_within(ref, loop):
                            ref = None
                        self.result.events.append(StoreEvent(
                            path + (f"[{index + copy}]",) + relative, ref, node, origin or node, guards,
                            container if relative else None))
            return
        if func.attrname == "__init__":
            base_init = self._base_init(func.expr, method)
            if base_init is not None:
                explicit_self = not (isinstance(func.expr, nodes.Call))
                args_call = node
                bound = _bind_call(base_init, args_call, skip_self_argument=explicit_self)
                subs = {(base_init, name): self.part.refs.ref_of(arg, substitutions) for name, arg in bound.items()}
                self.method(base_init, (), subs, origin or node, guards)
            return
        if is_self(func.expr):
            helper = self.part.hierarchy.method_of(self.classdef, func.attrname)
            if helper is not None and helper.name != "__init__":
                bound = _bind_call(helper, node, skip_self_argument=False)
                subs = {(helper, name): self.part.refs.ref_of(arg, substitutions) for name, arg in bound.items()}
                helper_origin = origin
                if helper_origin is None and helper.parent is not self.classdef:
                    helper_origin = node  # an inherited helper: report at the call
                self.method(helper, (), subs, helper_origin, guards)

    def _base_init(self, expression: nodes.NodeNG, method: nodes.FunctionDef) -> nodes.FunctionDef | None:
        owner = method.parent
        if not isinstance(owner, nodes.ClassDef):
            return None
        if isinstance(expression, nodes.Call) and isinstance(expression.func, nodes.Name) and expression.func.name == "super":
            for base in self.part.hierarchy.info(owner).bases:
                if base.definition is not None:
                    return self.part.hierarchy.init_of(base.definition)
            return None
        name = self.part.hierarchy.resolver_for(expression).qualified_name(expression)
        ref = self.part.hierarchy.resolve(name) or self.part.hierarchy.local_class(expression)
        if ref is not None and ref.definition is not None:
            return self.part.hierarchy.init_of(ref.definition)
        return None


def _bind_call(function: nodes.FunctionDef, call: nodes.Call, skip_self_argument: bool) -> dict[str, nodes.NodeNG]:
    """Bind a method call's arguments; ``skip_self_argument`` when ``self`` is passed explicitly."""
    return bind_arguments(function, call, argument_offset=1 if skip_self_argument else 0)


def _attribute_path(expression: nodes.NodeNG, self_name: str) -> tuple[str, ...] | None:
    parts: list[str] = []
    while isinstance(expression, nodes.Attribute):
        parts.insert(0, expression.attrname)
        expression = expression.expr
    if isinstance(expression, nodes.Name) and expression.name == self_name and parts:
        return tuple(parts)
    return None


def _enclosing_loop(node: nodes.NodeNG, stop: nodes.NodeNG) -> nodes.NodeNG | None:
    current = node.parent
    while current is not None and current is not stop:
        if isinstance(current, (nodes.For, nodes.While)):
            return current
        current = current.parent
    return None
