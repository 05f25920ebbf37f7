"""Which NNX transform runs when code calls something: the one transform resolver.

Every rule family asks the same question: "calling this expression (or this decorated
function) runs which NNX transform, with which flags, on which function, with which
arguments?" This module answers it once per file (:func:`transform_resolver`).

The forms recognised:

* decorated: ``@nnx.jit``, ``@nnx.vmap(in_axes=...)``, ``@partial(nnx.scan, ...)`` on
  functions and methods, in this file or another project file;
* applied: ``nnx.jit(f)``, ``nnx.vmap(in_axes=0)(f)``, ``partial(nnx.jit, ...)(f)``, and
  names bound to them (``step = nnx.jit(f)``, also imported from another project file);
* stored: ``self._fwd = nnx.jit(f)`` in the class or a base class, then ``self._fwd(...)``;
* ahead of time: ``nnx.jit(f).lower(...)`` / ``.trace(...)`` run the same input checks as
  a call, so they are applications too;
* ``model(x)`` when ``type(model).__call__`` is decorated with a transform;
* direct: ``nnx.eval_shape(f, *args)``, ``nnx.cond``, ``nnx.switch``, ``nnx.fori_loop``,
  ``nnx.while_loop`` (the function and its operands in one call);
* ``f.defvjp(fwd, bwd)`` on a ``custom_vjp`` function.

An :class:`Entry` is one function a transform traces; an :class:`Application` is one call
that runs a transformed function, with its arguments labelled as flax labels them in its
error paths (``args[0]``, ``kwargs['m']``, ``init_val``); both are defined in
:mod:`nnx_lint.analysis.transform_types`.
"""
from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.base import bounds
from nnx_lint.analysis.bound_methods import is_bound_module_method, unbound_method_class
from nnx_lint.analysis.calls import NNXCall
from nnx_lint.analysis.flow import bound_values_of, lookup
from nnx_lint.analysis.mode import Mode, ModeContext
from nnx_lint.analysis.names import NameResolver, is_external
from nnx_lint.analysis.transformed_callables import MAX_ALIAS_DEPTH, TransformedCallables
from nnx_lint.analysis.transform_types import (
    Application,
    Argument,
    DecodedTransform,
    Entry,
    Function,
    ModuleTools,
    _positional,
    decode_transform,
    explicit_tree,
)
from nnx_lint.flax_table.names import JAX_PREFIX, jax_counterpart
from nnx_lint.flax_table.nnx_api import TRANSFORMS, is_compat, short_name
from nnx_lint.flax_table.signatures import (AHEAD_OF_TIME_METHODS, DIRECT_TRANSFORMS, FUNCTION_TRANSFORMS,
                                            REJECTING_TRANSFORMS, TRACING_TRANSFORMS, traced_arguments)
from nnx_lint.base.node_index import nodes_of_class

if TYPE_CHECKING:
    from nnx_lint.analysis.context import FileContext

_MAX_DEPTH = 12
_MAX_FUNCTIONS = 400


#: Per project: (its answers epoch, the tools of each other module), kept across files.
_PROJECT_TOOLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def transform_resolver(context: FileContext) -> TransformResolver:
    """The (memoised) :class:`TransformResolver` of one linted file."""
    return context.service(TransformResolver)


