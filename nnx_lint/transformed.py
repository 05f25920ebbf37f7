"""Transformed code: which functions can run inside an NNX transform, and on what.

Graph-update rules (NNX3xx) need to know whether a statement runs inside an NNX
transform, because only there does Tree Mode drop what graph mode propagated back
(new or rebound attributes, static flags, list appends: catalogue C1-C9). This module
answers that once per file (:func:`transformed_code` memoises it on the file context).

**Entries** — functions an NNX transform traces directly:

* decorated: ``@nnx.jit``, ``@nnx.vmap(in_axes=...)``, ``@partial(nnx.scan, ...)``, on
  functions and on methods (``self`` is then a transform input);
* passed: ``nnx.jit(f)``, ``nnx.grad(loss)``, ``nnx.vmap(in_axes=0)(f)``,
  ``partial(nnx.jit, donate_argnums=0)(f)``, including assignments ``step = nnx.jit(f)``;
  ``cond``/``switch`` branches, ``fori_loop``/``while_loop`` bodies (and ``cond_fun``),
  ``custom_vjp`` functions and their ``defvjp(fwd, bwd)``; ``f`` may be a lambda, a
  nested or module-level function, ``self.method``, ``functools.partial(f, ...)`` or a
  function of another project file.

The tracing transforms are ``jit jit_partial shard_map grad value_and_grad custom_vjp vjp
jvp remat vmap pmap scan while_loop fori_loop eval_shape cond switch checkify make_jaxpr
cached_partial`` (not ``split_rngs``/``fork_rngs``/``with_rngs``: they trace nothing).

**Opt-ins**: an entry whose transform keeps graph mode (``graph=True, graph_updates=True``,
``nnx.compat.*``, a graph-mode ``with``/decorator/module setting, all through
:mod:`nnx_lint.mode`) still propagates graph updates, so it does not make its function
"transformed code". It is listed in :attr:`TransformedCode.entries` with
``keeps_graph=True`` but never starts a :class:`Reach`. Neither does a transform that pins
Tree Mode itself (a literal ``graph=False`` or ``graph_updates=False``,
``Entry.explicit_tree``): its semantics do not change when the defaults flip, so there is
nothing to report (``Entry.affected`` is False for both).

**Reach** — from every Tree Mode entry, calls are followed breadth-first (shortest chain
wins, depth-limited): ``helper(m)`` (a function of this file or, through imports, of another
project file), ``self.helper()`` (methods looked up through project base classes),
``model(x)`` → ``Cls.__call__`` and ``model.method()`` when the class of ``model`` is known
(:meth:`nnx_lint.classes.ClassModel.class_of`: an annotation, a construction, a stored
attribute), and nested functions/lambdas referenced by reached code (they run in the same
trace: ``jax.lax.fori_loop`` bodies, local helpers). Constructor calls are not followed:
``__init__`` of a module built inside the transform works on a new object (fine).

Each reached function carries its **external names**: parameters (and closure names)
bound to objects that come from outside the transform — the entry's parameters, and
whatever reached code passes on from them (``self.layers[0]``, ``for layer in
self.layers``, aliases). A change to an object rooted at an external name is what Tree
Mode silently drops; a change to a module constructed inside the transform is fine.

**Confidence** (reported in a diagnostic's ``facts``): ``"transform"`` for an entry,
``"called"`` for code reached through calls, and ``"heuristic"`` from
:meth:`TransformedCode.heuristic`: a non-``__init__`` method of an NNX Module class that
no entry reaches is assumed to run under a transform. Rules use the heuristic only where
precision allows, and say so.

**Files**: reached functions may live in other project files; their ``Reach.boundary`` is
the call in the linted file through which the chain left it, so a rule reports there
(diagnostics always belong to the file being linted).

Cost: one pass over the file to find entries, then a bounded walk (``_MAX_FUNCTIONS``
functions, ``_MAX_DEPTH`` calls deep), computed on the first query and memoised; per
module helpers for other files are memoised per :class:`~nnx_lint.project.Project`.
"""
from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.calls import NNXCall, constant_bool, match_nnx_call
from nnx_lint.flow import lookup
from nnx_lint.mode import ModeContext
from nnx_lint.names import NameResolver
from nnx_lint.nnx_api import EXTERNAL_PACKAGES, is_compat, short_name

if TYPE_CHECKING:
    from nnx_lint.engine import FileContext

