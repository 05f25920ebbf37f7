"""Questions about one statement that the object-flow model answers from its call graph and its
constants: does any analysed call take the branch the statement sits in, and does an attribute
store change anything (graph-update rules ask both)."""
from __future__ import annotations

import operator
from dataclasses import dataclass

from astroid import nodes

import nnx_lint.analysis.objects.abstract as kinds
from nnx_lint.analysis.objects.abstract import order_text
from nnx_lint.analysis.objects.choices import MAY, MUST
from nnx_lint.analysis.objects.numbers import argument_numbers
from nnx_lint.analysis.objects.replays import replays_construction
from nnx_lint.analysis.objects.summary import own_scope
from nnx_lint.base.node_index import nodes_of_class
from nnx_lint.flax_table.names import NNX_PREFIX


def parameter_guards(node: nodes.NodeNG) -> list[tuple[nodes.FunctionDef, str]]:
    """The guards around ``node`` (inside its function) that read a parameter of the function
    (``if flag:``, ``if p > 0.0:``, ``... if p > 0.0 else ...``): ``(function, parameter)`` for each,
    innermost first. Syntax only: no model is built."""
    return [(function, _tested_parameter(test)) for function, test, _branch in _parameter_tests(node)]


#: The comparisons a guard may make between a parameter and a literal number.
_COMPARE = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le,
            "==": operator.eq, "!=": operator.ne}
_MIRROR = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "==": "==", "!=": "!="}


def _parameter_tests(node: nodes.NodeNG) -> list[tuple[nodes.FunctionDef, nodes.NodeNG, bool]]:
    """``(function, test, branch)`` for each ``if test:`` statement and ``... if test else ...``
    expression around ``node`` (inside its function) whose test reads a parameter of the function
    (``flag``, ``p > 0.0``, ``0 < p``); ``branch``: whether ``node`` runs when the test is true."""
    found = []
    current = node
    while current.parent is not None and not isinstance(current, (nodes.FunctionDef, nodes.Lambda)):
        parent = current.parent
        if isinstance(parent, nodes.If) and (current in parent.body or current in parent.orelse):
            branch = current in parent.body
        elif isinstance(parent, nodes.IfExp) and current in (parent.body, parent.orelse):
            branch = current is parent.body
        else:
            current = parent
            continue
        function = parent.scope()
        name = _tested_parameter(parent.test)
        if isinstance(function, nodes.FunctionDef) and name in function.argnames():
            found.append((function, parent.test, branch))
        current = parent
    return found


def _tested_parameter(test: nodes.NodeNG) -> str | None:
    """The parameter name a guard reads: ``p`` itself or one side of ``p <op> literal``."""
    if isinstance(test, nodes.Name):
        return test.name
    if isinstance(test, nodes.Compare) and len(test.ops) == 1 and test.ops[0][0] in _COMPARE:
        for side in (test.left, test.ops[0][1]):
            if isinstance(side, nodes.Name):
                return side.name
    return None


def _guard_holds(test: nodes.NodeNG, value: object) -> bool | None:
    """The truth of ``test`` when its parameter holds the literal ``value``; None when unknown (a
    comparison with something other than a literal number, or a value that is not one)."""
    if isinstance(test, nodes.Name):
        return bool(value)
    op, right = test.ops[0]
    literal, flipped = (right, False) if isinstance(test.left, nodes.Name) else (test.left, True)
    numbers = (int, float)
    if not isinstance(literal, nodes.Const) or not isinstance(literal.value, numbers) \
            or not isinstance(value, numbers) or isinstance(value, bool) or isinstance(literal.value, bool):
        return None
    return _COMPARE[_MIRROR[op] if flipped else op](value, literal.value)


