"""Mode context: is graph mode explicitly kept where a node sits?

Graph semantics survive the flip where the code opts in (spec, "What must stay
silent"; catalogue G1-G3):

* on the call: ``graph=True`` for graph APIs; ``graph=True, graph_updates=True`` for
  transforms (``graph=True`` alone already drops graph updates and rejects prefix
  filters, G3); ``nnx.compat.<api>`` fixes both, unless the call overrides them;
* in scope: inside ``with nnx.set_graph_mode(True), nnx.set_graph_updates(True):`` or a
  function decorated with both, or after a plain ``nnx.set_graph_mode(True)`` statement
  earlier in the same function or module (a module-level setting also covers every
  function body, which runs later). ``flax.config.update('nnx_graph_mode', True)``
  counts like ``set_graph_mode(True)``.

Flag values that are not literals (``graph=use_graph``) count as an explicit choice:
the code is treated as opted in, since precision comes first.
"""
from __future__ import annotations

import bisect

from dataclasses import dataclass

from astroid import nodes

from nnx_lint.flax_table import nnx_api
from nnx_lint.analysis.calls import NNXCall, constant_bool
from nnx_lint.analysis.names import NameResolver
from nnx_lint.flax_table.names import FLAX_CONFIG_UPDATE

_SETTERS = nnx_api.MODE_SETTERS
_CONFIG_KEYS = nnx_api.MODE_CONFIG_KEYS


@dataclass(frozen=True)
class Mode:
    """The effective flags at a call; None means "not set here" (the default applies)."""

    graph: bool | None
    graph_updates: bool | None
    source: str

    def keeps_graph(self, transform: bool) -> bool:
        if transform:
            return self.graph is True and self.graph_updates is True
        return self.graph is True