#: NNX transforms that trace the functions given to them.
TRACING_TRANSFORMS: frozenset[str] = frozenset(
    """
    jit jit_partial shard_map grad value_and_grad custom_vjp vjp jvp remat vmap pmap scan
    while_loop fori_loop eval_shape cond switch checkify make_jaxpr cached_partial
    """.split()
)

#: Which arguments of a transform are traced functions: positions and keyword names.
_FUNCTION_ARGUMENTS: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    "cond": ((1, 2), ("true_fun", "false_fun")),
    "switch": ((1,), ("branches",)),
    "fori_loop": ((2,), ("body_fun",)),
    "while_loop": ((0, 1), ("cond_fun", "body_fun")),
}
_DEFAULT_FUNCTION_ARGUMENTS = ((0,), ("f", "fun", "func"))

_MAX_DEPTH = 12
_MAX_FUNCTIONS = 400
_MAX_ALIAS_DEPTH = 4

Function = nodes.FunctionDef | nodes.AsyncFunctionDef | nodes.Lambda
_FUNCTION_TYPES = (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.Lambda)


@dataclass(frozen=True)
class Entry:
    """A function traced directly by an NNX transform."""

    function: Function
    #: Short transform name: ``jit``, ``vmap``, ...
    transform: str
    #: The decorator or call node that applies the transform.
    node: nodes.NodeNG
    #: The NNX call (None for a bare decorator such as ``@nnx.jit``).
    call: NNXCall | None
    #: Whether the transform keeps graph mode (opt-in): then graph updates still propagate.
    keeps_graph: bool
    #: ``decorator``, ``call`` or ``defvjp``.
    form: str
    #: Whether the transform already pins Tree Mode (``graph=False`` or
    #: ``graph_updates=False``): its behaviour does not change when the defaults flip.
    explicit_tree: bool = False

    @property
    def affected(self) -> bool:
        """Whether flipping the defaults changes this transform (no opt-in, no explicit pin)."""
        return not self.keeps_graph and not self.explicit_tree

    @property
    def is_compat(self) -> bool:
        return self.call is not None and self.call.is_compat


@dataclass
class Reach:
    """How a function comes to run inside a Tree Mode NNX transform."""

    function: Function
    entry: Entry | None
    #: Function names from the entry to this function (``["train_step", "Model.__call__"]``).
    chain: tuple[str, ...]
    #: Parameter / closure names bound to objects from outside the transform.
    external: frozenset[str] = field(default_factory=frozenset)
    #: ``transform`` (an entry), ``called`` (reached through calls) or ``heuristic``.
    confidence: str = "transform"
    #: For functions of other files: the call in the linted file the chain went through.
    boundary: nodes.Call | None = None
    #: Classes of parameters known from the call sites (``step(M())``, ``util(model)``).
    classes: dict = field(default_factory=dict)

    @property
    def transform(self) -> str | None:
        return self.entry.transform if self.entry else None

    def facts(self) -> dict:
        """JSON-able facts describing this reach, for a diagnostic."""
        return {
            "transform": self.transform,
            "traced_by": f"`nnx.{self.transform}`" if self.entry else "an NNX transform (assumed: Module method)",
            "entry": _function_name(self.entry.function) if self.entry else None,
            "entry_line": self.entry.function.lineno if self.entry else None,
            "call_chain": list(self.chain),
            "confidence": self.confidence,
        }


class _ModuleTools:
    """Name resolution and mode context for one module (the linted one or another file)."""

    def __init__(self, module: nodes.Module, resolver: NameResolver, mode: ModeContext) -> None:
        self.module = module
        self.resolver = resolver
        self.mode = mode
        self._calls: dict[int, NNXCall | None] = {}

    def nnx_call(self, node: nodes.NodeNG) -> NNXCall | None:
        if not isinstance(node, nodes.Call):
            return None
        key = id(node)
        if key not in self._calls:
            self._calls[key] = match_nnx_call(node, self.resolver)
        return self._calls[key]


_PROJECT_TOOLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def transformed_code(context: FileContext) -> TransformedCode:
    """The (memoised) :class:`TransformedCode` service of one linted file."""
    return context.service(TransformedCode)