def branch_never_taken(model, node: nodes.NodeNG) -> bool:
    """Whether ``node`` sits in a branch of ``if test:`` or ``... if test else ...`` (``test``: a
    parameter ``p`` of the enclosing function, or ``p`` compared with a literal number) that no
    analysed call of that function takes: every call passes, or leaves at its default, a literal
    that decides the test the other way.

    Conservative where nothing is known: False when no analysed call reaches the function (a
    public entry point, whose default alone would decide), or when a call passes a value the model
    cannot evaluate to a literal (a computed argument, an outside parameter). Calls the model does
    not see (another file's callers of an entry point it reaches from this file) are not asked."""
    for function, test, branch in _parameter_tests(node):
        # the code that can call ``function``, not the whole file (a node inside it, its
        # arguments, stands for the function: a question about the function node itself would be
        # about the scope that defines it)
        with model.focused_on(function.args):
            values = model.parameter_values(function, _tested_parameter(test))
        if not values or any(v.kind != kinds.CONSTANT for v in values):
            continue
        if all(_guard_holds(test, v.definition) is (not branch) for v in values):
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


def restores_invariant(model, owner: nodes.NodeNG, attribute: str, value: nodes.NodeNG | None,
                       store: nodes.NodeNG | None = None) -> bool:
    """Whether ``owner.attribute = value`` re-computes the value the attribute already holds, on
    every class of the owner's objects (:func:`_restores_on`)."""
    if not isinstance(owner, nodes.Name):
        return False
    classes = {o.definition for o in model.objects(owner) if isinstance(o.definition, nodes.ClassDef)
               and o.kind != kinds.CLASS}
    return bool(classes) and all(_restores_on(model, classdef, owner.name, attribute, value, store, 0)
                                 for classdef in classes)


def _restores_on(model, classdef: nodes.ClassDef, owner_name: str, attribute: str, value: nodes.NodeNG | None,
                 store: nodes.NodeNG | None, depth: int) -> bool:
    """Either every store of ``attribute`` besides ``store`` (the write itself) sits in an
    ``__init__`` and stores the same expression, built only from literals and attributes of the
    same object (``self.a + self.b``) that nothing besides an ``__init__`` writes, each written
    before the attribute; or ``store`` is part of a block that re-runs construction code word for
    word (:func:`~nnx_lint.analysis.objects.replays.replays_construction`). Nothing the value is
    computed from has changed, so neither has the value."""
    if isinstance(store, nodes.AssignAttr) and replays_construction(
            model, classdef, store, lambda other, level: _restores_on(
                model, classdef, other.expr.name, other.attrname, _stored_value(other), other, level), depth):
        return True
    shape = _expression_shape(value, owner_name)
    if shape is None:
        return False
    stores = _init_stores(model, classdef, attribute, besides=store)
    if not stores or any(_expression_shape(_stored_value(node), _self_name(node)) != shape for node in stores):
        return False
    for read in _attributes_read(shape):
        inputs = _init_stores(model, classdef, read)
        if not inputs or any(i.frame() is not s.frame() or i.fromlineno >= s.fromlineno
                             for i in inputs for s in stores):
            return False
    return True


def _init_stores(model, classdef: nodes.ClassDef, attribute: str, besides: nodes.NodeNG | None = None):
    """The stores of ``attribute`` on any instance of ``classdef`` (``besides`` left out), or None
    when one of them is not in an ``__init__`` or the model widened the field."""
    found = []
    for (holder, field), sites in model.solver.store_sites.items():
        if field != attribute or holder.definition is not classdef:
            continue
        if model.solver.field(holder, attribute) in model.solver.widened:
            return None
        for node, _source in sites:
            if node is besides:
                continue
            frame = node.frame()
            if not isinstance(frame, nodes.FunctionDef) or frame.name != "__init__":
                return None
            found.append(node)
    return found


def _stored_value(target: nodes.NodeNG) -> nodes.NodeNG | None:
    """The value of ``self.x = value`` (a plain single-target assignment), else None."""
    statement = target.parent
    if isinstance(statement, (nodes.Assign, nodes.AnnAssign)) and getattr(statement, "targets", [target]) == [target]:
        return statement.value
    return None


def _self_name(target: nodes.NodeNG) -> str | None:
    return target.expr.name if isinstance(target, nodes.AssignAttr) and isinstance(target.expr, nodes.Name) else None


