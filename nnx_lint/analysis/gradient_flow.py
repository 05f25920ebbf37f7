"""Where an ``nnx.grad`` result flows, for the ``nnx.grad`` / ``nnx.custom_vjp`` rules (NNX4xx, NNX5xx).

:class:`GradientFlow` — ``uses(application)``: the expressions that hold the gradient of
one argument of an ``nnx.grad`` / ``nnx.value_and_grad`` application, followed through
plain assignments, tuple unpacking (``(loss, aux), grads = ...``), indexing of the result
tuple and ``jax.tree.map(f, grads)``. Built from the tree alone, like
:mod:`nnx_lint.analysis.variables` (which Variable kinds a Module holds).

What is not understood is "unknown": rules stay silent on it and say so in facts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

from astroid import nodes

from nnx_lint.analysis.flow import lookup
from nnx_lint.flax_table.names import TREE_MAP, TREE_MAPS

if TYPE_CHECKING:
    from nnx_lint.analysis.context import FileContext


@dataclass
class GradApplication:
    """``<nnx.grad(...)>(args)``: one application of a grad-transformed function."""

    call: nodes.Call                    #: the application ``grad_fn(model, x)``
    transform: str                      #: "grad" / "value_and_grad"
    transform_node: nodes.NodeNG        #: the ``nnx.grad(...)`` call or decorator
    keeps_graph: bool
    argnums: tuple[int, ...] | None     #: None when not a literal int / tuple of ints
    argnums_is_tuple: bool
    has_aux: bool | None
    loss: nodes.NodeNG | None           #: the differentiated function (FunctionDef/Lambda) if known

    def gradient_path(self, position: int) -> list[int] | None:
        """Index path from the application's result to the gradient of argument ``position``."""
        if self.argnums is None or position not in self.argnums or self.has_aux is None:
            return None
        path: list[int] = []
        if self.transform == "value_and_grad":
            path.append(1)
        elif self.has_aux:
            path.append(0)
        if self.argnums_is_tuple:
            path.append(self.argnums.index(position))
        return path


@dataclass
class GradientUse:
    """One place a gradient value is used: a ``Name`` holding it (or the inline expression)."""

    name: nodes.NodeNG
    via: list[str]  #: the chain of names/values that led here (for facts)
    #: The call of the linted file that passed the gradient to a function of another project
    #: file (``acc.add(grads)``), when the use lies there: a finding is reported at this call.
    exit_call: nodes.Call | None = None


