"""Loop carries in the object-flow model, and the question they answer: which reads after a loop
still hold the carry from before it.

``nnx.fori_loop(lo, hi, body, init)``, ``nnx.while_loop(cond, body, init)``, a function
transformed by ``nnx.scan`` and their ``jax.lax`` twins run the body on the carry's objects (the
body's parameters hold them, so its stores land on them). What the loop returns is, in Tree
Mode, a fresh pytree: each carried Module, container or optimizer comes back as a new object
linked ``copy_of`` to the input one, while Variables come back as themselves (flax writes their
values back). A tuple or list carry comes back as a fresh container of fresh elements. In graph
mode (``nnx.compat.*``) the loop returns its input objects.

:func:`stale_carry_reads` is what a rule asks: a loop whose body stores a non-Variable attribute
on an object of the carry's tree (that store reaches only the fresh copy in Tree Mode, while graph
mode made it on the input), and a read after the loop of an expression that holds one of those
input objects (or an owner of one) and none of the fresh copies.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from astroid import nodes

import nnx_lint.analysis.objects.abstract as kinds
from nnx_lint.analysis.objects.abstract import AbstractObject
from nnx_lint.analysis.objects.summary import own_scope
from nnx_lint.base.node_index import nodes_of_class
from nnx_lint.flax_table import object_relations as relations

if TYPE_CHECKING:
    from nnx_lint.analysis.objects.model import ObjectModel
    from nnx_lint.analysis.objects.solver import Invocation, Solver

#: Kinds that a loop returns as fresh objects in Tree Mode (pytree nodes; an unknown value is
#: taken for one). Variables, constants, functions and library values come back as themselves.
_FRESH_KINDS = frozenset({kinds.MODULE, kinds.DATACLASS, kinds.CONTAINER, kinds.OPTIMIZER, kinds.RNGS,
                          kinds.OUTSIDE})
#: How many leading positions of a tuple carry keep their own fields in the copy.
_INDEXED = 8
#: How many functions deep :func:`traced_scopes` follows calls from a loop body.
_MAX_TRACED = 64


@dataclass(eq=False)
class LoopRecord:
    """One loop call the model saw: where, which loop, the carry and result variables, and the
    fresh copies the result holds."""

    node: nodes.NodeNG
    context: object
    name: str
    #: The call that makes the transform (``nnx.scan(...)``) or the loop call itself.
    transform_site: nodes.NodeNG | None
    carry: tuple | None
    result: tuple | None
    copies: set[AbstractObject] = field(default_factory=set)


class LoopCarries:
    """The loop models of one solver (held by its :class:`~nnx_lint.analysis.objects.library.LibraryModels`)."""

    def __init__(self, solver: Solver) -> None:
        self.solver = solver
        self.records: list[LoopRecord] = []
        self._made: dict[tuple, AbstractObject] = {}
        self._seen: set[tuple] = set()

    def _first(self, invocation: Invocation, transformed: AbstractObject | None = None) -> bool:
        """Whether this is the first time the loop call is resolved in its context (a callee
        may hold the loop function more than once)."""
        key = (id(invocation.node), invocation.context, transformed)
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    def loop(self, name: str, invocation: Invocation) -> None:
        """``fori_loop`` / ``while_loop``: call the body on the carry; the result is the carry's
        fresh copy (Tree Mode), or the carry itself for a ``compat`` loop (graph mode)."""
        solver = self.solver
        if name in relations.LOOP_CARRIES:
            body_position, carry_position = relations.LOOP_CARRIES[name]
        else:
            body_position, carry_position = relations.GRAPH_LOOP_CARRIES[name]
        body = invocation.argument(body_position, "body_fun")
        carry = invocation.argument(carry_position, "init_val")
        if body is None or carry is None or not self._first(invocation):
            return
        index = ("loop-index", invocation.node, invocation.context)
        scan = name.endswith(".scan")
        arguments = (index, carry) if "fori" in name else (carry, index) if scan else (carry,)
        # a scan returns what its body returns; the other loops, the carry
        returned = ("scan-result", invocation.node, invocation.context) if scan else None
        solver.call(body, type(invocation)(invocation.node, invocation.context, arguments, (), dst=returned))
        record = LoopRecord(invocation.node, invocation.context, name, invocation.node, None if scan else carry,
                            invocation.dst)
        self.records.append(record)
        if invocation.dst is None:
            return
        if name in relations.GRAPH_LOOP_CARRIES:
            solver.copy(invocation.dst, carry)
            return
        solver.watch(returned or carry, lambda obj: self._returned(record, obj))

    def scan(self, transformed: AbstractObject, invocation: Invocation) -> None:
        """A call of ``nnx.scan(f, ...)``: ``f`` runs on the arguments; in Tree Mode every pytree
        node of what it returns comes back as a fresh copy (the carry among them)."""
        solver = self.solver
        if not self._first(invocation, transformed):
            return
        through = ("scan-result", invocation.node, invocation.context)
        solver.apply(transformed.target, type(invocation)(
            invocation.node, invocation.context, invocation.args, invocation.keywords, invocation.star,
            invocation.double_star, through))
        record = LoopRecord(invocation.node, invocation.context, transformed.class_name or "",
                            transformed.site, None, invocation.dst)
        self.records.append(record)
        if invocation.dst is not None:
            solver.watch(through, lambda obj: self._returned(record, obj))

    def _returned(self, record: LoopRecord, obj: AbstractObject) -> None:
        made = self.fresh(obj, record.node, record.context)
        if made is not obj:
            record.copies.add(made)
        self.solver.add(record.result, [made])

    def fresh(self, obj: AbstractObject, node, context) -> AbstractObject:
        """The fresh copy of ``obj`` a loop at ``node`` returns (``obj`` itself when it is not a
        pytree node); a container's copy holds fresh copies of its elements."""
        if obj.kind not in _FRESH_KINDS or (obj.copy_of is not None and obj.site is node and obj.context == context):
            return obj  # not a pytree node, or this loop's own copy coming round again
        key = (obj, id(node), context)
        made = self._made.get(key)
        if made is not None:
            return made
        indexed = obj.kind == kinds.CONTAINER and obj.class_name == "tuple"
        # a keyed container's copy answers keyed loads from its "*" summary
        class_name = obj.class_name if indexed or obj.kind != kinds.CONTAINER else f"{obj.class_name}-carry"
        made = self._made[key] = AbstractObject(obj.kind, node, context, class_name=class_name,
                                                definition=obj.definition, proven=obj.proven, copy_of=obj)
        if obj.kind == kinds.CONTAINER:
            solver = self.solver
            fields = ["*"] + ([f"[{i}]" for i in range(_INDEXED)] if indexed else [])
            for attr in fields:
                solver.watch(solver.field(obj, attr), lambda element, attr=attr: solver.add(
                    solver.field(made, attr), [self.fresh(element, node, context)]))
        return made