class TransformedCode:
    """Per-file answers to "does this code run inside a Tree Mode NNX transform?"."""

    def __init__(self, context: FileContext) -> None:
        self.context = context
        self.module = context.module
        self._own_tools = _ModuleTools(context.module, context.resolver, context.mode)
        self._entries: list[Entry] | None = None
        self._entries_by_function: dict[int, list[Entry]] = {}
        self._reaches: dict[int, Reach] | None = None
        self._callables: dict[int, Entry | None] = {}

    # -- tools per module -----------------------------------------------------------------
    def tools(self, node: nodes.NodeNG) -> _ModuleTools:
        """Resolver, mode context and NNX-call matching for the module holding ``node``."""
        root = node.root()
        if root is self.module:
            return self._own_tools
        per_project = _PROJECT_TOOLS.setdefault(self.context.project, {})
        key = id(root)
        if key not in per_project or per_project[key].module is not root:
            resolver = NameResolver(root, self.context.project)
            per_project[key] = _ModuleTools(root, resolver, ModeContext(root, resolver))
        return per_project[key]

    def qualified_name(self, node: nodes.NodeNG | None) -> str | None:
        if node is None:
            return None
        return self.tools(node).resolver.qualified_name(node)

    def nnx_call(self, node: nodes.NodeNG) -> NNXCall | None:
        return self.tools(node).nnx_call(node)

    # -- entries ----------------------------------------------------------------------------
    @property
    def entries(self) -> list[Entry]:
        """Every function of this file an NNX transform traces (incl. graph-mode opt-ins)."""
        if self._entries is None:
            self._entries = []
            for node in self.module.nodes_of_class((nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.Call)):
                if isinstance(node, nodes.Call):
                    self._entries.extend(self._call_entries(node))
                elif node.decorators is not None:
                    self._entries.extend(self._decorator_entries(node))
            for entry in self._entries:
                self._entries_by_function.setdefault(id(entry.function), []).append(entry)
        return self._entries

    def entries_of(self, function: Function) -> list[Entry]:
        """The entries tracing ``function`` directly (empty if none)."""
        self.entries  # noqa: B018 - computes the index
        return self._entries_by_function.get(id(function), [])

    def _decorator_entries(self, function: nodes.FunctionDef) -> Iterator[Entry]:
        for decorator in function.decorators.nodes:
            entry = self._decorator_entry(function, decorator)
            if entry is not None:
                yield entry

    def _decorator_entry(self, function: Function, decorator: nodes.NodeNG) -> Entry | None:
        tools = self.tools(decorator)
        if isinstance(decorator, nodes.Call):
            call = tools.nnx_call(decorator)
            if call is None or call.name not in TRACING_TRANSFORMS:
                return None
            return Entry(function, call.name, decorator, call, tools.mode.keeps_graph_mode(call), "decorator",
                         explicit_tree(call))
        name = tools.resolver.qualified_name(decorator)
        transform = short_name(name)
        if transform not in TRACING_TRANSFORMS:
            return None
        keeps = is_compat(name) or tools.mode.scope_keeps_graph_mode(decorator, transform=True)
        return Entry(function, transform, decorator, None, keeps, "decorator")

    def _call_entries(self, node: nodes.Call) -> Iterator[Entry]:
        tools = self.tools(node)
        call = tools.nnx_call(node)
        if call is not None and call.name in TRACING_TRANSFORMS:
            keeps = tools.mode.keeps_graph_mode(call)
            for argument in _function_arguments(call):
                for function in self.functions_of(argument):
                    yield Entry(function, call.name, node, call, keeps, "call", explicit_tree(call))
            return
        # `nnx.vmap(in_axes=0)(f)` / `partial(nnx.jit, ...)(f)`: a transform factory applied to f.
        factory = tools.nnx_call(node.func) if isinstance(node.func, nodes.Call) else None
        if factory is not None and factory.name in TRACING_TRANSFORMS and node.args and not _function_arguments(factory):
            keeps = tools.mode.keeps_graph_mode(factory)
            for function in self.functions_of(node.args[0]):
                yield Entry(function, factory.name, node, factory, keeps, "call", explicit_tree(factory))
            return
        # `f.defvjp(fwd, bwd)` on a custom_vjp function: fwd and bwd are traced too.
        if isinstance(node.func, nodes.Attribute) and node.func.attrname == "defvjp":
            custom = self.transformed_callable(node.func.expr)
            if custom is not None and custom.transform == "custom_vjp":
                for argument in node.args:
                    for function in self.functions_of(argument):
                        yield Entry(function, "custom_vjp", node, custom.call, custom.keeps_graph, "defvjp",
                                    custom.explicit_tree)

    def functions_of(self, expression: nodes.NodeNG | None, depth: int = 0) -> list[Function]:
        """The function definitions an expression denotes (lambda, name, method, partial)."""
        if expression is None or depth > _MAX_ALIAS_DEPTH:
            return []
        if isinstance(expression, nodes.Lambda):
            return [expression]
        if isinstance(expression, (nodes.List, nodes.Tuple)):  # switch branches
            return [f for element in expression.elts for f in self.functions_of(element, depth + 1)]
        if isinstance(expression, nodes.Call):
            qualified = self.qualified_name(expression.func)
            if qualified == "functools.partial" and expression.args:
                return self.functions_of(expression.args[0], depth + 1)
            return []
        if isinstance(expression, nodes.Name):
            try:
                _scope, assignments = lookup(expression)
            except Exception:
                assignments = []
            found: list[Function] = []
            for assignment in assignments:
                if isinstance(assignment, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
                    found.append(assignment)
                elif isinstance(assignment, nodes.AssignName):
                    for value in bound_values_of(assignment):
                        found.extend(self.functions_of(value, depth + 1))
                elif isinstance(assignment, (nodes.ImportFrom, nodes.Import)):
                    definition = self._project_definition(self.qualified_name(expression))
                    if definition is not None:
                        found.append(definition)
            return found
        if isinstance(expression, nodes.Attribute):
            owner = self.context.classes.class_of_self(expression.expr)
            if owner is not None and owner.definition is not None:
                method = self.method_of(owner.definition, expression.attrname)
                return [method] if method is not None else []
            definition = self._project_definition(self.qualified_name(expression))
            return [definition] if definition is not None else []
        return []

    def _project_definition(self, qualified_name: str | None) -> nodes.FunctionDef | None:
        if not qualified_name or qualified_name.split(".")[0] in EXTERNAL_PACKAGES:
            return None
        definition = self.context.project.definition(qualified_name)
        return definition if isinstance(definition, (nodes.FunctionDef, nodes.AsyncFunctionDef)) else None

    def method_of(self, classdef: nodes.ClassDef, name: str, depth: int = 0) -> nodes.FunctionDef | None:
        """A method of a project class, looked up through its project base classes."""
        found = classdef.locals.get(name)
        if found and isinstance(found[-1], (nodes.FunctionDef, nodes.AsyncFunctionDef)):
            return found[-1]
        if depth > 6:
            return None
        for base in self.context.classes.info(classdef).bases:
            if base.definition is not None:
                method = self.method_of(base.definition, name, depth + 1)
                if method is not None:
                    return method
        return None

    # -- transformed callables ----------------------------------------------------------------
    def transformed_callable(self, expression: nodes.NodeNG) -> Entry | None:
        """If calling ``expression`` calls a transformed function, its :class:`Entry`.

        ``nnx.vmap(f, ...)`` (inline), a name bound to ``nnx.jit(f)``, a function decorated
        with a transform (this file or another project file), ``self.decorated_method``.
        """
        key = id(expression)
        if key in self._callables:
            return self._callables[key]
        self._callables[key] = None  # guards recursion
        found = self._transformed_callable(expression, 0)
        self._callables[key] = found
        return found

    def _transformed_callable(self, expression: nodes.NodeNG, depth: int) -> Entry | None:
        if depth > _MAX_ALIAS_DEPTH:
            return None
        if isinstance(expression, nodes.Call):
            entries = list(self._call_entries(expression))
            return entries[0] if entries else None
        if isinstance(expression, nodes.Name):
            try:
                _scope, assignments = lookup(expression)
            except Exception:
                return None
            for assignment in assignments:
                if isinstance(assignment, (nodes.FunctionDef, nodes.AsyncFunctionDef)) and assignment.decorators:
                    for decorator in assignment.decorators.nodes:
                        entry = self._decorator_entry(assignment, decorator)
                        if entry is not None:
                            return entry
                elif isinstance(assignment, nodes.AssignName):
                    for value in bound_values_of(assignment):
                        entry = self._transformed_callable(value, depth + 1)
                        if entry is not None:
                            return entry
                elif isinstance(assignment, (nodes.ImportFrom, nodes.Import)):
                    return self._imported_callable(self.qualified_name(expression))
            return self._decorated_call_method(expression)
        if isinstance(expression, nodes.Attribute):
            for function in self.functions_of(expression):
                if isinstance(function, nodes.FunctionDef) and function.decorators:
                    for decorator in function.decorators.nodes:
                        entry = self._decorator_entry(function, decorator)
                        if entry is not None:
                            return entry
            return (self._imported_callable(self.qualified_name(expression))
                    or self._decorated_call_method(expression)
                    or self._stored_transform(expression, depth))
        return None

    def _stored_transform(self, expression: nodes.Attribute, depth: int) -> Entry | None:
        """``self._fwd(...)`` where the class (or a base class) stored ``self._fwd = nnx.jit(f)``."""
        owner = self.context.classes.class_of_self(expression.expr)
        if owner is None or owner.definition is None:
            return None
        for store in self.context.classes.info(owner.definition).stores_of(expression.attrname):
            entry = self._transformed_callable(store.value, depth + 1) if store.value is not None else None
            if entry is not None:
                return entry
        return None

    def _decorated_call_method(self, expression: nodes.NodeNG) -> Entry | None:
        """``model(x)`` where ``Cls.__call__`` is decorated with a transform."""
        if _is_class_reference(expression):
            return None
        ref = self.context.classes.class_of_self(expression)
        if ref is None or ref.definition is None:
            return None
        method = self.method_of(ref.definition, "__call__")
        if method is None or not method.decorators:
            return None
        for decorator in method.decorators.nodes:
            entry = self._decorator_entry(method, decorator)
            if entry is not None:
                return entry
        return None

    def _imported_callable(self, qualified_name: str | None) -> Entry | None:
        if not qualified_name or qualified_name.startswith(("flax.", "jax.")):
            return None
        module_name, _, attribute = qualified_name.rpartition(".")
        module = self.context.project.load(module_name) if module_name else None
        if module is None:
            return None
        for assignment in reversed(module.locals.get(attribute, [])):
            if isinstance(assignment, (nodes.FunctionDef, nodes.AsyncFunctionDef)) and assignment.decorators:
                for decorator in assignment.decorators.nodes:
                    entry = self._decorator_entry(assignment, decorator)
                    if entry is not None:
                        return entry
            elif isinstance(assignment, nodes.AssignName):
                for value in bound_values_of(assignment):
                    if isinstance(value, nodes.Call):
                        entries = list(self._call_entries(value))
                        if entries:
                            return entries[0]
            return None
        return None

    # -- reach ------------------------------------------------------------------------------------
    def reach(self, function: Function) -> Reach | None:
        """How ``function`` runs under a Tree Mode NNX transform, or None (not known to)."""
        return self._all_reaches().get(id(function))

    def reaches(self) -> list[Reach]:
        """Every reached function (this file and other project files)."""
        return list(self._all_reaches().values())

    def enclosing_function(self, node: nodes.NodeNG) -> Function | None:
        current = node.parent
        while current is not None and not isinstance(current, (nodes.Module, *_FUNCTION_TYPES)):
            current = current.parent
        return current if isinstance(current, _FUNCTION_TYPES) else None

    def reach_at(self, node: nodes.NodeNG) -> Reach | None:
        """The reach of the innermost function holding ``node`` (None at module level)."""
        function = self.enclosing_function(node)
        return self.reach(function) if function is not None else None

    def heuristic(self, function: Function) -> Reach | None:
        """The documented heuristic: a Module method other than ``__init__`` runs under a
        transform. Returns a ``"heuristic"`` reach (``self`` external) or None."""
        if not isinstance(function, nodes.FunctionDef) or function.name == "__init__":
            return None
        classdef = function.parent
        if not isinstance(classdef, nodes.ClassDef) or not function.args.args:
            return None
        if any(self.qualified_name(d) in ("builtins.staticmethod", "builtins.classmethod", "staticmethod", "classmethod")
               or (isinstance(d, nodes.Name) and d.name in ("staticmethod", "classmethod", "property"))
               for d in (function.decorators.nodes if function.decorators else [])):
            return None
        if not self.context.classes.info(classdef).is_nnx_module:
            return None
        self_name = function.args.args[0].name
        return Reach(function, None, (_function_name(function),), frozenset({self_name}), "heuristic")

    def _all_reaches(self) -> dict[int, Reach]:
        if self._reaches is not None:
            return self._reaches
        reaches: dict[int, Reach] = {}
        queue: deque[tuple[Reach, int]] = deque()
        for entry in self.entries:
            if not entry.affected or entry.function.name == "__init__":
                continue
            external = frozenset(_parameter_names(entry.function))
            reach = Reach(entry.function, entry, (_function_name(entry.function),), external, "transform",
                          classes=self._entry_parameter_classes(entry))
            self._merge(reaches, queue, reach, 0)
        while queue and len(reaches) < _MAX_FUNCTIONS:
            reach, depth = queue.popleft()
            if depth >= _MAX_DEPTH:
                continue
            for target, external, boundary, classes in self._callees(reach):
                chain = reach.chain + (_function_name(target),)
                confidence = "transform" if self.entries_of(target) and target.root() is self.module else "called"
                callee = Reach(target, reach.entry, chain, external, confidence, reach.boundary or boundary, classes)
                self._merge(reaches, queue, callee, depth + 1)
        self._reaches = reaches
        return reaches

    @staticmethod
    def _merge(reaches: dict[int, Reach], queue: deque, reach: Reach, depth: int) -> None:
        known = reaches.get(id(reach.function))
        if known is None:
            reaches[id(reach.function)] = reach
            queue.append((reach, depth))
            return
        changed = False
        if not reach.external <= known.external:
            known.external = known.external | reach.external
            changed = True
        for name, ref in reach.classes.items():
            if name not in known.classes:
                known.classes[name] = ref
                changed = True
        if changed:
            queue.append((known, depth))

    def _callees(self, reach: Reach) -> Iterator[tuple[Function, frozenset[str], nodes.Call | None, dict]]:
        function = reach.function
        local_boundary = function.root() is self.module
        for node in body_nodes(function):
            if isinstance(node, _FUNCTION_TYPES):
                # A nested function or lambda: runs in the same trace when used; closure names
                # keep their externality unless shadowed by its parameters.
                shadowed = frozenset(_parameter_names(node))
                classes = {k: v for k, v in reach.classes.items() if k not in shadowed}
                yield node, reach.external - shadowed, None, classes
                continue
            if not isinstance(node, nodes.Call):
                continue
            for target, receiver in self._call_targets(node, reach):
                external = set()
                classes = {}
                if receiver is not None and isinstance(target, nodes.FunctionDef) and target.args.args:
                    if self.is_external(receiver, reach.external):
                        external.add(target.args.args[0].name)
                    parameters = [a.name for a in target.args.args[1:]]
                else:
                    parameters = _positional_names(target)
                for index, argument in enumerate(node.args):
                    if isinstance(argument, nodes.Starred) or index >= len(parameters):
                        break
                    if self.is_external(argument, reach.external):
                        external.add(parameters[index])
                    ref = self.class_of(argument, reach)
                    if ref is not None:
                        classes[parameters[index]] = ref
                for keyword in node.keywords or []:
                    if keyword.arg and self.is_external(keyword.value, reach.external):
                        external.add(keyword.arg)
                boundary = node if (local_boundary and target.root() is not self.module) else None
                yield target, frozenset(external), boundary, classes

    def _call_targets(self, call: nodes.Call, reach: Reach | None = None) -> Iterator[tuple[Function, nodes.NodeNG | None]]:
        """Functions a call runs, with the receiver bound to the callee's ``self`` (or None)."""
        func = call.func
        tools = self.tools(call)
        qualified = tools.resolver.qualified_name(func)
        if qualified and (qualified.split(".")[0] in EXTERNAL_PACKAGES or qualified.startswith("builtins.")):
            return
        if isinstance(func, nodes.Name):
            for target in self.functions_of(func):
                if not isinstance(target, nodes.Lambda) and isinstance(target.parent, nodes.ClassDef):
                    continue
                yield target, None
            if not self.functions_of(func):
                ref = self.class_of(func, reach)
                if ref is not None and ref.definition is not None and not _is_class_reference(func):
                    method = self.method_of(ref.definition, "__call__")
                    if method is not None:
                        yield method, func
            return
        if isinstance(func, nodes.Attribute):
            receiver = func.expr
            ref = self.class_of(receiver, reach)
            if ref is not None and ref.definition is not None and not _is_class_reference(receiver):
                method = self.method_of(ref.definition, func.attrname)
                if method is not None:
                    yield method, receiver
                    return
                owner = self.context.classes.info(ref.definition)
                stored = {self.context.classes.class_of(s.value) for s in owner.stores_of(func.attrname)}
                stored.discard(None)
                if len(stored) == 1:
                    inner = stored.pop()
                    if inner.definition is not None:
                        method = self.method_of(inner.definition, "__call__")
                        if method is not None:
                            yield method, func
                return
            definition = self._project_definition(qualified)
            if definition is not None:
                yield definition, None

    # -- classes ---------------------------------------------------------------------------------
    def class_of(self, expression: nodes.NodeNG, reach: Reach | None = None):
        """The class of ``expression`` (:meth:`ClassModel.class_of_self`), falling back on the
        parameter classes the reach learned from its call sites, and on stored attributes."""
        ref = self.context.classes.class_of_self(expression)
        if ref is not None or reach is None or not reach.classes:
            return ref
        if isinstance(expression, nodes.Name):
            if expression.name in reach.classes and _binds_parameter(expression):
                return reach.classes[expression.name]
            return None
        if isinstance(expression, nodes.Attribute):
            owner = self.class_of(expression.expr, reach)
            if owner is not None and owner.definition is not None:
                stored = {self.context.classes.class_of(s.value)
                          for s in self.context.classes.info(owner.definition).stores_of(expression.attrname)}
                stored.discard(None)
                return stored.pop() if len(stored) == 1 else None
        return None

    def _entry_parameter_classes(self, entry: Entry) -> dict:
        """Parameter classes of an entry from the calls of its transformed callable in this
        file (``step(m)`` with ``m = M()``), when every call agrees."""
        function = entry.function
        if isinstance(function, nodes.Lambda) and entry.form == "call" and isinstance(entry.node.parent, nodes.Call) \
                and entry.node.parent.func is entry.node:
            calls = [entry.node.parent]  # nnx.jit(lambda m: ...)(model)
        else:
            names = self._callable_names().get(id(function), set())
            calls = [c for c in self._module_calls() if _terminal_name(c.func) in names
                     and (found := self.transformed_callable(c.func)) is not None and found.function is function]
        parameters = _positional_names(function)
        if isinstance(function, nodes.FunctionDef) and isinstance(function.parent, nodes.ClassDef):
            parameters = parameters[1:]
        classes: dict = {}
        conflicts: set[str] = set()
        for call in calls:
            for index, argument in enumerate(call.args):
                if isinstance(argument, nodes.Starred) or index >= len(parameters):
                    break
                ref = self.context.classes.class_of_self(argument)
                name = parameters[index]
                if ref is None or classes.get(name, ref) != ref:
                    conflicts.add(name)
                else:
                    classes[name] = ref
        return {k: v for k, v in classes.items() if k not in conflicts}

    def _module_calls(self) -> list[nodes.Call]:
        if not hasattr(self, "_calls_memo"):
            self._calls_memo = list(self.module.nodes_of_class(nodes.Call))
        return self._calls_memo

    def _callable_names(self) -> dict[int, set[str]]:
        """Names under which each entry function may be called in this file."""
        if not hasattr(self, "_names_memo"):
            names: dict[int, set[str]] = {}
            for entry in self.entries:
                bucket = names.setdefault(id(entry.function), set())
                if entry.form == "decorator" and not isinstance(entry.function, nodes.Lambda):
                    bucket.add(entry.function.name)
                parent = entry.node.parent
                if entry.form == "call" and isinstance(parent, (nodes.Assign, nodes.AnnAssign)):
                    targets = parent.targets if isinstance(parent, nodes.Assign) else [parent.target]
                    bucket.update(_terminal_name(t) for t in targets if _terminal_name(t))
            self._names_memo = names
        return self._names_memo

    # -- external objects ------------------------------------------------------------------------
    def is_external(self, expression: nodes.NodeNG, external: frozenset[str], depth: int = 0) -> bool:
        """Whether ``expression`` is (part of) an object from outside the transform."""
        root = root_name(expression)
        if root is None or depth > _MAX_ALIAS_DEPTH:
            return False
        if root.name in external and _binds_parameter(root):
            return True
        try:
            _scope, assignments = lookup(root)
        except Exception:
            return False
        for assignment in assignments:
            if not isinstance(assignment, nodes.AssignName):
                continue
            parent = assignment.parent
            if isinstance(parent, nodes.Arguments):
                if root.name in external:
                    return True
                continue
            if isinstance(parent, (nodes.For, nodes.Comprehension)) and parent.target is assignment:
                if self.is_external(parent.iter, external, depth + 1):
                    return True
                continue
            for value in bound_values_of(assignment):
                if self.is_external(value, external, depth + 1):
                    return True
        return False


def _terminal_name(expression: nodes.NodeNG) -> str | None:
    if isinstance(expression, (nodes.Name, nodes.AssignName)):
        return expression.name
    if isinstance(expression, (nodes.Attribute, nodes.AssignAttr)):
        return expression.attrname
    return None


def root_name(expression: nodes.NodeNG) -> nodes.Name | None:
    """``self`` for ``self.layers[0].kernel``; None for calls and other roots."""
    current = expression
    while isinstance(current, (nodes.Attribute, nodes.Subscript, nodes.AssignAttr)):
        current = current.expr if not isinstance(current, nodes.Subscript) else current.value
    return current if isinstance(current, nodes.Name) else None


def body_nodes(function: Function) -> Iterator[nodes.NodeNG]:
    """Nodes of ``function``'s own body: nested functions/lambdas/classes are yielded but
    not entered (decorators and defaults of nested functions are entered)."""
    stack: list[nodes.NodeNG] = list(reversed(function.body)) if not isinstance(function, nodes.Lambda) else [function.body]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _FUNCTION_TYPES):
            if isinstance(node, nodes.FunctionDef) and node.decorators is not None:
                stack.extend(reversed(node.decorators.nodes))
            continue
        if isinstance(node, nodes.ClassDef):
            continue
        stack.extend(reversed(list(node.get_children())))