def _expression_shape(node: nodes.NodeNG | None, self_name: str | None):
    """A comparable form of an expression built only from literals, ``self_name.attribute`` reads
    and arithmetic on them; None for anything else (a call, a name, a subscript...)."""
    if isinstance(node, nodes.Const):
        return ("const", type(node.value).__name__, node.value)
    if isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name) and node.expr.name == self_name:
        return ("attr", node.attrname)
    if isinstance(node, nodes.BinOp):
        left, right = _expression_shape(node.left, self_name), _expression_shape(node.right, self_name)
        return None if left is None or right is None else ("binop", node.op, left, right)
    if isinstance(node, nodes.UnaryOp):
        operand = _expression_shape(node.operand, self_name)
        return None if operand is None else ("unary", node.op, operand)
    return None


def _attributes_read(shape) -> set[str]:
    """The attributes an expression shape reads."""
    if shape[0] == "attr":
        return {shape[1]}
    if shape[0] == "const":
        return set()
    return set().union(*(_attributes_read(part) for part in shape[2:]))


def holders_of(model, classdef: nodes.ClassDef) -> list:
    """The objects of ``classdef`` the model knows: instances it saw made, or else the class's
    outside ``self`` (what its methods do to an instance no analysed code constructs)."""
    made = model.instances_of(classdef)
    if made:
        return made
    # one holder once: the store sites are keyed by (holder, field)
    return list(dict.fromkeys(holder for holder, _attr in model.solver.store_sites
                              if holder.definition is classdef and holder.kind != kinds.CLASS))


def leaves_the_tree(model, classdef: nodes.ClassDef, fields: tuple[str, ...]) -> bool:
    """Whether the attribute path ``fields`` of an instance of ``classdef`` runs through a plain
    Python object (static to NNX, so what it holds is not in the tree): the model knows the
    objects at some step before the last, and none of them is a tree node (Module, pytree
    dataclass, optimizer, container). False when the model does not know."""
    if len(fields) < 2:
        return False  # no step before the last: nothing to ask the model
    constructions = model.constructions_of(classdef)
    if constructions is not None and _tree_nodes_at_every_step(constructions, classdef, fields[:-1]):
        return False
    with model.focused_on(classdef, deep=False) as shallow:
        if _tree_nodes_at_every_step(shallow, classdef, fields[:-1]):
            return False
    with model.focused_on(classdef):
        return _leaves_the_tree(model, classdef, fields)


def _tree_nodes_at_every_step(shallow, classdef: nodes.ClassDef, steps: tuple[str, ...]) -> bool:
    """Whether the shallow solve (``shallow``: ``ObjectModel.focused_on(..., deep=False)``) already
    puts a known object other than a plain Python one at every step of ``steps`` from the objects
    of ``classdef``. The full model knows all of that and more, so it cannot find every known
    object at a step plain (:func:`_leaves_the_tree` then says False too), and the trees of
    layers those objects build need not be solved.

    One case escapes that argument: instances of ``classdef`` that only other files' code,
    reached from this file, makes. The full model walks from them and the shallow one from the
    class's outside ``self``. Even then this answer can only keep a finding that the full model
    would have set aside, and can never drop one."""
    current = holders_of(shallow, classdef)
    for attr in steps:
        if not current:
            return False
        known = [o for holder in current for o in shallow.fields(holder, attr)
                 if o.kind not in (kinds.CONSTANT, kinds.OUTSIDE)]
        if all(o.kind == kinds.PLAIN for o in known):
            return False
        current = [o for o in known if o.is_tree_node]
    return True


def _leaves_the_tree(model, classdef: nodes.ClassDef, fields: tuple[str, ...]) -> bool:
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