def is_scan(transformed: AbstractObject) -> bool:
    """Whether calling ``transformed`` runs a scan (``nnx.scan(f, ...)``, not its ``compat`` spelling)."""
    return transformed.kind == kinds.TRANSFORMED and transformed.target is not None \
        and transformed.class_name in relations.SCAN_CARRIES


# -- the question a rule asks ----------------------------------------------------------------------

@dataclass(frozen=True)
class StaleRead:
    """A read after ``loop`` of ``expression``, which holds ``stale`` (an input object of the carry,
    or an owner of one) and none of the loop's fresh copies; ``write`` is a body store the fresh
    copy alone receives in Tree Mode, of ``attribute``."""

    loop: LoopRecord
    expression: nodes.NodeNG
    stale: AbstractObject
    write: nodes.NodeNG
    attribute: str
    #: The object the body writes on (``stale`` itself or a part of it).
    holder: AbstractObject

    @property
    def proven(self) -> bool:
        """Whether the written object's class is known (else the attribute may be a Variable the
        class declares, whose value flax writes back in both modes)."""
        return self.holder.proven or self.holder.definition is not None


def traced_scopes(model: ObjectModel, loop: LoopRecord) -> set[nodes.NodeNG]:
    """The functions the loop's body runs: those the model entered from the loop's call, and
    those entered from calls inside them (bounded)."""
    instances = model.solver.instances
    callers: dict[int, list[nodes.NodeNG]] = {}
    for function, contexts in instances.items():
        if isinstance(function, nodes.Module):
            continue
        for context in contexts:
            # A call-site context (the solver's ``Context``) names the call that entered the function.
            site = getattr(context, "site", None) if not isinstance(context, tuple) else context[0]
            if isinstance(site, nodes.NodeNG):
                callers.setdefault(id(site), []).append(function)
    traced: set[nodes.NodeNG] = set()
    queue = deque(callers.get(id(loop.node), ()))
    while queue and len(traced) < _MAX_TRACED:
        function = queue.popleft()
        if function in traced:
            continue
        traced.add(function)
        for call in nodes_of_class(function, nodes.Call):
            if own_scope(call) is function:
                queue.extend(callers.get(id(call), ()))
    return traced