class ModeContext:
    """Answers "is graph mode explicitly kept here?" for one file."""

    def __init__(self, module: nodes.Module, resolver: NameResolver) -> None:
        self.module = module
        self.resolver = resolver
        self._scope_memo: dict[int, dict[str, tuple[object, str]]] = {}
        self._setters: dict[int, tuple[list[int], list[dict], dict[int, int]]] = {}
        self._modes: dict[tuple, Mode] = {}

    def call_mode(self, call: NNXCall) -> Mode:
        """The flags in force for an NNX call: its own keywords, compat, then scope (memoised:
        several rules ask about each call; the key is everything the answer reads)."""
        keywords = call.keywords
        key = (id(call.node), call.qualified_name, call.name,
               id(keywords.get("graph")), id(keywords.get("graph_updates")))
        found = self._modes.get(key)
        if found is None:
            found = self._modes[key] = self._call_mode(call)
        return found

    def _call_mode(self, call: NNXCall) -> Mode:
        flags = dict(self.scoped_flags(call.node))
        if call.is_compat:
            flags["graph"] = (True, "nnx.compat")
            if call.is_transform:
                flags["graph_updates"] = (True, "nnx.compat")
        for flag in ("graph", "graph_updates"):
            if flag in call.keywords:
                value = constant_bool(call.keywords[flag])
                flags[flag] = (True if value is None else value, f"{flag}= on the call")
        graph = flags.get("graph", (None, ""))
        updates = flags.get("graph_updates", (None, ""))
        sources = sorted({s for _, s in (graph, updates) if s})
        return Mode(graph[0], updates[0], ", ".join(sources))  # type: ignore[arg-type]

    def keeps_graph_mode(self, call: NNXCall) -> bool:
        """Whether graph semantics are explicitly kept for this call."""
        return self.call_mode(call).keeps_graph(transform=not call.is_graph_api)

    def chooses_tree_mode(self, call: NNXCall) -> bool:
        """Whether this call already selects Tree Mode explicitly (a literal False flag).

        For transforms ``graph_updates=False`` alone is enough: prefix filters, graph updates
        and the grad container already follow Tree Mode then (catalogue G3). Such code does
        not change meaning when the defaults flip, so migration rules stay silent on it.
        """
        mode = self.call_mode(call)
        if call.is_graph_api:
            return mode.graph is False
        return mode.graph is False or mode.graph_updates is False

    def flip_changes(self, call: NNXCall) -> bool:
        """Whether flipping the defaults changes this call: neither opted in nor already Tree Mode."""
        return not self.keeps_graph_mode(call) and not self.chooses_tree_mode(call)

    def scope_keeps_graph_mode(self, node: nodes.NodeNG, transform: bool = True) -> bool:
        """Whether the scope around ``node`` (not a call's own flags) keeps graph mode."""
        flags = self.scoped_flags(node)
        mode = Mode(flags.get("graph", (None, ""))[0], flags.get("graph_updates", (None, ""))[0], "scope")  # type: ignore[arg-type]
        return mode.keeps_graph(transform)

    def scoped_flags(self, node: nodes.NodeNG) -> dict[str, tuple[object, str]]:
        """Flags set by enclosing ``with`` blocks, decorators and earlier statements
        (memoised per node: every rule asks it about every NNX call; do not mutate)."""
        key = id(node)
        if key not in self._scope_memo:
            self._scope_memo[key] = self._compute_scoped_flags(node)
        return self._scope_memo[key]

    def _compute_scoped_flags(self, node: nodes.NodeNG) -> dict[str, tuple[object, str]]:
        flags: dict[str, tuple[object, str]] = {}
        # Walk outward; inner settings override outer ones, so apply outermost first.
        chain = []
        current = node
        while current is not None:
            chain.append(current)
            current = current.parent
        # Code in a function *body* runs later than the module's statements; decorators
        # and default values run when the `def` executes, in statement order.
        in_function = any(
            (isinstance(ancestor, (nodes.FunctionDef, nodes.AsyncFunctionDef)) and child in ancestor.body)
            or (isinstance(ancestor, nodes.Lambda) and child is ancestor.body)
            for ancestor, child in zip(chain[1:], chain[:-1])
        )
        for ancestor, child in reversed(list(zip(chain[1:], chain[:-1]))):
            if isinstance(ancestor, nodes.Module):
                flags.update(self._statement_flags(ancestor, before=child, whole_body=in_function))
            elif isinstance(ancestor, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
                flags.update(self._statement_flags(ancestor, before=child))
            if isinstance(ancestor, (nodes.FunctionDef, nodes.AsyncFunctionDef)) and ancestor.decorators:
                if child is not ancestor.decorators:
                    for decorator in ancestor.decorators.nodes:
                        flags.update(self._setter_flags(decorator, "decorator"))
            if isinstance(ancestor, (nodes.With, nodes.AsyncWith)) and child in ancestor.body:
                for expression, _ in ancestor.items:
                    flags.update(self._setter_flags(expression, "with block"))
        return flags

    def _setter_flags(self, expression: nodes.NodeNG, source: str) -> dict[str, tuple[object, str]]:
        if not isinstance(expression, nodes.Call):
            return {}
        name = self.resolver.qualified_name(expression.func)
        flag = _SETTERS.get(name or "")
        if flag and expression.args:
            value = constant_bool(expression.args[0])
            setter = name.rpartition(".")[2]
            return {flag: (True if value is None else value, f"{setter} {source}")}
        if name == FLAX_CONFIG_UPDATE and len(expression.args) >= 2:
            key = expression.args[0]
            if isinstance(key, nodes.Const) and key.value in _CONFIG_KEYS:
                value = constant_bool(expression.args[1])
                return {_CONFIG_KEYS[key.value]: (True if value is None else value, f"flax.config {source}")}
        return {}

    def _statement_flags(
        self, scope: nodes.NodeNG, before: nodes.NodeNG, whole_body: bool = False
    ) -> dict[str, tuple[object, str]]:
        """Plain setter statements in ``scope``'s body that run before ``before``.

        ``whole_body``: the node runs after the whole module body (it is inside a function).
        Answered from a per-scope index (bisection), as it is asked for every call.
        """
        indices, cumulative, positions = self._setter_index(scope)
        position = positions.get(id(before))
        if position is not None and whole_body and position in indices:
            # Rare: the node sits inside a setter statement itself; all the others apply.
            flags: dict[str, tuple[object, str]] = {}
            for index in indices:
                if index != position:
                    flags.update(self._setter_flags(scope.body[index].value, "statement"))
            return flags
        end = len(indices) if position is None or whole_body else bisect.bisect_left(indices, position)
        return dict(cumulative[end - 1]) if end else {}

    def _setter_index(self, scope: nodes.NodeNG) -> tuple[list[int], list[dict], dict[int, int]]:
        """Positions of the setter statements in ``scope``'s body, the flags in force after
        each, and every body statement's position."""
        key = id(scope)
        if key not in self._setters:
            indices: list[int] = []
            cumulative: list[dict] = []
            flags: dict[str, tuple[object, str]] = {}
            for index, statement in enumerate(scope.body):
                if isinstance(statement, nodes.Expr):
                    own = self._setter_flags(statement.value, "statement")
                    if own:
                        flags = {**flags, **own}
                        indices.append(index)
                        cumulative.append(flags)
            positions = {id(statement): index for index, statement in enumerate(scope.body)}
            self._setters[key] = (indices, cumulative, positions)
        return self._setters[key]
