"""The bounded worklist solver of the object-flow model (Andersen-style inclusion constraints).

Summaries (:mod:`nnx_lint.analysis.objects.summary`) are instantiated once per call-site
context (one level: the call that entered the function, and the context the function object
was made in, for closures). Only what is new is pushed (difference propagation). Calls are
resolved on the fly: when a callee variable gains a project function, class, bound method,
transformed callable or partial, its parameter, ``self`` and return edges are added; a class
called is a construction plus a call of its ``__init__`` (found along the bases, in any project
file), and ``super().__init__`` runs the next class's method on the same receiver. Library
calls follow the small models of :mod:`nnx_lint.flax_table.object_relations`.

Contexts (:class:`Context`) are the heap context of what a function instance allocates:
the call that entered it, and, for a method, the receiver object (object sensitivity: an
allocation inside ``__init__`` of object ``O`` is qualified by ``O``, whose own context says
where ``O`` was made), or, for a plain function, the caller's context (call strings). So
``self.block1 = Block(...)`` and ``self.block2 = Block(...)`` make two Blocks, and the Conv each
Block's ``__init__`` makes is two Convs, however deep the hierarchy; a factory called from two
call sites makes two objects; one object passed to two owners stays one.

Bounds: a set past :data:`MAX_SET` stops growing and is marked widened (its answers are
unproven); a function past :data:`MAX_CONTEXTS` contexts (a plain function of another file past
:data:`MAX_FOREIGN_CONTEXTS`; another file's forward pass, a method that stores nothing through
``self``, at once), or a chain past :data:`MAX_DEPTH`, shares one merged context per function,
whose allocations are *summary* objects (they answer
"may alias", never "one object"); a chain past :data:`MAX_FOREIGN_CALLS` calls into other
files is not followed (a solver may start with a lower limit, keep the calls it stops, and
enter them later: :meth:`Solver.deepen`). Steps count against :data:`MAX_STEPS`, and the file's deadline is checked
inside the loop (both end as NNX004, never a hang).
"""
from __future__ import annotations

import operator

from collections import deque

from astroid import nodes

import nnx_lint.analysis.objects.abstract as kinds
from nnx_lint.analysis.objects.abstract import AbstractObject, is_falsy_constant
from nnx_lint.analysis.objects.carries import is_scan
from nnx_lint.analysis.objects.contexts import MERGED, ROOT, Context, context_loops, depth_of, is_rooted, object_loops
from nnx_lint.analysis.objects.library import LibraryModels
from nnx_lint.analysis.objects.loops import loops_around
from nnx_lint.analysis.objects.summary import Alloc, Call, Copy, Load, OrElse, Store, own_scope
from nnx_lint.base import bounds

MAX_SET = 48
#: How many call-site contexts one function gets before later calls share one merged context
#: (16: the flow fixtures stay under it; maxtext's largest files pass it, and past it the solve is
#: still deterministic, see `_ORDER`).
MAX_CONTEXTS = 16
#: How many calls deep a context chain may be before it falls back to the merged context.
MAX_DEPTH = 4
#: The same bound for a plain function of another file (called, not constructed nor bound to an
#: object): a helper every test of a test file calls (maxtext's ``create_device_mesh``,
#: ``train_step``) need not be solved again for each; a method keeps :data:`MAX_CONTEXTS`, one
#: per object, so the instances' trees stay apart.
MAX_FOREIGN_CONTEXTS = 4
#: How many calls into other files' functions a chain may make, in a row, from the linted file's
#: code (a method called on the same object, ``super().__init__`` or ``self.helper()``, is no new
#: call). Past it a call is left unresolved (its result unknown): each file's model then solves the
#: code near it, not every function of the project its calls reach (maxtext's files reached 500
#: functions each, and every file solved them again). Two calls keep a base class's ``__init__`` in
#: another file, the children it builds and the factories it calls.
MAX_FOREIGN_CALLS = 2
MAX_STEPS = 400_000