def never_built(model, classdef: nodes.ClassDef, fields: tuple[str, ...]) -> bool:
    """Whether no instance of ``classdef`` reaches the attribute path ``fields`` because an object
    on the way is made only in a branch no analysed call takes (``Child(rngs) if rate > 0.0 else
    Identity()`` where the call that made it leaves ``rate`` at 0.0): walking the path, the objects
    left once those are set aside hold nothing at the next field. False when the model does not know."""
    if not fields:
        return False
    constructions = model.constructions_of(classdef)
    if constructions is not None and _built_at_every_step(constructions, classdef, fields):
        return False
    with model.focused_on(classdef, deep=False) as shallow:
        if _built_at_every_step(shallow, classdef, fields):
            return False
    with model.focused_on(classdef):
        return _never_built(model, classdef, fields)


def _built_at_every_step(shallow, classdef: nodes.ClassDef, fields: tuple[str, ...]) -> bool:
    """Whether the shallow solve (``shallow``) already reaches, at every step of ``fields``, an
    object that no guard can set aside: one made outside any branch whose test reads a parameter
    (or an outside value, or a constant). The full model has those objects too, so
    :func:`_never_built` finds something built at every step and says False, and the trees of
    layers need not be solved (the same argument, and the same one exception, as
    :func:`_tree_nodes_at_every_step`: this answer can only keep a finding)."""
    current = holders_of(shallow, classdef)
    for attr in fields:
        current = [o for holder in current for o in shallow.fields(holder, "*" if attr.startswith("[") else attr)
                   if _never_set_aside(o)]
        if not current:
            return False
    return True


def _never_set_aside(obj) -> bool:
    """Whether :func:`_made_in_branch_not_taken` is False for ``obj`` whatever the model knows."""
    return not (obj.proven and obj.site is not None and obj.kind not in (kinds.CONSTANT, kinds.OUTSIDE)) \
        or not _parameter_tests(obj.site)


def _never_built(model, classdef: nodes.ClassDef, fields: tuple[str, ...]) -> bool:
    current = holders_of(model, classdef)
    pruned = False
    for attr in fields:
        following = set()
        for holder in current:
            following |= model.fields(holder, "*" if attr.startswith("[") else attr)
        if not following:
            return pruned  # only the objects a dead branch makes hold the rest of the path
        built = [o for o in following if not (o.proven and o.site is not None and o.kind not in (
            kinds.CONSTANT, kinds.OUTSIDE) and _made_in_branch_not_taken(model, o))]
        pruned = pruned or len(built) < len(following)
        if not built:
            return True
        current = built
    return False


def _made_in_branch_not_taken(model, obj) -> bool:
    """Whether ``obj``'s creation site sits in a branch of a parameter guard that the call which
    made it (its context) does not take: the parameter holds only literals there (passed, or the
    default of a call that leaves it out) and each decides the guard the other way. An entry with
    no caller holds an outside value there, so it never counts."""
    for function, test, branch in _parameter_tests(obj.site):
        if own_scope(obj.site) is not function:
            continue
        name = _tested_parameter(test)
        binding = next((b for b in nodes_of_class(function.args, nodes.AssignName) if b.name == name), None)
        if binding is None:
            continue
        values = model.solver.points.get(model.solver.var(("b", binding), function, obj.context), set())
        if values and all(v.kind == kinds.CONSTANT and _guard_holds(test, v.definition) is (not branch)
                          for v in values):
            return True
        computed = _computed_argument(model, obj.context, function, name)
        if computed and all(_guard_holds(test, v) is (not branch) for v in computed):
            return True
    return False


def _computed_argument(model, context, function: nodes.FunctionDef, name: str) -> frozenset | None:
    """The numbers the constructor call that entered ``function`` (``context``'s site) passes for
    ``name`` as a computed argument (``float(dpr[i])``), evaluated in the context of the function
    holding that call: the new instance's own context, so only for a construction
    (:func:`~nnx_lint.analysis.objects.numbers.argument_numbers`)."""
    receiver = getattr(context, "caller", None)
    call = getattr(context, "site", None)
    if not isinstance(call, nodes.Call) or not isinstance(receiver, kinds.AbstractObject) or receiver.site is not call:
        return None
    return argument_numbers(model, call, function, name, receiver.context)