def bound_values_of(assignment: nodes.AssignName) -> list[nodes.NodeNG]:
    """The values one ``AssignName`` binds by plain assignment (see :func:`flow.bound_values`)."""
    parent = assignment.parent
    if isinstance(parent, nodes.Assign) and assignment in parent.targets:
        return [parent.value]
    if isinstance(parent, nodes.AnnAssign) and parent.value is not None:
        return [parent.value]
    if isinstance(parent, nodes.NamedExpr):
        return [parent.value]
    if isinstance(parent, nodes.Tuple) and isinstance(parent.parent, nodes.Assign):
        value = parent.parent.value
        if isinstance(value, nodes.Tuple) and len(value.elts) == len(parent.elts):
            return [value.elts[parent.elts.index(assignment)]]
    return []


def _binds_parameter(name: nodes.Name) -> bool:
    try:
        _scope, assignments = lookup(name)
    except Exception:
        return False
    return bool(assignments) and all(isinstance(a, nodes.AssignName) and isinstance(a.parent, nodes.Arguments)
                                     for a in assignments)


def _is_class_reference(expression: nodes.NodeNG) -> bool:
    """``Model`` in ``Model.method(...)`` is the class itself, not an instance."""
    if isinstance(expression, nodes.Name):
        try:
            _scope, assignments = lookup(expression)
        except Exception:
            return False
        return any(isinstance(a, nodes.ClassDef) for a in assignments)
    return False


