"""What the transform resolver (:mod:`nnx_lint.analysis.transforms`) answers: an :class:`Entry` is one
function a transform traces, an :class:`Application` one call that runs a transformed function, with
its arguments (:class:`Argument`), a :class:`DecodedTransform` one transform call or decorator with its
arguments bound by the flax table's signatures (:func:`decode_transform`, the one place ``argnums``,
``has_aux``, ``nondiff_argnums`` and the axes are decoded); and the binding and flag helpers the resolver
and the transformed-code analysis share."""
from __future__ import annotations

from dataclasses import dataclass, field

from astroid import nodes

from nnx_lint.analysis.calls import NNXCall, constant_bool, match_nnx_call
from nnx_lint.analysis.flow import class_definitions
from nnx_lint.analysis.mode import Mode, ModeContext
from nnx_lint.analysis.names import NameResolver
from nnx_lint.flax_table.signatures import ALIAS_CHECKING_WITHOUT_UPDATES, TRANSFORM_SIGNATURES, Signature


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
    def decoded(self) -> DecodedTransform:
        """The transform's arguments decoded with its flax signature (argnums, has_aux, axes),
        with the flags in force here."""
        function = self.functions[0] if len(self.functions) == 1 else None
        return decode_transform(self.transform, self.flags or Mode(None, None, ""), self.keeps_graph, function)

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
        return bool(graph) and not (updates is False and self.name in ALIAS_CHECKING_WITHOUT_UPDATES)


class ModuleTools:
    """Name resolution and mode context for one module (the linted one or another file)."""

    def __init__(self, module: nodes.Module, resolver: NameResolver, mode: ModeContext,
                 calls: dict[int, NNXCall | None] | None = None) -> None:
        self.module = module
        self.resolver = resolver
        self.mode = mode
        #: ``calls``: a memo to share (the linted module's, which the file's context keeps: each
        #: call is matched once per file, not once for the rules and again for the resolver).
        self._calls: dict[int, NNXCall | None] = {} if calls is None else calls

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


def _is_class_reference(expression: nodes.NodeNG) -> bool:
    """``Model`` in ``Model.method(...)`` is the class itself, not an instance."""
    return isinstance(expression, nodes.Name) and bool(class_definitions(expression))


def explicit_tree(call: NNXCall | None) -> bool:
    """Whether an NNX call pins Tree Mode itself: a literal ``graph=False`` or
    ``graph_updates=False`` (its meaning does not depend on the defaults)."""
    if call is None:
        return False
    return any(flag in call.keywords and constant_bool(call.keywords[flag]) is False
               for flag in ("graph", "graph_updates"))


class _NotLiteral:
    """The value of an argument that is not a Python literal (``in_axes=(nnx.StateAxes(...), 0)``)."""

    def __repr__(self) -> str:
        return "NOT_LITERAL"


#: A decoded argument that is not a literal, or a parameter the transform does not have.
NOT_LITERAL = _NotLiteral()


@dataclass(frozen=True)
class DecodedTransform:
    """One NNX transform call or decorator, its arguments bound with the transform's flax
    signature (:data:`nnx_lint.flax_table.signatures.TRANSFORM_SIGNATURES`): the one decoding of
    ``argnums`` / ``has_aux`` / ``nondiff_argnums`` / axes and of the mode flags in force that
    every rule reads (:func:`decode_transform`; the resolver's ``decoded`` and ``decorators``)."""

    #: The transform call (a synthetic one, without arguments, for a bare ``@nnx.jit``).
    call: NNXCall
    #: The ``graph`` / ``graph_updates`` flags in force (the call's keywords, ``nnx.compat``, scope).
    flags: Mode
    #: Whether flipping the defaults leaves this transform as it is (opted in, pinned to Tree
    #: Mode, or a bound Module method flax rejects in both modes).
    keeps_graph: bool
    #: The traced function as the call passes it (``f`` of ``nnx.grad(f)``); None for a factory
    #: (``nnx.grad(argnums=1)``) or a decorator, which get it later.
    function: nodes.NodeNG | None
    #: ``argnums`` of grad / value_and_grad: (0,) by default; None for a computed one, a
    #: ``DiffState`` or a transform without the parameter.
    argnums: tuple[int, ...] | None
    #: Whether ``argnums`` is a tuple (the gradients come as a tuple too).
    argnums_is_tuple: bool
    #: ``has_aux``: False by default; None when computed or not a parameter of the transform.
    has_aux: bool | None
    #: ``nondiff_argnums`` of custom_vjp: empty by default; None when not literal or not a parameter.
    nondiff_argnums: frozenset[int] | None
    #: ``static_argnums`` of jit / remat: empty by default; None when not literal or not a parameter.
    static_argnums: frozenset[int] | None
    #: ``in_axes`` / ``out_axes`` as Python literals (the signature's default when absent), a
    #: tuple's non-literal elements (prefix objects) as :data:`NOT_LITERAL`; :data:`NOT_LITERAL`
    #: when computed or not a parameter.
    in_axes: object
    out_axes: object
    #: What the resolver found the transform applied to (the decorated function, the factory's
    #: argument, ``f`` itself); None when decoded without the resolver.
    applied_to: nodes.NodeNG | None = None

    @property
    def name(self) -> str:
        """The transform's short name: ``grad`` for ``flax.nnx.grad`` and ``flax.nnx.compat.grad``."""
        return self.call.name

    @property
    def qualified_name(self) -> str:
        return self.call.qualified_name

    @property
    def node(self) -> nodes.NodeNG:
        """The transform call or decorator."""
        return self.call.node

    @property
    def is_compat(self) -> bool:
        return self.call.is_compat

    @property
    def given_flags(self) -> frozenset[str]:
        """The mode flags passed on the call itself (``graph=``, ``graph_updates=``)."""
        return frozenset(flag for flag in ("graph", "graph_updates") if flag in self.call.keywords)

    def argument(self, parameter: str) -> nodes.NodeNG | None:
        """The expression the call binds to ``parameter`` (by position or keyword), if any."""
        return bound_argument(self.call, parameter)