#: The order objects are added in (:attr:`AbstractObject.order_text`).
_ORDER = operator.attrgetter("order_text")


class Solver:
    """Holds the constraint graph and its fixed point. ``world`` answers questions about
    classes and definitions (:class:`nnx_lint.analysis.objects.model.World`)."""

    def __init__(self, world, max_foreign_calls: int | None = None, follows_calls: bool = True) -> None:
        self.world = world
        #: False: only constructions are followed (the new object, its ``__init__`` and the
        #: ``super().__init__`` chain, and the library's models); any other call's result is
        #: unknown. Fewer constraints, so every table is a subset of the full solve's (up to the
        #: bounds): what the construction solve finds, the full solve finds too.
        self.follows_calls = follows_calls
        #: How many calls into other files a chain follows for now (:meth:`deepen` raises it up
        #: to :data:`MAX_FOREIGN_CALLS`); the calls it stops are kept in ``_deferred``.
        self.max_foreign_calls = MAX_FOREIGN_CALLS if max_foreign_calls is None else max_foreign_calls
        self._deferred: list[tuple] = []
        self.points: dict[tuple, set[AbstractObject]] = {}
        self.widened: set[tuple] = set()
        self._copies: dict[tuple, list[tuple[tuple, bool]]] = {}
        self._loads: dict[tuple, list[tuple[tuple, str]]] = {}
        self._stores: dict[tuple, list[tuple[str, tuple, nodes.NodeNG]]] = {}
        self._calls: dict[tuple, list[tuple]] = {}
        #: var -> handlers ``(callback, extra)`` called for each new object (library models).
        self._watchers: dict[tuple, list] = {}
        #: (object, field) -> [(store node, source variable)]
        self.store_sites: dict[tuple[AbstractObject, str], list[tuple[nodes.NodeNG, tuple]]] = {}
        self.instances: dict[nodes.NodeNG, set] = {}
        self._scopes: dict[int, nodes.NodeNG] = {}
        self._work: deque = deque()
        self.steps = 0
        self.library = LibraryModels(self)
        self._edges: set = set()
        self._or_else: list[tuple] = []
        self._opened: set[tuple] = set()
        self._contexts: dict[tuple, Context] = {}
        self._linted = world.context.module
        self._in_linted_file: dict[int, bool] = {}

    # -- variables -----------------------------------------------------------------------
    def var(self, local: tuple, scope: nodes.NodeNG, context) -> tuple:
        """The concrete variable of a summary's ``local`` in the instance ``(scope, context)``."""
        tag, node = local[0], local[1]
        if tag == "r":
            return ("r", node, context)
        home = self._scopes.get(id(node))
        if home is None:
            home = self._scope_of(node)
        while home is not scope and context is not None:
            context = context.defined_in
            parent = scope.parent
            if parent is None:
                break
            scope = self._scope_of_parent(scope)
        if isinstance(home, nodes.Module):
            context = None
        return (tag, node, context)

    def _scope_of(self, node: nodes.NodeNG) -> nodes.NodeNG:
        found = self._scopes.get(id(node))
        if found is None:
            found = self._scopes[id(node)] = own_scope(node)
        return found

    def _scope_of_parent(self, scope: nodes.NodeNG) -> nodes.NodeNG:
        return self._scope_of(scope) if isinstance(scope, (nodes.FunctionDef, nodes.Lambda)) else scope

    def field(self, obj: AbstractObject, attr: str) -> tuple:
        return ("f", obj, attr)

    # -- adding ---------------------------------------------------------------------------
    def add(self, var: tuple, objects) -> None:
        """``var ⊇ objects``: queue what is new."""
        current = self.points.get(var)
        if current is None:
            current = self.points[var] = set()
        new = [o for o in objects if o not in current]
        if not new or var in self.widened:
            return
        if len(new) > 1:
            # In one order every run (``objects`` is often a set, whose order follows string hashes):
            # which calls get a context of their own, past the bound, must not depend on the run.
            new.sort(key=_ORDER)
        room = MAX_SET - len(current)
        if len(new) > room:
            new = new[:max(room, 0)]
            self.widened.add(var)
        current.update(new)
        if new:
            self._work.append((var, new))

    def copy(self, dst: tuple, src: tuple, truthy: bool = False) -> None:
        key = (dst, src, truthy)
        edges = self._edges
        if key in edges:
            return
        edges.add(key)
        self._copies.setdefault(src, []).append((dst, truthy))
        existing = self.points.get(src)
        if existing:
            self.add(dst, [o for o in existing if not (truthy and is_falsy_constant(o))])

    def load(self, dst: tuple, base: tuple, attr: str) -> None:
        self._loads.setdefault(base, []).append((dst, attr))
        for obj in list(self.points.get(base, ())):
            self._load_one(dst, obj, attr)

    def store(self, base: tuple, attr: str, src: tuple, node: nodes.NodeNG) -> None:
        self._stores.setdefault(base, []).append((attr, src, node))
        for obj in list(self.points.get(base, ())):
            self._store_one(obj, attr, src, node)

    def watch(self, var: tuple, callback) -> None:
        """Call ``callback(obj)`` for every object ``var`` holds, now and later."""
        self._watchers.setdefault(var, []).append(callback)
        for obj in list(self.points.get(var, ())):
            callback(obj)

    def call(self, callee: tuple, invocation: Invocation) -> None:
        self._calls.setdefault(callee, []).append(invocation)
        for obj in list(self.points.get(callee, ())):
            self.apply(obj, invocation)

    def or_else(self, dst: tuple, src: tuple, guard: tuple, truthy: bool) -> None:
        """``guard or src``: ``dst ⊇ src`` once ``guard`` may be false (or stays unknown)."""
        pending = (dst, src, guard, truthy)
        self._or_else.append(pending)

        def check(obj: AbstractObject) -> None:
            if may_be_false(obj):
                self._open(pending)

        self.watch(guard, check)

    def _open(self, pending: tuple) -> None:
        if pending in self._opened:
            return
        self._opened.add(pending)
        dst, src, _guard, truthy = pending
        self.copy(dst, src, truthy)

    def deepen(self) -> None:
        """Follow chains of calls into other files up to :data:`MAX_FOREIGN_CALLS`: enter the calls
        a lower limit stopped, and solve on. The tables only grow, so what was known before
        stays known: a question settled at the lower limit is settled for good."""
        while self.max_foreign_calls < MAX_FOREIGN_CALLS:
            self.max_foreign_calls += 1
            deferred, self._deferred = self._deferred, []
            for function, defined_in, invocation, receiver in deferred:
                self.enter(function, defined_in, invocation, receiver)
            self.solve()

    # -- the fixed point -------------------------------------------------------------------
    def solve(self) -> None:
        """Propagate until nothing is new (bounded; see the module docstring); an ``x or y`` whose
        ``x`` stays unknown then lets ``y`` through, and the propagation resumes."""
        while True:
            self._propagate()
            unknown = [p for p in self._or_else if p not in self._opened and not self.points.get(p[2])]
            if not unknown:
                return
            for pending in unknown:
                self._open(pending)

    def _propagate(self) -> None:
        work, add = self._work, self.add
        copies, loads, stores, calls, watchers = self._copies, self._loads, self._stores, self._calls, self._watchers
        while work:
            var, new = work.popleft()
            self.steps += 1
            if self.steps % 2048 == 0:
                bounds.checkpoint("the object-flow model")
                bounds.check_count(self.steps, MAX_STEPS, "the object-flow model")
            # Each table is copied before it is walked: handling one object may add to it.
            if var in copies:
                for dst, truthy in list(copies[var]):
                    add(dst, [o for o in new if not is_falsy_constant(o)] if truthy else new)
            if var in loads:
                for dst, attr in list(loads[var]):
                    for obj in new:
                        self._load_one(dst, obj, attr)
            if var in stores:
                for attr, src, node in list(stores[var]):
                    for obj in new:
                        self._store_one(obj, attr, src, node)
            if var in calls:
                for invocation in list(calls[var]):
                    for obj in new:
                        self.apply(obj, invocation)
            if var in watchers:
                for callback in list(watchers[var]):
                    for obj in new:
                        callback(obj)

    def _store_one(self, obj: AbstractObject, attr: str, src: tuple, node: nodes.NodeNG) -> None:
        if obj.kind in (kinds.CONSTANT, kinds.FUNCTION, kinds.LIBRARY):
            return
        sites = self.store_sites.setdefault((obj, attr), [])
        if not any(n is node and s == src for n, s in sites):
            sites.append((node, src))
        self.copy(self.field(obj, attr), src)

    def _load_one(self, dst: tuple, obj: AbstractObject, attr: str) -> None:
        kind = obj.kind
        if kind in (kinds.RNGS, kinds.STREAM):
            self.add(dst, [self.library.rngs_attribute(obj, attr)])
            return
        if kind == kinds.CLASS:
            method = self.world.method(obj.definition, attr)
            if method is not None:
                self.add(dst, [self.world.method_object(method, obj, bound_to_class=True)])
            self.copy(dst, self.field(obj, attr))
            return
        if kind in (kinds.CONSTANT, kinds.FUNCTION, kinds.LIBRARY, kinds.TRANSFORMED, kinds.PARTIAL, kinds.BOUND):
            return
        if attr.startswith("[") and obj.class_name not in ("tuple", "tuple-arguments"):
            self.copy(dst, self.field(obj, "*"))
        elif attr.startswith("'") and obj.class_name not in ("dict", "dict-arguments"):
            self.copy(dst, self.field(obj, "*"))
        self.copy(dst, self.field(obj, attr))
        if isinstance(obj.definition, nodes.ClassDef):
            method = self.world.method(obj.definition, attr)
            if method is not None:
                if self.world.is_property(method):
                    if self.follows_calls:
                        self.enter(method, None, Invocation(method, obj.context, (), (), dst=dst), receiver=obj)
                else:
                    self.add(dst, [self.world.method_object(method, obj)])

    # -- calls ---------------------------------------------------------------------------
    def apply(self, obj: AbstractObject, invocation: Invocation) -> None:
        """Resolve one call of ``obj``."""
        kind = obj.kind
        if not self.follows_calls and kind not in (kinds.CLASS, kinds.LIBRARY):
            return
        if kind == kinds.FUNCTION:
            self.enter(obj.definition, obj.context, invocation)
        elif kind == kinds.BOUND:
            self.enter(obj.definition, None, invocation, receiver=obj.target)
        elif kind == kinds.CLASS:
            self.construct(obj.definition, invocation)
        elif kind in (kinds.MODULE, kinds.PLAIN, kinds.DATACLASS, kinds.OUTSIDE) \
                and isinstance(obj.definition, nodes.ClassDef):
            method = self.world.method(obj.definition, "__call__")
            if method is not None:
                self.enter(method, None, invocation, receiver=obj)
        elif kind == kinds.TRANSFORMED:
            if obj.target is None:
                self.library.wrap(obj.class_name, invocation)
            elif is_scan(obj):
                self.library.carries.scan(obj, invocation)
            else:
                self.apply(obj.target, invocation)
        elif kind == kinds.PARTIAL and obj.target is not None:
            prepended = tuple(self.field(obj, f"[{i}]") for i in range(obj.prepended))
            # the partial's keywords come after the call's: a keyword given at the call overrides them
            keywords = tuple((k.arg, self.field(obj, repr(k.arg))) for k in obj.site.keywords or () if k.arg)
            self.apply(obj.target, invocation.prepend(prepended, keywords))
        elif kind == kinds.LIBRARY:
            self.library.call(obj, invocation)

    def enter(self, function: nodes.NodeNG, defined_in, invocation: Invocation,
              receiver: AbstractObject | None = None) -> None:
        """Call a project function: bind the arguments, and the result to its return (a call too
        far into other files, :data:`MAX_FOREIGN_CALLS`, is left unresolved)."""
        foreign = self._foreign_calls(function, invocation, receiver)
        if foreign > self.max_foreign_calls:
            if foreign <= MAX_FOREIGN_CALLS:
                self._deferred.append((function, defined_in, invocation, receiver))
            return
        context = self.context_for(function, invocation, defined_in, receiver, foreign)
        summary = self.instantiate(function, context)
        if summary is None:
            return
        parameters = list(summary.parameters)
        plain = [p for p in parameters if p.kind == "plain"]
        positional = [p for p in plain if p.position is not None]
        bound: set[str] = set()
        if receiver is not None and positional and not self.world.is_static(function):
            first = positional.pop(0)
            self.add(self.var(first.binding, function, context), [receiver])
            bound.add(first.name)
        star = next((p for p in parameters if p.kind == "star"), None)
        double_star = next((p for p in parameters if p.kind == "double-star"), None)
        for index, argument in enumerate(invocation.args):
            if index < len(positional):
                self.copy(self.var(positional[index].binding, function, context), argument)
                bound.add(positional[index].name)
            elif star is not None:
                holder = self._arguments_object(invocation, context, "tuple")
                self.add(self.var(star.binding, function, context), [holder])
                self.copy(self.field(holder, f"[{index - len(positional)}]"), argument)
                self.copy(self.field(holder, "*"), argument)
        by_name = {p.name: p for p in plain}
        for name, argument in invocation.keywords:
            if name in by_name and name not in bound:
                self.copy(self.var(by_name[name].binding, function, context), argument)
                bound.add(name)
            elif double_star is not None:
                holder = self._arguments_object(invocation, context, "dict")
                self.add(self.var(double_star.binding, function, context), [holder])
                self.copy(self.field(holder, repr(name)), argument)
                self.copy(self.field(holder, "*"), argument)
        spread: set[str] = set()  # may come from `*args` / `**kwargs`: either may fill it
        if invocation.star is not None:
            for parameter in positional[len(invocation.args):]:
                if parameter.name not in bound:
                    self.load(self.var(parameter.binding, function, context), invocation.star, "*")
                    spread.add(parameter.name)
            if star is not None:
                self.copy(self.var(star.binding, function, context), invocation.star)
        if invocation.double_star is not None:
            for parameter in plain:
                if parameter.name not in bound:
                    self.load(self.var(parameter.binding, function, context), invocation.double_star,
                              repr(parameter.name))
                    spread.add(parameter.name)
            if double_star is not None:
                self.copy(self.var(double_star.binding, function, context), invocation.double_star)
        for parameter in plain:
            if parameter.name not in bound | spread and parameter.default is not None:
                self.copy(self.var(parameter.binding, function, context), self.var(parameter.default, function, context))
        if invocation.dst is not None:
            self.copy(invocation.dst, ("r", function, context))

    def _arguments_object(self, invocation: Invocation, context, kind: str) -> AbstractObject:
        return AbstractObject(kinds.CONTAINER, invocation.node, context, class_name=f"{kind}-arguments")

    def construct(self, classdef: nodes.ClassDef, invocation: Invocation) -> None:
        """``Cls(...)``: a new instance at the call, then ``__init__`` on it (or dataclass fields)."""
        instance = self.world.instance(classdef, invocation.node, invocation.context)
        if invocation.dst is not None:
            self.add(invocation.dst, [instance])
        init = self.world.method(classdef, "__init__")
        if init is not None:
            self.enter(init, None, invocation.without_result(), receiver=instance)
            return
        fields = self.world.dataclass_fields(classdef)
        for name, argument in zip(fields, invocation.args):
            self.store_value(instance, name, argument, invocation.node)
        for name, argument in invocation.keywords:
            if name in fields:
                self.store_value(instance, name, argument, invocation.node)

    def store_value(self, obj: AbstractObject, attr: str, src: tuple, node: nodes.NodeNG) -> None:
        """``obj.attr ⊇ src`` (a library model's or a dataclass constructor's store)."""
        self._store_one(obj, attr, src, node)

    def _foreign_calls(self, function: nodes.NodeNG, invocation: Invocation, receiver) -> int:
        """The calls into other files' functions, in a row, that entering ``function`` makes."""
        home = self._in_linted_file.get(id(function))
        if home is None:
            home = self._in_linted_file[id(function)] = function.root() is self._linted
        if home:
            return 0
        caller = invocation.context
        before = caller.foreign if isinstance(caller, Context) else 0
        same_object = receiver is not None and isinstance(caller, Context) and caller.caller is receiver
        return before if same_object else before + 1

    def context_for(self, function: nodes.NodeNG, invocation: Invocation, defined_in,
                    receiver: AbstractObject | None = None, foreign: int = 0):
        """The context of ``function`` entered by ``invocation``: the call site, the context the
        function was made in, and the receiver object (methods) or the caller's context (plain
        functions), so that two instances' ``__init__`` do not mix their stores or their
        allocations. Whether the caller is an entry analysed with no caller is kept too (its
        outside objects stay apart from what real calls pass). A function past its bound
        (:data:`MAX_CONTEXTS`, :data:`MAX_FOREIGN_CONTEXTS`), another file's forward pass, or a
        chain past :data:`MAX_DEPTH`, shares one merged context."""
        caller = invocation.context
        rooted = is_rooted(caller)
        if receiver is not None:
            chain, outer = receiver, object_loops(receiver)
        else:
            chain, outer = caller, context_loops(caller)
        depth = 1 + max(depth_of(caller), depth_of(receiver.context) if receiver is not None else 0)
        loops = None if outer is None else outer | loops_around(invocation.node)
        merged = self.context(MERGED, defined_in, None, rooted, None, 0, foreign)
        if depth > MAX_DEPTH:
            return merged
        if foreign and receiver is not None and not self.world.fills_instances(function):
            # another file's forward pass (a method that stores nothing through ``self``): one
            # merged context for all its instances. It fills no field, so no instance's tree
            # mixes with another's; it only runs each sub-layer's forward pass again
            return merged
        known = self.instances.get(function)
        context = self._contexts.get((invocation.node, defined_in, chain, rooted))
        if known is not None and (context is None or context not in known) \
                and len(known) >= (MAX_FOREIGN_CONTEXTS if foreign and receiver is None else MAX_CONTEXTS):
            return merged
        return self.context(invocation.node, defined_in, chain, rooted, loops, depth, foreign)

    def context(self, site, defined_in, caller, rooted: bool, loops, depth: int, foreign: int = 0) -> Context:
        """The one :class:`Context` of these parts (``foreign``: kept from its first making)."""
        key = (site, defined_in, caller, rooted)
        found = self._contexts.get(key)
        if found is None:
            found = self._contexts[key] = Context(site, defined_in, caller, rooted, loops, depth, foreign)
        return found

    def root_context(self, parent) -> Context:
        """The context of a function analysed as an entry, with no caller."""
        return self.context(ROOT, parent, None, True, frozenset(), 0)

    def instantiate(self, scope: nodes.NodeNG, context):
        """Add the constraints of ``scope``'s summary in ``context`` (once per pair)."""
        summary = self.world.summary(scope)
        if summary is None:
            return None
        known = self.instances.setdefault(scope, set())
        if context in known:
            return summary
        known.add(context)
        var = self.var
        for constraint in summary.constraints:
            if isinstance(constraint, Copy):
                self.copy(var(constraint.dst, scope, context), var(constraint.src, scope, context), constraint.truthy)
            elif isinstance(constraint, Load):
                self.load(var(constraint.dst, scope, context), var(constraint.base, scope, context), constraint.attr)
            elif isinstance(constraint, Store):
                self.store(var(constraint.base, scope, context), constraint.attr, var(constraint.src, scope, context),
                           constraint.node)
            elif isinstance(constraint, Alloc):
                obj = self.world.allocate(constraint, context)
                if obj is not None:
                    self.add(var(constraint.dst, scope, context), [obj])
            elif isinstance(constraint, Call):
                self._instantiate_call(constraint, scope, context)
            elif isinstance(constraint, OrElse):
                self.or_else(var(constraint.dst, scope, context), var(constraint.src, scope, context),
                             var(constraint.guard, scope, context), constraint.truthy)
        if context is not None and context.site == ROOT:
            self._outside_parameters(scope, summary, context)
        return summary

    def _instantiate_call(self, call: Call, scope, context) -> None:
        var = self.var
        invocation = Invocation(
            call.node, context,
            tuple(var(a, scope, context) for a in call.args),
            tuple((k, var(v, scope, context)) for k, v in call.keywords),
            var(call.star, scope, context) if call.star is not None else None,
            var(call.double_star, scope, context) if call.double_star is not None else None,
            dst=var(call.dst, scope, context),
        )
        if call.super_of is not None:
            method_name = call.node.func.attrname
            method = self.world.method_after(call.super_of, method_name)
            if method is not None and (self.follows_calls or method_name == "__init__"):
                receiver = var(call.receiver, scope, context)
                self.watch(receiver, lambda obj: self.enter(method, None, invocation, receiver=obj))
            return
        self.call(var(call.func, scope, context), invocation)

    def _outside_parameters(self, scope, summary, context) -> None:
        """A function analysed with no caller: each parameter is an outside object (of its
        annotated class, or unknown), or, for a method's first parameter, the class's outside self."""
        for index, parameter in enumerate(summary.parameters):
            target = self.var(parameter.binding, scope, context)
            if index == 0 and parameter.kind == "plain" and self.world.is_method(scope):
                self.add(target, [self.world.outside_self(scope)])
            else:
                self.add(target, [self.world.outside_parameter(parameter, scope)])
            if parameter.default is not None:
                self.copy(target, self.var(parameter.default, scope, context))


