"""Questions about one statement that the object-flow model answers from its call graph and its
constants: does any analysed call take the branch the statement sits in, and does an attribute
store change anything (graph-update rules ask both)."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

import nnx_lint.analysis.objects.abstract as kinds
from nnx_lint.analysis.objects.choices import MAY, MUST
from nnx_lint.analysis.objects.abstract import is_falsy_constant
from nnx_lint.flax_table.names import NNX_PREFIX


def parameter_guards(node: nodes.NodeNG) -> list[tuple[nodes.FunctionDef, str]]:
    """The ``if flag:`` around ``node`` (inside its function) whose ``flag`` is a parameter of the
    function: ``(function, flag)`` for each, innermost first. Syntax only: no model is built."""
    found = []
    current = node
    while current.parent is not None and not isinstance(current, (nodes.FunctionDef, nodes.Lambda)):
        parent = current.parent
        if isinstance(parent, nodes.If) and current in parent.body and isinstance(parent.test, nodes.Name):
            function = parent.scope()
            if isinstance(function, nodes.FunctionDef) and parent.test.name in function.argnames():
                found.append((function, parent.test.name))
        current = parent
    return found


def branch_never_taken(model, node: nodes.NodeNG) -> bool:
    """Whether ``node`` sits in the body of ``if flag:`` (``flag`` a parameter of the enclosing
    function) and every analysed call of that function leaves ``flag`` falsy: its default is
    ``False`` / ``None`` and no caller passes a true value. False when no analysed call reaches
    the function (nothing is known about its callers)."""
    for function, flag in parameter_guards(node):
        values = model.parameter_values(function, flag)
        if values and all(is_falsy_constant(v) for v in values):
            return True
    return False


def restores_constant(model, owner: nodes.NodeNG, attribute: str, value: nodes.NodeNG | None,
                      store: nodes.NodeNG | None = None) -> bool:
    """Whether ``owner.attribute = value`` stores the literal the attribute always holds: every
    store of ``attribute`` on every instance of the owner's classes stores that same literal,
    so the write changes nothing (Tree Mode dropping it is invisible). ``store``: the write itself
    (its target), which does not count as the attribute's earlier value."""
    if not isinstance(value, nodes.Const):
        return False
    classes = {o.definition for o in model.objects(owner) if isinstance(o.definition, nodes.ClassDef)
               and o.kind != kinds.CLASS}
    if not classes:
        return False
    for classdef in classes:
        known, held = model.constant(classdef, attribute, besides=store)
        if not known or type(held) is not type(value.value) or held != value.value:
            return False
    return True


def holders_of(model, classdef: nodes.ClassDef) -> list:
    """The objects of ``classdef`` the model knows: instances it saw made, or else the class's
    outside ``self`` (what its methods do to an instance no analysed code constructs)."""
    made = model.instances_of(classdef)
    if made:
        return made
    return [holder for holder, _attr in model.solver.store_sites if holder.definition is classdef
            and holder.kind != kinds.CLASS]


def leaves_the_tree(model, classdef: nodes.ClassDef, fields: tuple[str, ...]) -> bool:
    """Whether the attribute path ``fields`` of an instance of ``classdef`` runs through a plain
    Python object (static to NNX, so what it holds is not in the tree): the model knows the
    objects at some step before the last, and none of them is a tree node (Module, pytree
    dataclass, optimizer, container). False when the model does not know."""
    current = holders_of(model, classdef)
    for attr in fields[:-1]:
        following = set()
        for holder in current:
            following |= model.fields(holder, attr)
        known = [o for o in following if o.kind not in (kinds.CONSTANT, kinds.OUTSIDE)]
        if not known:
            return False
        if all(o.kind == kinds.PLAIN for o in known):
            return True
        current = [o for o in known if o.is_tree_node]
    return False


def shared_rngs_paths(model, classdef: nodes.ClassDef) -> list[tuple]:
    """``(first path, second path, rngs object)`` for each Rngs (or stream of one) that an instance
    of ``classdef`` holds at two paths of its tree whose first fields differ."""
    found = []
    for holder in holders_of(model, classdef):
        by_owner: dict = {}
        for path, obj in model.holds(holder):
            if obj.kind not in (kinds.RNGS, kinds.STREAM):
                continue
            owner = obj.copy_of if obj.kind == kinds.STREAM and obj.copy_of is not None else obj
            by_owner.setdefault(owner, []).append(path)
        for owner, paths in by_owner.items():
            paths.sort(key=lambda p: (len(p.fields), p.fields))
            first = paths[0]
            for second in paths[1:]:
                if second.fields[0] != first.fields[0]:
                    found.append((first, second, owner))
                    break
    return found


