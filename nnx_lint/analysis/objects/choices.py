"""Must or may: whether an object reaches a place of the object-flow model on every run, or only
on runs that take one side of a choice the program makes.

The solve is flow-insensitive and merges both sides of every choice (``a if c else b``, the
branches of an ``if``, ``x or y``, an ``except`` handler) into one set: that is what "may" means
there. A question that needs two places to hold *one* object (NNX103: one submodule at two
paths) asks, after the solve, how the object got to each place:

* **must**: along flows that run whenever the code around them runs (assignments, arguments,
  returns, attribute stores outside any branch);
* **may**: at least one step is one side of a choice: the program shares the object only on
  runs that take that side (``self.teacher = student if cfg.distill_self else build(...)``);
* **unknown**: the place is also written by another store outside any branch whose order
  against this one the model does not know (an overwrite), so the object may be gone.

The walk goes backwards over the solver's edges, only through variables that hold the object,
and is bounded (:data:`MAX_VISITS`): past it the answer is "may".
"""
from __future__ import annotations

from astroid import nodes

import nnx_lint.analysis.objects.abstract as kinds
from nnx_lint.analysis.objects.abstract import is_falsy_constant
from nnx_lint.analysis.objects.solver import may_be_false

MUST = "must"
MAY = "may"
#: How an object reaches a variable, best first.
_PLAIN, _CHOICE, _DEAD = 2, 1, 0
#: How many variables one question may visit before it answers "may".
MAX_VISITS = 4000

_SCOPES = (nodes.FunctionDef, nodes.Lambda, nodes.Module, nodes.ClassDef)


def in_branch(node: nodes.NodeNG | None) -> bool:
    """Whether ``node`` runs only on one side of a statement's choice inside its function: an
    ``if`` / ``match`` branch (``if __name__ == "__main__":`` aside) or an ``except`` handler. (The
    arms of ``a if c else b`` and the operands of ``x or y`` are judged at the edge into the
    expression: :meth:`Choices.store`.)"""
    if not isinstance(node, nodes.NodeNG):
        return False
    child, current = node, node.parent
    while current is not None and not isinstance(current, _SCOPES):
        if isinstance(current, nodes.If) and child is not current.test and not _main_guard(current):
            return True
        if isinstance(current, (nodes.ExceptHandler, nodes.MatchCase)):
            return True
        child, current = current, current.parent
    return False


def _main_guard(node: nodes.If) -> bool:
    test = node.test
    return isinstance(test, nodes.Compare) and isinstance(test.left, nodes.Name) and test.left.name == "__name__"


def _node_of(var: tuple) -> nodes.NodeNG | None:
    return var[1] if var[0] in ("e", "b", "x") and isinstance(var[1], nodes.NodeNG) else None


