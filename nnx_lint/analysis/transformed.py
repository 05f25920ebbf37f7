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
:mod:`nnx_lint.analysis.mode`) still propagates graph updates, so it does not make its function
"transformed code". It is listed in :attr:`nnx_lint.analysis.transforms.TransformResolver.entries` with
``keeps_graph=True`` but never starts a :class:`Reach`. Neither does a transform that pins
Tree Mode itself (a literal ``graph=False`` or ``graph_updates=False``,
``Entry.explicit_tree``): its semantics do not change when the defaults flip, so there is
nothing to report (``Entry.affected`` is False for both).

**Reach** — from every Tree Mode entry, calls are followed breadth-first (shortest chain
wins, depth-limited): ``helper(m)`` (a function of this file or, through imports, of another
project file), ``self.helper()`` (methods looked up through project base classes),
``model(x)`` → ``Cls.__call__`` and ``model.method()`` when the class of ``model`` is known
(:meth:`nnx_lint.analysis.classes.ClassModel.class_of`: an annotation, a construction, a stored
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
module helpers for other files are memoised per :class:`~nnx_lint.analysis.project.Project`.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.base import bounds
from nnx_lint.analysis.bound_methods import passes_self
from nnx_lint.analysis.calls import constant_bool
from nnx_lint.analysis.flow import bound_values_of, lookup
from nnx_lint.analysis.names import root_name
from nnx_lint.flax_table.nnx_api import EXTERNAL_PACKAGES
from nnx_lint.base.node_index import nodes_of_class
from nnx_lint.analysis.transform_types import _FUNCTION_TYPES, Entry, Function, _is_class_reference
from nnx_lint.analysis.transforms import transform_resolver
from nnx_lint.analysis.values import value_model

if TYPE_CHECKING:
    from nnx_lint.analysis.context import FileContext

_MAX_DEPTH = 12
_MAX_FUNCTIONS = 400
_MAX_ALIAS_DEPTH = 4


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


def transformed_code(context: FileContext) -> TransformedCode:
    """The (memoised) :class:`TransformedCode` service of one linted file."""
    return context.service(TransformedCode)


class TransformedCode:
    """Per-file answers to "does this code run inside a Tree Mode NNX transform?"."""

    def __init__(self, context: FileContext) -> None:
        self.context = context
        self.module = context.module
        #: Which transform runs where: entries, transformed callables (the one resolver).
        self.transforms = transform_resolver(context)
        self._reaches: dict[int, Reach] | None = None
        self._calls_by_name: dict[str, list[tuple[int, nodes.Call]]] | None = None
        self._entry_calls_memo: dict[int, list[nodes.Call]] = {}
        self._parameter_classes_memo: dict[tuple, dict] = {}

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
        if any(self.transforms.qualified_name(d) in ("builtins.staticmethod", "builtins.classmethod", "staticmethod", "classmethod")
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
        step = "following the functions NNX transforms trace"
        for entry in self.transforms.entries:
            bounds.checkpoint(step)
            if not entry.affected or entry.function.name == "__init__":
                continue
            external = frozenset(_parameter_names(entry.function))
            reach = Reach(entry.function, entry, (_function_name(entry.function),), external, "transform",
                          classes=self._entry_parameter_classes(entry))
            self._merge(reaches, queue, reach, 0)
        while queue and len(reaches) < _MAX_FUNCTIONS:
            bounds.checkpoint(step)
            reach, depth = queue.popleft()
            if depth >= _MAX_DEPTH:
                continue
            for target, external, boundary, classes in self._callees(reach):
                chain = reach.chain + (_function_name(target),)
                confidence = "transform" if self.transforms.entries_of(target) and target.root() is self.module else "called"
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
        tools = self.transforms.tools(call)
        qualified = tools.resolver.qualified_name(func)
        if qualified and (qualified.split(".")[0] in EXTERNAL_PACKAGES or qualified.startswith("builtins.")):
            return
        if isinstance(func, nodes.Name):
            for target in self.transforms.functions_of(func):
                if not isinstance(target, nodes.Lambda) and isinstance(target.parent, nodes.ClassDef):
                    continue
                yield target, None
            if not self.transforms.functions_of(func):
                ref = self.class_of(func, reach)
                if ref is not None and ref.definition is not None and not _is_class_reference(func):
                    method = self.transforms.method_of(ref.definition, "__call__")
                    if method is not None:
                        yield method, func
                elif ref is None and reach is not None and self._unknown_external(func, reach):
                    method = self.single_receiver_method("__call__")
                    if method is not None:
                        yield method, func
            return
        if isinstance(func, nodes.Attribute):
            receiver = func.expr
            ref = self.class_of(receiver, reach)
            if ref is not None and ref.definition is not None and not _is_class_reference(receiver):
                method = self.transforms.method_of(ref.definition, func.attrname)
                if method is not None:
                    yield method, receiver
                    return
                owner = self.context.classes.info(ref.definition)
                stored = {self.context.classes.class_of(s.value) for s in owner.stores_of(func.attrname)}
                stored.discard(None)
                if len(stored) == 1:
                    inner = stored.pop()
                    if inner.definition is not None:
                        method = self.transforms.method_of(inner.definition, "__call__")
                        if method is not None:
                            yield method, func
                return
            definition = self.transforms._project_definition(qualified)
            if definition is not None:
                yield definition, None
            elif ref is None and reach is not None and self._unknown_external(receiver, reach):
                method = self.single_receiver_method(func.attrname)
                if method is not None:
                    yield method, receiver

    def single_receiver_method(self, name: str) -> nodes.FunctionDef | None:
        """The method ``name`` when exactly one NNX Module class of this file defines it.

        ``m(x)`` / ``m.step()`` on a parameter whose class is unknown can only run a project
        method when one class has it: then that method is followed (a single receiver).
        Two or more classes defining it leave the call unresolved.
        """
        if not hasattr(self, "_receivers"):
            self._receivers: dict[str, nodes.FunctionDef | None] = {}
        if name not in self._receivers:
            found = []
            for classdef in nodes_of_class(self.module, nodes.ClassDef):
                method = classdef.locals.get(name)
                if method and isinstance(method[-1], nodes.FunctionDef) \
                        and self.context.classes.info(classdef).is_nnx_module:
                    found.append(method[-1])
            self._receivers[name] = found[0] if len(found) == 1 else None
        return self._receivers[name]

    def _unknown_external(self, expression: nodes.NodeNG, reach: Reach) -> bool:
        """A plain name for an object from outside the transform (a parameter), class unknown."""
        return isinstance(expression, nodes.Name) and expression.name in reach.external \
            and _binds_parameter(expression)

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

    def module_like(self, expression: nodes.NodeNG, reach: Reach | None = None) -> tuple[bool, str | None]:
        """(may ``expression`` be an NNX Module, its class name or None), its class as :meth:`class_of`
        finds it: an unknown class counts as maybe."""
        ref = self.class_of(expression, reach)
        return value_model(self.context).may_be_module(ref), ref.short_name if ref is not None else None

    def outside_method_calls(self, reach: Reach, methods: frozenset[str]) -> Iterator[tuple[nodes.Call, str | None]]:
        """``(call, class name)`` for each call in ``reach``'s function of one of ``methods`` on an
        object from outside the traced code that may be a Module, without a ``graph=`` keyword
        (other than a literal False) that keeps graph mode for it."""
        for node in body_nodes(reach.function):
            if not isinstance(node, nodes.Call) or not isinstance(node.func, nodes.Attribute):
                continue
            if node.func.attrname not in methods or not self.is_external(node.func.expr, reach.external):
                continue
            maybe, cls = self.module_like(node.func.expr, reach)
            if maybe and not any(k.arg == "graph" and constant_bool(k.value) is not False for k in node.keywords or []):
                yield node, cls

    def _entry_parameter_classes(self, entry: Entry) -> dict:
        """Parameter classes of an entry from the calls of its transformed callable in this
        file (``step(m)`` with ``m = M()``), when every call agrees."""
        function = entry.function
        applied = None
        if isinstance(function, nodes.Lambda) and entry.form == "call" and isinstance(entry.node.parent, nodes.Call) \
                and entry.node.parent.func is entry.node:
            applied = entry.node.parent  # nnx.jit(lambda m: ...)(model)
        parameters = _positional_names(function)
        if isinstance(function, nodes.FunctionDef) and isinstance(function.parent, nodes.ClassDef) \
                and not passes_self(entry.node, function):
            parameters = parameters[1:]
        key = (id(function), tuple(parameters), id(applied))
        memo = self._parameter_classes_memo
        if key not in memo:
            # One function transformed at many places (`j1 = nnx.jit(f)`, ..., `jN = nnx.jit(f)`)
            # has the same calls for every entry: worked out once, not once per entry.
            calls = [applied] if applied is not None else self._calls_of_entry_function(function)
            memo[key] = self._agreed_classes(calls, parameters)
        return dict(memo[key])  # a copy: reaches merge new classes into theirs

    def _agreed_classes(self, calls: list[nodes.Call], parameters: list[str]) -> dict:
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

    def _calls_of_entry_function(self, function: Function) -> list[nodes.Call]:
        """This file's calls, in its order, of a callable that transforms ``function``,
        through the names it is called by (:meth:`_callable_names`)."""
        memo = self._entry_calls_memo
        if id(function) not in memo:
            by_name = self._calls_by_terminal_name()
            names = self._callable_names().get(id(function), set())
            # Looked up by name in an index, not by scanning every call of the file for each
            # function: a file with thousands of transformed functions was quadratic.
            candidates = sorted((found for name in names for found in by_name.get(name, ())), key=lambda found: found[0])
            memo[id(function)] = [c for _position, c in candidates
                                  if (found := self.transforms.transformed_callable(c.func)) is not None
                                  and found.function is function]
        return memo[id(function)]

    def _calls_by_terminal_name(self) -> dict[str, list[tuple[int, nodes.Call]]]:
        """This file's calls by the last name of what they call (``jit_step`` for
        ``self.jit_step(...)``), each with its place in the file's order."""
        if self._calls_by_name is None:
            index: dict[str, list[tuple[int, nodes.Call]]] = {}
            for position, call in enumerate(nodes_of_class(self.module, nodes.Call)):
                name = _terminal_name(call.func)
                if name:
                    index.setdefault(name, []).append((position, call))
            self._calls_by_name = index
        return self._calls_by_name

    def _callable_names(self) -> dict[int, set[str]]:
        """Names under which each entry function may be called in this file."""
        if not hasattr(self, "_names_memo"):
            names: dict[int, set[str]] = {}
            for entry in self.transforms.entries:
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
        _scope, assignments = lookup(root)
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




def _binds_parameter(name: nodes.Name) -> bool:
    _scope, assignments = lookup(name)
    return bool(assignments) and all(isinstance(a, nodes.AssignName) and isinstance(a.parent, nodes.Arguments)
                                     for a in assignments)








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