#: Objects with identity in NNX's tree: reaching one at two paths is a shared reference.
_SHARED_KINDS = frozenset({kinds.MODULE, kinds.VARIABLE, kinds.RNGS, kinds.STREAM})


@dataclass(frozen=True)
class SharedInside:
    """One object that a root object's tree reaches at two paths (:func:`shared_inside`)."""

    first: object
    second: object
    target: object
    root: object
    #: ``"must"``: both paths hold it on every run; ``"may"``: one step is one side of a choice
    #: the program makes (``student if cfg.distill_self else build()``).
    certainty: str
    #: The choices (``a if c else b``, ``x or y``, a branch's statement) one path goes through
    #: (empty for ``"must"``).
    choices: tuple = ()


_RANK = {MUST: 2, MAY: 1}


def shared_inside(model, expression: nodes.NodeNG, wanted: frozenset[str] = _SHARED_KINDS) -> SharedInside | None:
    """The best :class:`SharedInside` (must before may) for an object ``root`` that ``expression``
    holds (one the model saw made) whose tree reaches one object of the ``wanted`` kinds
    (default: Module, Variable, Rngs) at two paths; None otherwise.

    Only an object that stands for one runtime object per root counts
    (:meth:`ObjectModel.one_object_within`): a summary (made in a loop, or in a merged context)
    reached at two paths may be two objects. Each path is judged from where the two part
    (:meth:`ObjectModel.how_held`); a step another store may overwrite disqualifies it."""
    best: SharedInside | None = None
    for root in model.objects(expression):
        if not root.proven or not root.is_tree_node:
            continue
        by_target: dict = {}
        for path, obj in model.paths(root, lambda o: o.kind in wanted):
            if not obj.proven or not holds_state(model, obj):
                continue  # a Pytree of arrays only: shared, but no Variable to find twice
            target = obj.copy_of if obj.kind == kinds.STREAM and obj.copy_of is not None else obj
            by_target.setdefault(target, []).append(path)
        for target, paths in by_target.items():
            if len(paths) < 2 or not model.one_object_within(target, root):
                continue
            for index, first in enumerate(paths):
                for second in paths[index + 1:]:
                    found = _judged(model, root, target, first, second)
                    if found is not None and (best is None or _RANK[found.certainty] > _RANK[best.certainty]):
                        best = found
                        if best.certainty == MUST:
                            return best
    return best


def _judged(model, root, target, first, second) -> SharedInside | None:
    """The pair judged from where the paths part; None when one path is the other's prefix (a
    cycle) or a step may be overwritten."""
    common = 0
    while common < min(len(first.fields), len(second.fields)) and first.fields[common] == second.fields[common] \
            and first.objects[common] is second.objects[common]:
        common += 1
    if common in (len(first.fields), len(second.fields)):
        return None
    certainty, choices = MUST, []
    for path in (first, second):
        holder = path.objects[common - 1] if common else root
        for attr, reached in zip(path.fields[common:], path.objects[common:]):
            held, choice = model.how_held(holder, attr, reached)
            if held is None:
                return None
            if held == MAY:
                certainty = MAY
                if choice is not None:
                    choices.append(choice)
            holder = reached
    return SharedInside(first, second, target, root, certainty, tuple(choices))


def holds_state(model, obj) -> bool:
    """Whether ``obj`` is or holds NNX state: a Variable, an Rngs, a flax layer (its Params), or a
    Module whose tree reaches one of those."""
    if obj.kind in (kinds.VARIABLE, kinds.RNGS, kinds.STREAM):
        return True
    if obj.kind == kinds.MODULE and obj.definition is None and (obj.class_name or "").startswith(NNX_PREFIX):
        return True
    return any(True for _ in model.paths(obj, lambda o: o.kind in (kinds.VARIABLE, kinds.RNGS, kinds.STREAM)
                                         or (o.kind == kinds.MODULE and o.definition is None)))


def reached_from(model, expression: nodes.NodeNG, targets: set) -> tuple | None:
    """``(root, path, object)`` when an object ``root`` that ``expression`` holds (one the model saw
    made, a tree node) reaches one of ``targets`` along a path of its tree (an
    ``nnx.ModelAndOptimizer`` reaches its model at ``.model``); None otherwise."""
    if not targets:
        return None
    for root in model.objects(expression):
        if not root.proven or not root.is_tree_node or root in targets:
            continue
        for path, obj in model.paths(root, lambda o: o in targets):
            return root, path, obj
    return None