def bound_argument(call: NNXCall, parameter: str) -> nodes.NodeNG | None:
    """The expression ``call`` binds to its transform's ``parameter`` (by position, else keyword)."""
    signature = TRANSFORM_SIGNATURES.get(call.name)
    if signature is not None and parameter in signature.positional:
        position = signature.positional.index(parameter)
        if position < len(call.args) and not any(isinstance(a, nodes.Starred) for a in call.args[:position + 1]):
            return call.args[position]
    return call.keywords.get(parameter)


def decode_transform(call: NNXCall, mode: ModeContext | Mode, keeps_graph: bool | None = None,
                     applied_to: nodes.NodeNG | None = None) -> DecodedTransform:
    """Bind ``call``'s arguments with its transform's signature and decode them. ``mode``: the
    mode context of the call's module, or the flags already worked out (then ``keeps_graph`` must
    be given); ``keeps_graph`` overrides what the flags say; ``applied_to``: what the resolver
    found the transform applied to."""
    signature = TRANSFORM_SIGNATURES.get(call.name)
    parameters = signature.parameters if signature is not None else ()
    traced = signature.traced[0] if signature is not None and signature.traced else None
    flags = mode if isinstance(mode, Mode) else mode.call_mode(call)
    if keeps_graph is None:
        keeps_graph = not mode.flip_changes(call)  # type: ignore[union-attr]
    argnums, is_tuple = _argnums(bound_argument(call, "argnums")) if "argnums" in parameters else (None, False)
    return DecodedTransform(
        call=call,
        flags=flags,
        keeps_graph=keeps_graph,
        function=bound_argument(call, traced) if traced else None,
        argnums=argnums,
        argnums_is_tuple=is_tuple,
        has_aux=_flag(bound_argument(call, "has_aux")) if "has_aux" in parameters else None,
        nondiff_argnums=_int_set(bound_argument(call, "nondiff_argnums")) if "nondiff_argnums" in parameters else None,
        static_argnums=_int_set(bound_argument(call, "static_argnums")) if "static_argnums" in parameters else None,
        in_axes=_axes(call, signature, "in_axes"),
        out_axes=_axes(call, signature, "out_axes"),
        applied_to=applied_to,
    )


def _is_int(node: nodes.NodeNG | None) -> bool:
    return isinstance(node, nodes.Const) and isinstance(node.value, int) and not isinstance(node.value, bool)


def _plain_argnums(node: nodes.NodeNG) -> bool:
    """``0`` or ``(0, 1)``: argnums without a DiffState."""
    return _is_int(node) or isinstance(node, (nodes.Tuple, nodes.List)) and all(_is_int(e) for e in node.elts)


def _argnums(node: nodes.NodeNG | None) -> tuple[tuple[int, ...] | None, bool]:
    """``(argnums, given as a tuple)``; None when computed or a ``DiffState`` (NNX202's)."""
    if isinstance(node, nodes.IfExp):
        # `DiffState(0, nnx.LoRAParam) if lora else 0`: the plain branch differentiates the
        # whole argument (the DiffState branch is NNX202's); two plain branches stay unknown.
        plain = [branch for branch in (node.body, node.orelse) if _plain_argnums(branch)]
        node = plain[0] if len(plain) == 1 else node
    if node is None:
        return (0,), False
    if _is_int(node):
        return (node.value,), False
    if isinstance(node, (nodes.Tuple, nodes.List)) and all(_is_int(e) for e in node.elts):
        return tuple(e.value for e in node.elts), True
    return None, False


def _flag(node: nodes.NodeNG | None) -> bool | None:
    """A boolean parameter that defaults to False: its literal value, None when computed."""
    return False if node is None else constant_bool(node)


def _int_set(node: nodes.NodeNG | None) -> frozenset[int] | None:
    """``nondiff_argnums`` / ``static_argnums``: an int or a tuple of ints (empty by default); None
    when computed."""
    if node is None:
        return frozenset()
    if isinstance(node, (nodes.Tuple, nodes.List)):
        values = [e.value for e in node.elts if isinstance(e, nodes.Const) and isinstance(e.value, int)]
        return frozenset(values) if len(values) == len(node.elts) else None
    if isinstance(node, nodes.Const) and isinstance(node.value, int):
        return frozenset({node.value})
    return None


def _axes(call: NNXCall, signature: Signature | None, parameter: str) -> object:
    if signature is None or parameter not in signature.parameters:
        return NOT_LITERAL
    node = bound_argument(call, parameter)
    if node is None:
        return signature.defaults.get(parameter, NOT_LITERAL)
    return _literal(node)


def _literal(node: nodes.NodeNG) -> object:
    """An ``int`` / ``None`` as a Python value, a tuple or list as a tuple of its elements' values
    (``(nnx.StateAxes(...), 0)`` -> ``(NOT_LITERAL, 0)``: its length and literal parts stay known),
    anything else :data:`NOT_LITERAL`."""
    if isinstance(node, nodes.Const) and (node.value is None or _is_int(node)):
        return node.value
    if isinstance(node, nodes.UnaryOp) and node.op == "-" and _is_int(node.operand):
        return -node.operand.value  # out_axes=-1
    if isinstance(node, (nodes.Tuple, nodes.List)) and not any(isinstance(e, nodes.Starred) for e in node.elts):
        return tuple(_literal(element) for element in node.elts)
    return NOT_LITERAL