class Choices:
    """Answers :meth:`store` for one solved model (the reverse edges are built on first use)."""

    def __init__(self, solver) -> None:
        self.solver = solver
        self._into: dict[tuple, list[tuple]] | None = None
        self._loaded: dict[tuple, list[tuple[tuple, str]]] | None = None
        self._memo: dict[tuple, tuple[int, nodes.NodeNG | None]] = {}
        self._visits = 0

    def _reverse(self) -> None:
        into: dict[tuple, list[tuple]] = {}
        for source, targets in self.solver._copies.items():
            for target, _truthy in targets:
                into.setdefault(target, []).append(source)
        loaded: dict[tuple, list[tuple[tuple, str]]] = {}
        for base, targets in self.solver._loads.items():
            for target, attr in targets:
                loaded.setdefault(target, []).append((base, attr))
        self._into, self._loaded = into, loaded

    def store(self, holder, attr: str, target) -> tuple[str | None, nodes.NodeNG | None]:
        """How ``holder.attr`` holds ``target``: ``(MUST, None)``, ``(MAY, the choice)``, or
        ``(None, None)``: another store outside any branch may overwrite it, or it gets there
        only through an arm the code never takes (``a if False else b``)."""
        sites = self.solver.store_sites.get((holder, attr), ())
        points = self.solver.points
        carrying = [(node, source) for node, source in sites if target in points.get(source, ())]
        if not carrying:
            return None, None
        for node, source in sites:
            if target in points.get(source, ()) or in_branch(node):
                continue
            if not any(_before(node, carried) for carried, _source in carrying):
                return None, None  # a store outside any branch that may come after this one
        if self._into is None:
            self._reverse()
        best, choice = _DEAD, None
        for node, source in carrying:
            self._visits = 0
            level, found = self._reach(source, target, set())
            if in_branch(node) and level > _CHOICE:
                level, found = _CHOICE, node.statement()
            if level > best:
                best, choice = level, found
        return {_PLAIN: (MUST, None), _CHOICE: (MAY, choice)}.get(best, (None, None))

    def _reach(self, var: tuple, obj, visiting: set) -> tuple[int, nodes.NodeNG | None]:
        """How ``obj`` reaches ``var``: ``(_PLAIN, None)`` along flows outside any choice,
        ``(_CHOICE, the first choice on the way)``, or ``(_DEAD, None)`` only through arms never
        taken."""
        key = (var, obj)
        if key in self._memo:
            return self._memo[key]
        self._visits += 1
        if key in visiting:
            return _DEAD, None  # a cycle brings nothing new: the other ways in decide
        if self._visits > MAX_VISITS:
            return _CHOICE, None
        visiting.add(key)
        points = self.solver.points
        best, choice, predecessors = _DEAD, None, False
        node = _node_of(var)
        here = node if node is not None and in_branch(node) else None
        for source in self._into.get(var, ()):
            if obj not in points.get(source, ()):
                continue
            predecessors = True
            cap, at = (_CHOICE, here.statement()) if here is not None else (_PLAIN, None)
            source_node = _node_of(source)
            if in_branch(source_node):
                cap, at = _CHOICE, source_node.statement()
            if isinstance(node, nodes.IfExp):
                arm = self._arm(var, node, source_node)
                if arm == _DEAD:
                    continue
                if arm < cap:
                    cap, at = arm, node
            if isinstance(node, nodes.BoolOp) and not self._operand_always_taken(var, node, source_node, obj):
                cap, at = min(cap, _CHOICE), node
            if var[0] == "f" and not self._stored_plainly(var, source):
                cap, at = min(cap, _CHOICE), at or _store_of(self.solver, var, source)
            level, found = self._reach(source, obj, visiting)
            level, found = (level, found) if level <= cap else (cap, at)
            if level == _CHOICE and found is None:
                found = at
            if level > best:
                best, choice = level, found
            if best == _PLAIN:
                break
        if best < _PLAIN:
            for base, attr in self._loaded.get(var, ()):
                for holder in points.get(base, ()):
                    field = self.solver.field(holder, attr)
                    if obj not in points.get(field, ()) or holder.kind in (kinds.CONSTANT, kinds.LIBRARY):
                        continue
                    predecessors = True
                    first, first_at = self._reach(base, holder, visiting)
                    second, second_at = self._reach(field, obj, visiting)
                    level = min(first, second)
                    found = first_at if first <= second else second_at
                    if here is not None and level > _CHOICE:
                        level, found = _CHOICE, here.statement()
                    if level > best:
                        best, choice = level, found
        visiting.discard(key)
        result = (best, choice) if predecessors else (_PLAIN, None)  # no way in: made here
        self._memo[key] = result
        return result

    def _operand_always_taken(self, var: tuple, node: nodes.BoolOp, operand, obj) -> bool:
        """``x or y`` is ``x`` on every run when ``x`` is always true (a Module, an Rngs), and ``y``
        when every value the model knows ``x`` to hold in this context is a false literal
        (``teacher or student`` with no caller passing ``teacher``)."""
        if node.op != "or" or operand not in node.values:
            return False
        index = node.values.index(operand)
        if index == 0:
            return not may_be_false(obj)
        for earlier in node.values[:index]:
            held = self.solver.points.get(("e", earlier, var[2]), ())
            if not held or any(not is_falsy_constant(o) for o in held):
                return False
        return True

    def _arm(self, var: tuple, node: nodes.IfExp, arm: nodes.NodeNG | None) -> int:
        """``a if c else b``, the arm ``arm``: :data:`_PLAIN` when the model knows ``c`` takes it
        always, :data:`_DEAD` when never, :data:`_CHOICE` otherwise."""
        tests = self.solver.points.get(("e", node.test, var[2]), ())
        if not tests or any(t.kind != kinds.CONSTANT for t in tests):
            return _CHOICE
        truths = {bool(t.definition) for t in tests}
        taken = truths == {True} if arm is node.body else truths == {False}
        never = False not in truths if arm is node.orelse else True not in truths
        return _PLAIN if taken else _DEAD if never else _CHOICE

    def _stored_plainly(self, field: tuple, source: tuple) -> bool:
        """Whether a store of ``source`` into ``field`` sits outside any branch."""
        _tag, holder, attr = field
        return any(s == source and not in_branch(node) for node, s in self.solver.store_sites.get((holder, attr), ()))


def _before(first: nodes.NodeNG, second: nodes.NodeNG) -> bool:
    """Whether ``first`` runs before ``second`` in one function body (same scope, earlier line)."""
    return first.scope() is second.scope() and (first.lineno or 0) < (second.lineno or 0)


def _store_of(solver, field: tuple, source: tuple) -> nodes.NodeNG | None:
    """The statement of a store of ``source`` into ``field``."""
    _tag, holder, attr = field
    return next((node.statement() for node, s in solver.store_sites.get((holder, attr), ()) if s == source), None)
