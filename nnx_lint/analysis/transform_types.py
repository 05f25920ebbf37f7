"""What the transform resolver (:mod:`nnx_lint.analysis.transforms`) answers: an :class:`Entry` is one
function a transform traces, an :class:`Application` one call that runs a transformed function, with
its arguments (:class:`Argument`); and the binding and flag helpers the resolver and the transformed-code
analysis share."""
from __future__ import annotations

from dataclasses import dataclass, field

from astroid import nodes

from nnx_lint.analysis.calls import NNXCall, constant_bool, match_nnx_call
from nnx_lint.analysis.flow import lookup
from nnx_lint.analysis.mode import Mode, ModeContext
from nnx_lint.analysis.names import NameResolver


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
class Argument:
    """One argument of a transformed call, labelled like flax's error paths."""

    label: str
    index: int | None
    expression: nodes.NodeNG


@dataclass
class Application:
    """One call that runs an NNX-transformed function."""

    transform: NNXCall
    #: The call that runs the transformed function (for direct forms: the NNX call itself).
    call: nodes.Call | None
    #: Expressions of the transformed function(s) (a Lambda, a Name, a FunctionDef, ...).
    functions: list[nodes.NodeNG] = field(default_factory=list)
    arguments: list[Argument] = field(default_factory=list)
    #: The flip leaves this transform as it is: it keeps graph mode (graph=True and
    #: graph_updates=True by flags, compat or scope) or already chooses Tree Mode explicitly
    #: (graph=False / graph_updates=False). The call-site rules stay silent on it either way.
    keeps_graph: bool = False
    #: The ``graph`` / ``graph_updates`` flags in force at the transform (its keywords,
    #: ``nnx.compat``, scope); None: not worked out (the flags' defaults apply).
    flags: Mode | None = None

    @property
    def name(self) -> str:
        return self.transform.name

    @property
    def graph_flag(self) -> bool:
        """``graph=True`` is in force, whatever ``graph_updates`` is."""
        return self.flags is not None and self.flags.graph is True

    @property
    def accepts_shared_inputs(self) -> bool:
        """Whether the flip leaves as it is how this transform takes one Variable reachable
        twice among its inputs, so the aliasing rules stay silent.

        Graph mode (``graph=True``, today's default) accepts shared inputs, also with
        ``graph_updates=False`` (measured with flax 0.12.8: ``nnx.jit(f,
        graph_updates=False)(m, m)`` runs today and raises once ``graph`` defaults to False;
        flax's own tests rely on it) -- except ``eval_shape`` and ``custom_vjp``, which check
        their inputs for aliasing as soon as ``graph_updates=False``. Tree Mode
        (``graph=False``) rejects them. Only a transform that accepts them today and rejects
        them after the flip changes.
        """
        if self.flags is None:
            return self.keeps_graph
        return not (self._takes_shared_inputs(default=True) and not self._takes_shared_inputs(default=False))

    def _takes_shared_inputs(self, default: bool) -> bool:
        """With the flags left unset taking ``default`` (True today, False after the flip)."""
        graph = self.flags.graph if self.flags.graph is not None else default
        updates = self.flags.graph_updates if self.flags.graph_updates is not None else default
        return bool(graph) and not (updates is False and self.name in ("eval_shape", "custom_vjp"))


class ModuleTools:
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


def _positional(args: list[nodes.NodeNG], label: str) -> list[Argument]:
    result = []
    for index, argument in enumerate(args):
        if isinstance(argument, nodes.Starred):
            break
        result.append(Argument(f"{label}[{index}]", index, argument))
    return result


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


def _is_class_reference(expression: nodes.NodeNG) -> bool:
    """``Model`` in ``Model.method(...)`` is the class itself, not an instance."""
    if isinstance(expression, nodes.Name):
        _scope, assignments = lookup(expression)
        return any(isinstance(a, nodes.ClassDef) for a in assignments)
    return False


def explicit_tree(call: NNXCall | None) -> bool:
    """Whether an NNX call pins Tree Mode itself: a literal ``graph=False`` or
    ``graph_updates=False`` (its meaning does not depend on the defaults)."""
    if call is None:
        return False
    return any(flag in call.keywords and constant_bool(call.keywords[flag]) is False
               for flag in ("graph", "graph_updates"))