class GradientFlow:
    """Where the gradient of an application flows: through names, ``jax.tree.map`` and
    unpacking, into the parameters of the project functions and methods it is passed to
    (this file's or another project file's)."""

    def __init__(self, context: FileContext) -> None:
        self.context = context

    def uses(self, application: GradApplication, position: int) -> Iterator[GradientUse]:
        path = application.gradient_path(position)
        if path is None:
            return
        yield from self._follow_result(application.call, path, [], set(), None)

    def uses_at(self, call: nodes.Call, path: list[int]) -> Iterator[GradientUse]:
        """Where the element at index ``path`` of ``call``'s result flows (``[1, 0]``: the first
        gradient of a ``value_and_grad`` over a tuple of arguments), when the path cannot come
        from the application's own argnums (:meth:`GradApplication.gradient_path`)."""
        yield from self._follow_result(call, path, [], set(), None)

    def _follow_result(self, value: nodes.NodeNG, path: list[int], via: list[str], seen: set[int],
                       exit_call: nodes.Call | None) -> Iterator[GradientUse]:
        """``value`` evaluates to a structure whose element at ``path`` is the gradient."""
        parent = value.parent
        if not path:
            if isinstance(parent, nodes.Call) and self.is_tree_map(parent) and parent.args[1:2] == [value] and len(parent.args) == 2:
                yield from self._follow_result(parent, [], via + [TREE_MAP], seen, exit_call)
                return
            if _assigned_targets(parent, value):
                for target in _assigned_targets(parent, value):
                    yield from self._follow_target(target, [], via, seen, exit_call)
                return
            if isinstance(value, nodes.Name):
                return
            # The gradient used inline: `nnx.grad(f)(m)['w']`.
            yield GradientUse(value, via, exit_call)  # type: ignore[arg-type]
            return
        if isinstance(parent, nodes.Subscript) and parent.value is value:
            index = _const_index(parent.slice)
            if index == path[0]:
                yield from self._follow_result(parent, path[1:], via, seen, exit_call)
            return
        for target in _assigned_targets(parent, value):
            yield from self._follow_target(target, path, via, seen, exit_call)

    def _follow_target(self, target: nodes.NodeNG, path: list[int], via: list[str], seen: set[int],
                       exit_call: nodes.Call | None) -> Iterator[GradientUse]:
        if path and isinstance(target, (nodes.Tuple, nodes.List)):
            if any(isinstance(e, nodes.Starred) for e in target.elts):
                return
            if path[0] < len(target.elts):
                yield from self._follow_target(target.elts[path[0]], path[1:], via, seen, exit_call)
            return
        if isinstance(target, nodes.AssignName):
            if id(target) in seen:
                return
            seen.add(id(target))
            for use in self._name_uses(target):
                if path:
                    yield from self._follow_result(use, path, via + [target.name], seen, exit_call)
                    continue
                parent = use.parent
                if _assigned_targets(parent, use):
                    for inner in _assigned_targets(parent, use):
                        yield from self._follow_target(inner, [], via + [target.name], seen, exit_call)
                    continue
                if isinstance(parent, nodes.Call) and self.is_tree_map(parent) and len(parent.args) == 2 and parent.args[1] is use:
                    yield from self._follow_result(parent, [], via + [target.name, TREE_MAP], seen, exit_call)
                    continue
                parameter = self._callee_parameter(use) if len(via) < 6 else None
                if parameter is not None:  # passed on to a project function: follow it there
                    callee = parameter.scope()
                    leaves = exit_call is None and callee.root() is not self.context.module
                    yield from self._follow_target(parameter, [], via + [target.name, f"{callee.name}({parameter.name})"],
                                                   seen, parent if leaves else exit_call)
                    continue
                yield GradientUse(use, via + [target.name], exit_call)

    def _callee_parameter(self, use: nodes.Name) -> nodes.AssignName | None:
        """The parameter of a project function or method (this file's or another project
        file's) that receives ``use`` as a positional argument."""
        call = use.parent
        if not isinstance(call, nodes.Call) or use not in call.args or any(isinstance(a, nodes.Starred) for a in call.args):
            return None
        classes = self.context.classes
        function: nodes.FunctionDef | None = classes.function_called(call)
        offset = 0
        if function is None and isinstance(call.func, nodes.Attribute):
            owner = classes.class_of_self(call.func.expr)
            if owner is not None and owner.definition is not None:
                found = owner.definition.locals.get(call.func.attrname)
                if found and isinstance(found[-1], nodes.FunctionDef) and not found[-1].decorators:
                    function, offset = found[-1], 1
        if function is None or function.args.vararg:
            return None
        parameters = function.args.args or []
        index = call.args.index(use) + offset
        return parameters[index] if index < len(parameters) else None

    def is_tree_map(self, call: nodes.Call) -> bool:
        return self.context.qualified_name(call.func) in TREE_MAPS

    @staticmethod
    def _name_uses(assignment: nodes.AssignName) -> list[nodes.Name]:
        """Loads of the name bound by ``assignment`` that can see that binding."""
        frame = assignment.scope()
        uses = []
        for name in frame.nodes_of_class(nodes.Name):
            if name.name != assignment.name or (name.lineno or 0) < (assignment.lineno or 0):
                continue
            _scope, assignments = lookup(name)
            if assignment in assignments:
                uses.append(name)
        return uses




def _assigned_targets(statement: nodes.NodeNG, value: nodes.NodeNG) -> list[nodes.NodeNG]:
    """The targets ``statement`` binds ``value`` to: ``g = value`` and ``g: nnx.State = value``
    (an annotation states what the author expects, not what Tree Mode returns)."""
    if isinstance(statement, nodes.Assign) and statement.value is value:
        return list(statement.targets)
    if isinstance(statement, nodes.AnnAssign) and statement.value is value:
        return [statement.target]
    return []


def _const_index(node: nodes.NodeNG) -> int | None:
    if isinstance(node, nodes.Const) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


def unaffected_by_flip(context: FileContext, call=None, node: nodes.NodeNG | None = None) -> bool:
    """Whether a transform's semantics do not change when the defaults flip.

    True when graph mode is explicitly kept (``nnx.compat``, both flags True, a graph-mode
    scope) *or* Tree Mode is already selected explicitly (``graph=False`` or
    ``graph_updates=False`` on the call or in scope): grad/custom_vjp take their tree
    path as soon as either flag is False. ``call`` is an :class:`~nnx_lint.analysis.calls.NNXCall`;
    ``node`` a bare decorator (``@nnx.grad``) with only its scope to read.
    """
    if call is not None:
        return not context.flip_changes(call)
    if node is None:
        return False
    flags = context.mode.scoped_flags(node)
    values = [value for value, _source in flags.values()]
    if False in values:
        return True
    return context.mode.scope_keeps_graph_mode(node)