class TransformResolver(TransformedCallables):
    """Per-file answers to "which NNX transform does this run, on what?"."""

    def __init__(self, context: FileContext) -> None:
        self.context = context
        self.module = context.module
        self._own_tools = ModuleTools(context.module, context.resolver, context.mode, context.matched_calls)
        self._entries: list[Entry] | None = None
        self._entries_by_function: dict[int, list[Entry]] = {}
        self._callables: dict[int, Entry | None] = {}
        self._running_entries: dict[int, Entry | None] = {}
        self._applications: dict[int, Application | None] = {}
        #: Each function's decoded NNX decorators (:meth:`decorators`), keyed by the node itself.
        self._decorators: dict[nodes.FunctionDef, tuple[DecodedTransform, ...]] = {}
        #: Each callee's :meth:`transformed` answer, asked at depth 0 (keyed by the node itself).
        self._transformed: dict[nodes.NodeNG, tuple[NNXCall, nodes.NodeNG, bool] | None] = {}
        self._stored_names: frozenset[str] | None = None

    # -- tools per module -----------------------------------------------------------------
    def tools(self, node: nodes.NodeNG) -> ModuleTools:
        """Resolver, mode context and NNX-call matching for the module holding ``node``."""
        root = node.root()
        if root is self.module:
            return self._own_tools
        project = self.context.project
        kept = _PROJECT_TOOLS.get(project)
        if kept is None or kept[0] != project.answers_epoch:  # memoised answers may lack a module
            kept = _PROJECT_TOOLS[project] = (project.answers_epoch, {})
        per_project = kept[1]
        key = id(root)
        if key not in per_project or per_project[key].module is not root:
            resolver = NameResolver(root, self.context.project)
            per_project[key] = ModuleTools(root, resolver, ModeContext(root, resolver))
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
            for node in nodes_of_class(self.module, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.Call)):
                bounds.checkpoint("finding the functions NNX transforms trace")
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
                if self._rejected_bound_method(call, argument):
                    continue  # flax raises before tracing, in both modes
                for function in self.functions_of(argument):
                    yield Entry(function, call.name, node, call, keeps, "call", explicit_tree(call))
            return
        # `nnx.vmap(in_axes=0)(f)` / `partial(nnx.jit, ...)(f)`: a transform factory applied to f.
        factory = tools.nnx_call(node.func) if isinstance(node.func, nodes.Call) else None
        if factory is not None and factory.name in TRACING_TRANSFORMS and node.args and not _function_arguments(factory):
            keeps = tools.mode.keeps_graph_mode(factory)
            if self._rejected_bound_method(factory, node.args[0]):
                return  # flax raises before tracing, in both modes
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
        if expression is None or depth > MAX_ALIAS_DEPTH:
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
            _scope, assignments = lookup(expression)
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
            classdef = unbound_method_class(expression)
            if classdef is not None:  # `Model.step`: the method itself, its `self` passed first
                method = self.method_of(classdef, expression.attrname)
                return [method] if method is not None else []
            owner = self.context.classes.class_of_self(expression.expr)
            if owner is not None and owner.definition is not None:
                method = self.method_of(owner.definition, expression.attrname)
                return [method] if method is not None else []
            definition = self._project_definition(self.qualified_name(expression))
            return [definition] if definition is not None else []
        return []

    def _rejected_bound_method(self, transform: NNXCall, function: nodes.NodeNG | None) -> bool:
        """``nnx.jit(model.step)``: flax rejects a bound Module method in both modes
        (:mod:`nnx_lint.analysis.bound_methods`), so the flip changes nothing there."""
        return transform.name in REJECTING_TRANSFORMS and isinstance(function, nodes.Attribute) \
            and is_bound_module_method(self.context, function)

    def _project_definition(self, qualified_name: str | None) -> nodes.FunctionDef | None:
        if not qualified_name or is_external(qualified_name):
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

    # -- applications ------------------------------------------------------------------------
    def application(self, node: nodes.Call) -> Application | None:
        """The :class:`Application` if ``node`` runs an NNX-transformed function (memoised:
        every call-site rule asks about every call).

        Arguments are labelled as flax labels them (``args[0]``, ``kwargs['m']``,
        ``operands[0]``, ``init_val``); a starred argument ends the positional ones.
        """
        key = id(node)
        if key not in self._applications:
            self._applications[key] = self._application(node)
        return self._applications[key]

    def _application(self, node: nodes.Call) -> Application | None:
        direct = self.nnx_call(node)
        if direct is not None and direct.name in DIRECT_TRANSFORMS and not direct.via_partial:
            use = self._direct_application(direct)
            if use is not None:
                use.flags = self.flags(direct)
            return use
        found = self.transformed(node.func)
        if found is None:
            return None
        transform, function, keeps = found
        arguments = _positional(node.args, "args")
        arguments += [Argument(f"kwargs[{k.arg!r}]", None, k.value) for k in node.keywords or [] if k.arg]
        return Application(transform, node, [function], arguments, keeps, self.flags(transform))

    def transformed(self, callee: nodes.NodeNG, depth: int = 0) -> tuple[NNXCall, nodes.NodeNG, bool] | None:
        """``(transform, function expression, unaffected by the flip)`` when calling ``callee``
        runs a function transformed by one of :data:`FUNCTION_TRANSFORMS`; None otherwise.
        Memoised per callee (the application, the running entry and the grad rules each ask
        about every call's callee)."""
        if depth == 0:
            if callee not in self._transformed:
                self._transformed[callee] = self._transformed_at(callee, 0)
            return self._transformed[callee]
        return self._transformed_at(callee, depth)

    def _transformed_at(self, callee: nodes.NodeNG, depth: int) -> tuple[NNXCall, nodes.NodeNG, bool] | None:
        if depth > MAX_ALIAS_DEPTH:
            return None
        if isinstance(callee, nodes.Call):
            call = self.nnx_call(callee)
            if call is not None and call.name in FUNCTION_TRANSFORMS and call.args:
                return call, call.args[0], not self._mode_of(call.node).flip_changes(call) \
                    or self._rejected_bound_method(call, call.args[0])
            if isinstance(callee.func, nodes.Call) and callee.args:
                factory = self.nnx_call(callee.func)
                if factory is not None and factory.name in FUNCTION_TRANSFORMS and not factory.args:
                    return factory, callee.args[0], not self._mode_of(factory.node).flip_changes(factory) \
                        or self._rejected_bound_method(factory, callee.args[0])
            return None
        if isinstance(callee, nodes.Name):
            _scope, assignments = lookup(callee)
            if len(assignments) > 1:
                return self._nnx_or_jax_counterpart(assignments, depth)
            if not assignments:
                return None
            assignment = assignments[0]
            if isinstance(assignment, nodes.FunctionDef):
                return self.decorated(assignment)
            if isinstance(assignment, nodes.AssignName) and isinstance(assignment.parent, nodes.Assign):
                if len(assignment.parent.targets) == 1 and assignment.parent.targets[0] is assignment:
                    return self.transformed(assignment.parent.value, depth + 1)
            if isinstance(assignment, nodes.ImportFrom):
                return self._imported_transformed(self.qualified_name(callee), depth)
            return None
        if isinstance(callee, nodes.Attribute):
            if callee.attrname in AHEAD_OF_TIME_METHODS:
                return self.transformed(callee.expr, depth + 1)
            return self._stored_transformed(callee, depth)
        if isinstance(callee, nodes.IfExp):
            return self._either_branch(callee, depth)
        return None

    def _either_branch(self, choice: nodes.IfExp, depth: int):
        """``nnx.compat.grad(f) if graph else nnx.grad(f)``: when both branches apply the same NNX
        transform, the one the flip changes (its findings hold on the path where it runs); when one
        applies an NNX transform and the other JAX's of the same name, the NNX one. Anything else
        leaves it unknown."""
        found = [self.transformed(branch, depth + 1) for branch in (choice.body, choice.orelse)]
        known = [branch for branch in found if branch is not None]
        if len(known) == 2:
            if known[0][0].name != known[1][0].name:
                return None
            return next((branch for branch in known if not branch[2]), known[0])
        if not known:
            return None
        other = choice.orelse if found[0] is not None else choice.body
        if isinstance(other, nodes.Call) and self.qualified_name(other.func) == jax_counterpart(known[0][0].name):
            return known[0]
        return None

    def _nnx_or_jax_counterpart(self, assignments: list[nodes.NodeNG], depth: int):
        """A name bound on alternative paths to an NNX transform and to JAX's transform of the
        same name (``grad_fn = nnx.value_and_grad(f) if is_nnx else jax.value_and_grad(f)``,
        or the same in ``if``/``else``): the NNX one, as on the paths where it runs the rules'
        findings hold. Anything else bound there leaves the name unknown."""
        found = None
        for assignment in assignments:
            if not (isinstance(assignment, nodes.AssignName) and isinstance(assignment.parent, nodes.Assign)
                    and assignment.parent.targets == [assignment] and isinstance(assignment.parent.value, nodes.Call)):
                return None
            value = assignment.parent.value
            transformed = self.transformed(value, depth + 1)
            if transformed is None:
                if not (self.qualified_name(value.func) or "").startswith(JAX_PREFIX):
                    return None
                continue
            if found is not None:
                return None
            found = transformed
        if found is None:
            return None
        counterparts = {self.qualified_name(a.parent.value.func) for a in assignments} - {found[0].qualified_name}
        return found if counterparts <= {jax_counterpart(found[0].name)} else None

    def _imported_transformed(self, qualified_name: str | None, depth: int):
        """A function decorated with a transform, or a name bound to ``nnx.jit(f)``, in another
        project module."""
        if not qualified_name or is_external(qualified_name):
            return None
        definition = self.context.project.definition(qualified_name)
        if isinstance(definition, nodes.FunctionDef):
            return self.decorated(definition)
        module_name, _, attribute = qualified_name.rpartition(".")
        module = self.context.project.load(module_name) if module_name else None
        assignments = module.locals.get(attribute, []) if module is not None else []
        if len(assignments) == 1 and isinstance(assignments[0], nodes.AssignName):
            for value in bound_values_of(assignments[0]):
                return self.transformed(value, depth + 1)
        return None

    def _stored_transformed(self, expression: nodes.Attribute, depth: int):
        """``self._fwd`` where the class (or a base class, also in another file) stored
        ``self._fwd = nnx.jit(f)``: every store must be the same kind of transform."""
        if expression.attrname not in self._names_stored_from_calls():
            return None  # the cheap test first: most attribute calls are plain methods
        owner = self.context.classes.class_of_self(expression.expr)
        if owner is None or owner.definition is None:
            return None
        stores = self.context.classes.info(owner.definition).stores_of(expression.attrname)
        found = [self.transformed(store.value, depth + 1) if store.value is not None else None for store in stores]
        if not found or any(f is None for f in found):
            return None
        return found[0] if len({f[0].name for f in found}) == 1 else None

    def _names_stored_from_calls(self) -> frozenset[str]:
        """Attribute names this file stores a call's result in (``x._fwd = nnx.jit(f)``), also
        through the classes it defines and their project base classes (in any file)."""
        if self._stored_names is None:
            names = {node.attrname for node in nodes_of_class(self.module, nodes.AssignAttr)
                     if isinstance(node.parent, nodes.Assign) and isinstance(node.parent.value, nodes.Call)}
            classes = self.context.classes
            for classdef in nodes_of_class(self.module, nodes.ClassDef):
                names.update(store.path for store in classes.info(classdef).stores
                             if isinstance(store.value, nodes.Call))
            self._stored_names = frozenset(names)
        return self._stored_names

    def decorated(self, function: nodes.FunctionDef) -> tuple[NNXCall, nodes.NodeNG, bool] | None:
        """The NNX transform decorating ``function`` closest to it (innermost), if any."""
        found = self.decorations(function)
        return found[-1] if found else None

    def decorations(self, function: nodes.FunctionDef) -> list[tuple[NNXCall, nodes.NodeNG, bool]]:
        """Every function transform decorating ``function``, outermost first (``@nnx.custom_vjp``
        over ``@nnx.remat``): ``(transform, function, unaffected by the flip)``."""
        return [(d.call, function, d.keeps_graph) for d in self.decorators(function)
                if d.name in FUNCTION_TRANSFORMS and not d.call.args]

    def created(self, expression: nodes.NodeNG) -> DecodedTransform | None:
        """The NNX transform ``expression`` creates, decoded: ``nnx.jit(f)``, or a factory applied
        to a function (``nnx.vmap(in_axes=0)(f)``, ``partial(nnx.jit, ...)(f)``)."""
        if not isinstance(expression, nodes.Call):
            return None
        call = self.nnx_call(expression)
        if call is None and isinstance(expression.func, nodes.Call):
            call = self.nnx_call(expression.func)
        if call is None or call.name not in TRANSFORMS:
            return None
        return decode_transform(call, self._mode_of(call.node))

    def decoded(self, callee: nodes.NodeNG) -> DecodedTransform | None:
        """:meth:`transformed`, decoded: the transform calling ``callee`` runs, its arguments bound
        with its flax signature (argnums, has_aux, nondiff_argnums, axes, flags in force)."""
        found = self.transformed(callee)
        if found is None:
            return None
        transform, function, keeps = found
        return decode_transform(transform, self._mode_of(transform.node), keeps, function)

    def decode(self, call: NNXCall) -> DecodedTransform:
        """``call`` (a transform call or decorator) decoded, with the flags in force in its module."""
        return decode_transform(call, self._mode_of(call.node))

    def decorators(self, function: nodes.FunctionDef) -> list[DecodedTransform]:
        """Every NNX transform decorating ``function`` (``@nnx.split_rngs(...)`` included),
        outermost first, decoded: a factory call (``@nnx.vmap(in_axes=0)``,
        ``@partial(nnx.jit, ...)``) or a bare name (``@nnx.jit``, a synthetic call)."""
        known = self._decorators.get(function)
        if known is None:  # memoised: the returns rules, the callables and NNX306 ask about every def
            known = self._decorators[function] = tuple(self._decode_decorators(function))
        return list(known)

    def _decode_decorators(self, function: nodes.FunctionDef) -> list[DecodedTransform]:
        tools = self.tools(function)
        found = []
        for decorator in function.decorators.nodes if function.decorators else ():
            if isinstance(decorator, nodes.Call):
                call = tools.nnx_call(decorator)
            else:
                name = tools.resolver.qualified_name(decorator)
                call = NNXCall(decorator, name, short_name(name)) if short_name(name) else None  # type: ignore[arg-type]
            if call is not None and call.name in TRANSFORMS:
                found.append(decode_transform(call, tools.mode, applied_to=function))
        return found

    def _mode_of(self, node: nodes.NodeNG) -> ModeContext:
        return self.tools(node).mode

    def flags(self, transform: NNXCall) -> Mode:
        """The ``graph`` / ``graph_updates`` flags in force for ``transform`` (its own module's mode)."""
        return self._mode_of(transform.node).call_mode(transform)

    def _direct_application(self, call: NNXCall) -> Application | None:
        args = call.args
        keeps = not self._mode_of(call.node).flip_changes(call)
        if any(isinstance(a, nodes.Starred) for a in args):
            return None
        if call.name in ("eval_shape", "jit_partial") and args:
            # `nnx.jit_partial(f, *partial_args)` checks the arguments it binds, as a call does
            return Application(call, call.node, [args[0]], _positional(args[1:], "args"), keeps)
        if call.name == "cond" and len(args) >= 3:
            return Application(call, call.node, list(args[1:3]), _positional(args[3:], "operands"), keeps)
        if call.name == "switch" and len(args) >= 2:
            branches = list(args[1].elts) if isinstance(args[1], (nodes.List, nodes.Tuple)) else []
            return Application(call, call.node, branches, _positional(args[2:], "operands"), keeps)
        if call.name == "fori_loop":
            body = args[2] if len(args) > 2 else call.keywords.get("body_fun")
            init = args[3] if len(args) > 3 else call.keywords.get("init_val")
            if init is not None:
                return Application(call, call.node, [body] if body is not None else [],
                                   [Argument("init_val", 0, init)], keeps)
        if call.name == "while_loop":
            functions = [a for a in args[:2]]
            init = args[2] if len(args) > 2 else call.keywords.get("init_val")
            if init is not None:
                return Application(call, call.node, functions, [Argument("init_val", 0, init)], keeps)
        return None


def _function_arguments(call: NNXCall) -> list[nodes.NodeNG]:
    positions, keywords = traced_arguments(call.name)
    found = [call.args[i] for i in positions if i < len(call.args) and not isinstance(call.args[i], nodes.Starred)]
    found.extend(call.keywords[k] for k in keywords if k in call.keywords)
    return found