def explicit_tree(call: NNXCall | None) -> bool:
    """Whether an NNX call pins Tree Mode itself: a literal ``graph=False`` or
    ``graph_updates=False`` (its meaning does not depend on the defaults)."""
    if call is None:
        return False
    return any(flag in call.keywords and constant_bool(call.keywords[flag]) is False
               for flag in ("graph", "graph_updates"))


def _function_arguments(call: NNXCall) -> list[nodes.NodeNG]:
    positions, keywords = _FUNCTION_ARGUMENTS.get(call.name, _DEFAULT_FUNCTION_ARGUMENTS)
    found = [call.args[i] for i in positions if i < len(call.args) and not isinstance(call.args[i], nodes.Starred)]
    found.extend(call.keywords[k] for k in keywords if k in call.keywords)
    return found


def _parameter_names(function: Function) -> list[str]:
    arguments = function.args
    names = [a.name for a in (arguments.posonlyargs or []) + (arguments.args or []) + (arguments.kwonlyargs or [])]
    if arguments.vararg:
        names.append(arguments.vararg)
    if arguments.kwarg:
        names.append(arguments.kwarg)
    return names


def _positional_names(function: Function) -> list[str]:
    arguments = function.args
    return [a.name for a in (arguments.posonlyargs or []) + (arguments.args or [])]


def _function_name(function: Function) -> str:
    if isinstance(function, nodes.Lambda):
        return f"<lambda:{function.lineno}>"
    if isinstance(function.parent, nodes.ClassDef):
        return f"{function.parent.name}.{function.name}"
    return function.name