def shared_rngs_paths(model, classdef: nodes.ClassDef) -> list[tuple]:
    """``(first path, second path, rngs object)`` for each Rngs (or stream of one) that an instance
    of ``classdef`` holds at two paths of its tree whose first fields differ."""
    with model.focused_on(classdef):
        return _shared_rngs_paths(model, classdef)


def _shared_rngs_paths(model, classdef: nodes.ClassDef) -> list[tuple]:
    found, pairs = [], set()
    for holder in holders_of(model, classdef):
        by_owner: dict = {}
        for path, obj in model.paths(holder, _RNGS_KINDS):
            owner = obj.copy_of if obj.kind == kinds.STREAM and obj.copy_of is not None else obj
            by_owner.setdefault(owner, []).append(path)
        for owner, paths in by_owner.items():
            # ties broken by the stores' positions: the related locations are the same in every run
            paths.sort(key=lambda p: (len(p.fields), p.fields, [order_text(node) for node in p.stores]))
            first = paths[0]
            for second in paths[1:]:
                if second.fields[0] != first.fields[0]:
                    # one pair of children once: another instance (made elsewhere, its children
                    # deeper) may name the same two in the other order, which is no second finding
                    pair = frozenset((first.fields[0], second.fields[0]))
                    if pair not in pairs:
                        pairs.add(pair)
                        found.append((first, second, owner))
                    break
    return found


#: What :func:`shared_rngs_paths` looks for.
_RNGS_KINDS = frozenset({kinds.RNGS, kinds.STREAM})
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
    with model.focused_on(expression):
        return _shared_inside(model, expression, wanted)


def _shared_inside(model, expression: nodes.NodeNG, wanted: frozenset[str]) -> SharedInside | None:
    best: SharedInside | None = None
    for root in model.objects(expression):
        if not root.proven or not root.is_tree_node:
            continue
        by_target: dict = {}
        for path, obj in model.paths(root, wanted):
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
    if first.fields[common] == second.fields[common] != "*":
        return None  # one field of one holder, two different values: never both on one run
    certainty, choices = MUST, []
    for path in (first, second):
        holder = path.objects[common - 1] if common else root
        own: list = []
        for attr, reached in zip(path.fields[common:], path.objects[common:]):
            held, choice = model.how_held(holder, attr, reached)
            if held is None:
                return None
            if held == MAY:
                certainty = MAY
                if choice is not None:
                    own.append(choice)
            holder = reached
        if any(_exclusive(mine, theirs) for mine in own for theirs in choices):
            return None  # each path needs the other arm of one choice: never both on one run
        choices.extend(own)
    return SharedInside(first, second, target, root, certainty, tuple(choices))


def _exclusive(first: nodes.NodeNG, second: nodes.NodeNG) -> bool:
    """Whether two choices are arms no single run takes both of: two ``return`` statements of
    one function (one call returns once), or the two arms of the innermost ``if`` statement or
    ``a if c else b`` that holds both."""
    if first is second:
        return False
    if isinstance(first, nodes.Return) and isinstance(second, nodes.Return):
        return first.scope() is second.scope()
    for ancestor in first.node_ancestors():
        if isinstance(ancestor, nodes.If):
            arms = (ancestor.body, ancestor.orelse)
        elif isinstance(ancestor, nodes.IfExp):
            arms = ([ancestor.body], [ancestor.orelse])
        else:
            continue
        mine = next((i for i, arm in enumerate(arms) if _within(first, arm)), None)
        theirs = next((i for i, arm in enumerate(arms) if _within(second, arm)), None)
        if mine is not None and theirs is not None:
            return mine != theirs  # the innermost construct that holds both decides
    return False


def _within(node: nodes.NodeNG, statements: list) -> bool:
    """Whether ``node`` is one of ``statements`` or inside one."""
    return any(node is s or any(a is s for a in node.node_ancestors()) for s in statements)


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
    with model.focused_on(expression):
        for root in model.objects(expression):
            if not root.proven or not root.is_tree_node or root in targets:
                continue
            for path, obj in model.paths(root, lambda o: o in targets):
                return root, path, obj
    return None
