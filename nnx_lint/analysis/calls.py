"""Recognising calls of the ``flax.nnx`` API in all their spellings.

A transform can be applied directly (``nnx.vmap(f, in_axes=...)``), as a decorator
factory (``@nnx.vmap(in_axes=...)``), through ``functools.partial`` (``partial(nnx.vmap,
in_axes=...)``, often as a decorator), or through ``nnx.compat``. Every form is one
:class:`NNXCall` with the keywords merged, so a rule looks at ``call.keywords`` once.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from astroid import nodes

from nnx_lint.analysis.names import NameResolver
from nnx_lint.flax_table.nnx_api import GRAPH_API_NODE_POSITION, GRAPH_APIS, TRANSFORMS, is_compat, short_name

#: ``functools.partial``: ``partial(nnx.jit, ...)`` is an NNX call, ``partial(f, a)`` a binding of ``f``.
PARTIALS = frozenset({"functools.partial"})


@dataclass
class NNXCall:
    """One call of a ``flax.nnx`` function, whatever its spelling."""

    node: nodes.Call
    #: Canonical qualified name: ``flax.nnx.vmap`` or ``flax.nnx.compat.vmap``.
    qualified_name: str
    #: ``vmap`` for both of the above.
    name: str
    keywords: dict[str, nodes.NodeNG] = field(default_factory=dict)
    #: Positional arguments given to the NNX function (after ``partial``'s first).
    args: list[nodes.NodeNG] = field(default_factory=list)
    via_partial: bool = False

    @property
    def callee(self) -> nodes.NodeNG:
        """The expression naming the NNX function (``nnx.jit``, or ``partial``'s first argument); the
        node itself when it is not a call (some rules record a bare reference, ``nnx.jit`` as a value)."""
        if not isinstance(self.node, nodes.Call):
            return self.node
        return self.node.args[0] if self.via_partial and self.node.args else self.node.func

    @property
    def form(self) -> str:
        """How the NNX function is applied: ``partial``, ``decorator`` or ``call``."""
        if self.via_partial:
            return "partial"
        if isinstance(self.node.parent, nodes.Decorators):
            return "decorator"
        return "call"

    @property
    def is_compat(self) -> bool:
        return is_compat(self.qualified_name)

    @property
    def is_transform(self) -> bool:
        return self.name in TRANSFORMS

    @property
    def is_graph_api(self) -> bool:
        return self.name in GRAPH_APIS

    @property
    def graph_node_argument(self) -> nodes.NodeNG | None:
        """The graph node a graph API walks (``node`` of ``nnx.map(f, node)``), if given."""
        position = GRAPH_API_NODE_POSITION.get(self.name, 0)
        return self.args[position] if len(self.args) > position else None

    def keyword_node(self, name: str) -> nodes.Keyword | None:
        """The ``Keyword`` node itself (for its position), from the call or its partial."""
        for keyword in self.node.keywords or []:
            if keyword.arg == name:
                return keyword
        return None


def match_nnx_call(call: nodes.Call, resolver: NameResolver) -> NNXCall | None:
    """Return the :class:`NNXCall` for ``call`` if it calls ``flax.nnx`` API, else None."""
    callee = resolver.qualified_name(call.func)
    if callee is None:
        return None
    name = short_name(callee)
    if name is not None:
        return NNXCall(call, callee, name, _keywords(call), list(call.args))
    if callee in PARTIALS and call.args:
        wrapped = resolver.qualified_name(call.args[0])
        wrapped_name = short_name(wrapped)
        if wrapped_name is not None:
            return NNXCall(call, wrapped, wrapped_name, _keywords(call), list(call.args[1:]), True)
    return None


def _keywords(call: nodes.Call) -> dict[str, nodes.NodeNG]:
    return {k.arg: k.value for k in call.keywords or [] if k.arg is not None}


def constant_bool(node: nodes.NodeNG | None) -> bool | None:
    """True/False for a literal bool, None for anything else (absent or computed)."""
    if isinstance(node, nodes.Const) and isinstance(node.value, bool):
        return node.value
    return None