def _carry_objects(model: ObjectModel, loop: LoopRecord) -> set[AbstractObject]:
    if loop.carry is not None:
        return set(model.solver.points.get(loop.carry, ()))
    found: set[AbstractObject] = set()
    for copy in loop.copies:  # a scan: what its body returned, copied
        if copy.copy_of is not None:
            found.add(copy.copy_of)
    return found


def _written(model: ObjectModel, roots: set[AbstractObject], traced: set[nodes.NodeNG]):
    """``{holder: (store node, attribute)}``: the objects of the carry's tree the traced body
    stores a non-Variable attribute on, and ``{object: owners}`` for the tree's links."""
    owners: dict[AbstractObject, set[AbstractObject]] = {root: set() for root in roots}
    queue = deque(roots)
    while queue and len(owners) < 256:
        holder = queue.popleft()
        if not holder.is_tree_node:
            continue
        for attr in model.field_names(holder):
            for target in model.fields(holder, attr):
                if target.kind not in _FRESH_KINDS:
                    continue
                if target not in owners:
                    owners[target] = set()
                    queue.append(target)
                owners[target].add(holder)
    holders: dict[AbstractObject, tuple[nodes.NodeNG, str]] = {}
    for (holder, attr), sites in model.solver.store_sites.items():
        if holder not in owners or holder.kind == kinds.CONTAINER or attr == "*" or holder in holders:
            continue
        for node, source in sites:
            if own_scope(node) not in traced:
                continue
            values = model.solver.points.get(source, set())
            if values and all(v.kind == kinds.VARIABLE for v in values):
                continue  # a Variable stored: its value is written back in both modes
            holders[holder] = (node, attr)
            break
    return holders, owners


def _stale_objects(holders, owners) -> dict[AbstractObject, AbstractObject]:
    """``{object: written holder}``: each written holder and every owner above it in the carry's tree."""
    stale: dict[AbstractObject, AbstractObject] = {}
    for holder in holders:
        queue = deque([holder])
        while queue:
            current = queue.popleft()
            if current in stale:
                continue
            stale[current] = holder
            queue.extend(owners.get(current, ()))
    return stale


def _reads_after(loop: LoopRecord):
    """The loads of the loop's own function that come after the loop call, in source order."""
    scope = own_scope(loop.node)
    statement = loop.node.statement()
    end = statement.end_lineno or statement.lineno
    for node in nodes_of_class(scope, (nodes.Name, nodes.Attribute)):
        if (node.lineno or 0) > end and own_scope(node) is scope:
            yield node


def stale_carry_reads(model: ObjectModel, loop: LoopRecord) -> list[StaleRead]:
    """The reads after ``loop`` that hold an input object of its carry whose body update, in Tree
    Mode, reaches only the loop's fresh copy (see the module docstring). One per stale object,
    the first read of it."""
    roots = _carry_objects(model, loop)
    if not roots:
        return []
    holders, owners = _written(model, roots, traced_scopes(model, loop))
    if not holders:
        return []
    stale = _stale_objects(holders, owners)
    found: list[StaleRead] = []
    seen: set[AbstractObject] = set()
    for read in _reads_after(loop):
        held = model.objects(read)
        if not held or held & loop.copies or any(o.copy_of is not None and o.copy_of in stale for o in held):
            continue  # the loop's result (or, through another path, a copy of the stale object)
        hits = [o for o in held if o in stale and o not in seen]
        if not hits:
            continue
        target = hits[0]
        seen.update(hits)
        holder = stale[target]
        write, attribute = holders[holder]
        found.append(StaleRead(loop, read, target, write, attribute, holder))
    return found


def loop_records(model: ObjectModel) -> list[LoopRecord]:
    """Every loop call the file's model saw, in the order it met them."""
    return list(model.solver.library.carries.records)