class Invocation:
    """One call as the solver sees it: concrete argument variables and the result's variable."""

    __slots__ = ("node", "context", "args", "keywords", "star", "double_star", "dst")

    def __init__(self, node, context, args, keywords, star=None, double_star=None, dst=None) -> None:
        self.node, self.context, self.args, self.keywords = node, context, args, keywords
        self.star, self.double_star, self.dst = star, double_star, dst

    def prepend(self, args: tuple, keywords: tuple = ()) -> Invocation:
        return Invocation(self.node, self.context, args + self.args, self.keywords + keywords, self.star,
                          self.double_star, self.dst)

    def without_result(self) -> Invocation:
        return Invocation(self.node, self.context, self.args, self.keywords, self.star, self.double_star, None)

    def argument(self, position: int | None, keyword: str | None) -> tuple | None:
        """The variable passed at ``position`` or as ``keyword``, if any."""
        for name, value in self.keywords:
            if name == keyword:
                return value
        if position is not None and 0 <= position < len(self.args):
            return self.args[position]
        return None


#: Objects that are always true: Python's default truth for instances without ``__bool__`` /
#: ``__len__`` (Modules, Rngs, optimizers, functions). Containers, plain objects, constants and
#: unknown values may be false.
_ALWAYS_TRUE = frozenset({kinds.MODULE, kinds.RNGS, kinds.STREAM, kinds.OPTIMIZER, kinds.FUNCTION, kinds.CLASS,
                          kinds.BOUND, kinds.TRANSFORMED, kinds.PARTIAL})


def may_be_false(obj: AbstractObject) -> bool:
    """Whether ``obj`` may be false in ``obj or ...``."""
    if obj.kind == kinds.CONSTANT:
        return not obj.definition
    return obj.kind not in _ALWAYS_TRUE
