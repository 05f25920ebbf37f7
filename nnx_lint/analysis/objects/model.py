"""The object-flow model of one linted file, and the queries rules ask it.

Built once per file on first use (``context.objects``, or :func:`object_model`), on demand:

* the module's body is instantiated at once;
* a question about one class (:meth:`ObjectModel.focused_on`: what its instances hold, whether
  a path of theirs is ever built) or about one expression (:meth:`ObjectModel.objects`)
  instantiates, as entries with no caller, only the code that can reach it: the class's methods
  (or the expression's function), the functions of the file that name the class (or call the
  function), and so on up the chain (:meth:`ObjectModel._scopes_reaching`);
* any other question instantiates every function, method and lambda of the module as an entry.

Calls pull in what they reach, in this file or any project file (read through the project, so
the result cache records them as dependencies). Chains of calls into other files first stop
after :data:`SHALLOW_FOREIGN_CALLS`, which the path guards may settle on; any other question
deepens the solve to the solver's own limit. The solver runs to its bounded fixed point, and
runs on from there when more entries or deeper calls are asked for (the tables only grow). On
maxtext's 2,000-line model files, whose classes each build a different tree of layers, the
whole-file solve of every file that asked about one class was most of the run.
"""
from __future__ import annotations

from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field

from astroid import nodes

from nnx_lint.analysis.flow import inside
import nnx_lint.analysis.objects.abstract as kinds
from nnx_lint.analysis.objects.abstract import AbstractObject
from nnx_lint.analysis.objects.choices import Choices
from nnx_lint.analysis.objects.contexts import is_rooted, object_loops
from nnx_lint.analysis.objects.field_reads import fills_instances
from nnx_lint.analysis.objects.solver import Solver
from nnx_lint.analysis.objects.summary import own_scope, starts_at_import
from nnx_lint.analysis.objects.world import World
from nnx_lint.base.node_index import nodes_of_class

#: How deep :meth:`ObjectModel.paths` walks fields.
MAX_PATH = 6
#: How many calls into other files, in a row, the model follows before a question needs more
#: (``ObjectModel.focused_on(..., deep=False)``): the file's code, its base classes' methods, and
#: the ``__init__`` (or function) each of its calls into another file runs, but nothing those
#: call in turn (the layers of the layers). Any other question deepens the solve to the
#: solver's ``MAX_FOREIGN_CALLS``.
SHALLOW_FOREIGN_CALLS = 1
#: The values that carry no identity worth tracking across objects.
_VALUES = frozenset({kinds.CONSTANT, kinds.FUNCTION, kinds.CLASS, kinds.LIBRARY})
#: What :meth:`ObjectModel.holds` finds: the objects that are NNX state.
_STATE_KINDS = frozenset({kinds.RNGS, kinds.STREAM, kinds.VARIABLE})


@dataclass(frozen=True)
class Path:
    """One way to reach an object from a root: the fields in order, the stores that made each
    step, and the objects each step reaches (the last is the object reached)."""

    fields: tuple[str, ...]
    stores: tuple[nodes.NodeNG, ...]
    objects: tuple[AbstractObject, ...] = field(default=(), compare=False)

    def text(self) -> str:
        """``.block.rngs`` / ``[0].rngs``."""
        return "".join(f if f.startswith("[") else f".{f}" for f in self.fields)


def object_model(context) -> ObjectModel:
    """The (memoised) :class:`ObjectModel` of the file being linted."""
    return context.service(ObjectModel)


class ObjectModel:
    """Where each value was made, what holds it and where it goes (see the module docstring)."""

    def __init__(self, context, *, follows_calls: bool = True) -> None:
        self.context = context
        self.world = World(context)
        self._solver = Solver(self.world, SHALLOW_FOREIGN_CALLS, follows_calls)
        # A construction model (:meth:`constructions_of`) never deepens nor enters the whole
        # file: it answers about the entries it was given, and only settles what it can.
        self._deep = not follows_calls
        self._solver.instantiate(context.module, None)
        self._solver.solve()
        #: The module's functions, methods and lambdas in file order (the entries).
        self._scopes = list(nodes_of_class(context.module, (nodes.FunctionDef, nodes.Lambda)))
        self._entered: set[nodes.NodeNG] = set()
        self._whole = not follows_calls
        self._users: dict[str, list[nodes.NodeNG]] | None = None
        self._constructions: dict[nodes.ClassDef, ObjectModel | None] = {}
        self._reads: dict[str, list[nodes.NodeNG]] | None = None
        self._fillers: dict[nodes.ClassDef, list[nodes.NodeNG]] = {}
        self._focus = 0  # inside `focused_on`: queries do not ask for the whole file
        self._clear_indexes()

    def _clear_indexes(self) -> None:
        """Forget what was built from the solve's tables (they grew)."""
        self._holders: dict[AbstractObject, list[str]] | None = None
        self._instances: dict[int, dict[AbstractObject, None]] | None = None
        self._choices: Choices | None = None
        #: :meth:`paths`'s indexes: each holder's steps, and the holders that reach some kinds.
        self._steps: dict[AbstractObject, list[tuple[str, list]]] = {}
        self._useful: dict[tuple, set[AbstractObject]] = {}

    @property
    def solver(self) -> Solver:
        """The solver, with every entry of the file solved (unless inside :meth:`focused_on`)."""
        self._ready()
        return self._solver

    def _ready(self) -> None:
        if self._focus:
            return
        self._deepen()
        if not self._whole:
            self._whole = True
            self._enter(self._scopes)

    def _deepen(self) -> None:
        if not self._deep:
            self._deep = True
            self._solver.deepen()
            self._clear_indexes()

    def _enter(self, scopes) -> None:
        """Instantiate ``scopes`` (those not yet entered, in file order) as entries, and solve on."""
        new = [scope for scope in scopes if scope not in self._entered]
        if not new:
            return
        for scope in new:
            self._entered.add(scope)
            self._solver.instantiate(scope, self._root_context(scope))
        self._solver.solve()
        self._clear_indexes()

    @contextmanager
    def focused_on(self, *targets: nodes.NodeNG, deep: bool = True):
        """Within this block, queries are about ``targets``: the instances of a class, or the
        values of the function a node is in. Only the code that can reach them is entered (see
        :meth:`_scopes_reaching`; plus whatever the file's earlier questions entered). The
        answers about them are the whole file's, but for flows that reach it only through
        a function that never names the class or function involved.

        ``deep=False``: chains of calls into other files stop after :data:`SHALLOW_FOREIGN_CALLS`
        (unless an earlier question went deeper): a class of the file that builds a layer of
        another file sees that layer's own stores, not the layers it builds in turn. What is
        known then stays known when the solve goes deeper (the tables only grow), so a guard
        that finds its answer settled there (:mod:`nnx_lint.analysis.objects.guards`) need not
        solve the whole tree (maxtext's decoder builds every model family's layers)."""
        if not self._whole:
            wanted = {scope for target in targets for scope in self._scopes_reaching(target)}
            self._enter([scope for scope in self._scopes if scope in wanted])
        if deep:
            self._deepen()
        self._focus += 1
        try:
            yield self
        finally:
            self._focus -= 1

    def constructions_of(self, classdef: nodes.ClassDef) -> ObjectModel | None:
        """A model of the file in which only constructions are followed (each new object, its
        ``__init__`` and the library's models, through at most :data:`SHALLOW_FOREIGN_CALLS`
        calls into other files; :attr:`Solver.follows_calls`), with ``classdef``'s methods
        entered: what those methods build and store, without the helpers, factories and layer
        trees the rest of the file reaches. Its tables are a subset of those of any solve
        that enters the class's methods, so a guard may settle on it what the fuller solves
        would find too (:mod:`nnx_lint.analysis.objects.guards`), at a fraction of their cost
        (maxtext's decoder: which layer ``self.hc_head`` is, without building every model
        family's layers through the factories ``__init__`` calls).

        None when code of this file outside the class may make an instance of it: the fuller
        solves then walk from those instances, which this model does not make."""
        if classdef not in self._constructions:
            narrow = None
            if not self._made_by_this_file(classdef):
                narrow = ObjectModel(self.context, follows_calls=False)
                narrow._enter(list(nodes_of_class(classdef, (nodes.FunctionDef, nodes.Lambda))))
            self._constructions[classdef] = narrow
        return self._constructions[classdef]

    def _made_by_this_file(self, classdef: nodes.ClassDef) -> bool:
        """Whether code of this file outside ``classdef`` may make an instance of it: it reads
        the class's name other than as an argument handed to an imported function
        (``nnx_wrappers.to_linen(NNXDecoder, ...)``, whose instances only other files' code
        makes: the one case the shallow guards already leave out, see
        :func:`~nnx_lint.analysis.objects.guards._tree_nodes_at_every_step`)."""
        for node in self._name_reads().get(classdef.name, ()):
            if inside(node, classdef):
                continue
            call = node.parent.parent if isinstance(node.parent, nodes.Keyword) else node.parent
            if not (isinstance(call, nodes.Call) and node is not call.func and starts_at_import(call.func)):
                return True
        return False

    def _name_reads(self) -> dict[str, list[nodes.NodeNG]]:
        """Each name the module reads (a ``Name`` or an attribute), and where."""
        if self._reads is None:
            self._reads = {}
            for node in nodes_of_class(self.context.module, (nodes.Name, nodes.Attribute)):
                self._reads.setdefault(node.name if isinstance(node, nodes.Name) else node.attrname, []).append(node)
        return self._reads

    def _scopes_reaching(self, target: nodes.NodeNG) -> list[nodes.NodeNG]:
        """The entries a question about ``target`` needs, in file order: the functions inside a
        class (or the function a node is in), every function that names that class (or calls
        that function), and so on up the chain: the functions that name the class or the
        module-level function those are in (``Attention`` builds the ``Compressor`` that builds
        the ``Indexer``, and hands it what it built), each class with the methods that fill its
        instances (:meth:`_filling_scopes`; all its methods for a question about an expression),
        with the functions around each (a closure's variables are its enclosing function's)."""
        users = self._name_users()
        class_question = isinstance(target, nodes.ClassDef)
        wanted: set[nodes.NodeNG] = set()
        names, seen = [], set()

        def want(scope) -> None:
            while not isinstance(scope, nodes.Module) and scope not in wanted:
                wanted.add(scope)
                outer = scope.parent.frame() if scope.parent is not None else None
                if isinstance(outer, nodes.ClassDef):
                    # the methods that fill its instances' fields, together; a method's callers
                    # within the class read its name (``self.helper(x)``), and come with it below
                    wanted.update(self._filling_scopes(outer))
                    if isinstance(scope, nodes.FunctionDef) and scope.name not in seen:
                        seen.add(scope.name)
                        names.append(scope.name)
                # the name its callers use: its class's, or a module-level function's own
                name = outer.name if isinstance(outer, nodes.ClassDef) else \
                    scope.name if isinstance(scope, nodes.FunctionDef) and isinstance(outer, nodes.Module) else None
                if name is not None and name not in seen:
                    seen.add(name)
                    names.append(name)
                scope = own_scope(scope)

        if class_question:
            for scope in self._filling_scopes(target):
                want(scope)
            seen.add(target.name)
            names.append(target.name)
        else:
            want(own_scope(target))
        while names:
            for scope in users.get(names.pop(), ()):
                want(scope)
        return [scope for scope in self._scopes if scope in wanted]

    def _filling_scopes(self, classdef: nodes.ClassDef) -> list[nodes.NodeNG]:
        """The methods of ``classdef`` that can make or fill its instances, with the functions and
        lambdas inside them, in file order: every method but an instance method that stores
        nothing through its ``self`` (``__call__``, the forward pass of most layers). Such a
        method changes an instance's fields only through the calls it makes, and those calls
        run when the model is used, not when it is built: left out, the layers its forward
        pass calls into (every helper of every sub-layer, on maxtext's layers) are not solved
        for a question about what the instances hold. ``__init__`` and its helpers, properties
        that store, class and static methods (factories) all stay."""
        found = self._fillers.get(classdef)
        if found is None:
            found = []
            for method in classdef.mymethods():
                if fills_instances(method):
                    found.extend(nodes_of_class(method, (nodes.FunctionDef, nodes.Lambda)))
            self._fillers[classdef] = found
        return found

    def _name_users(self) -> dict[str, list[nodes.NodeNG]]:
        """Each name read in the module's functions (``Name`` or attribute), and the functions that read it."""
        if self._users is None:
            self._users = {}
            for name, reads in self._name_reads().items():
                for node in reads:
                    scope = own_scope(node)
                    if not isinstance(scope, nodes.Module):
                        self._users.setdefault(name, []).append(scope)
        return self._users

    def release(self) -> None:
        """Empty the solve's tables once the file's walk is over (the engine calls this through
        :meth:`FileContext.release`). The model of a large project holds millions of small
        tuples and sets, which only point into trees: emptied here, they are freed at once,
        instead of being traversed by the collection after the file (the file's context is
        in reference cycles, so the collector alone would free them)."""
        for part in (self._solver, self.world, self):
            for table in vars(part).values():
                if isinstance(table, (dict, set, list, deque)):
                    table.clear()

    def _root_context(self, scope: nodes.NodeNG):
        enclosing = own_scope(scope)
        if isinstance(enclosing, nodes.Module):
            return self._solver.root_context(None)
        return self._solver.root_context(self._root_context(enclosing))

    # -- queries -------------------------------------------------------------------------
    def objects(self, expression: nodes.NodeNG) -> set[AbstractObject]:
        """The abstract objects ``expression`` (an expression or a name binding) may hold, over
        every context its function was analysed in. Asked alone, it solves only the code that
        can reach ``expression`` (:meth:`focused_on`)."""
        if not self._focus and not self._whole:
            with self.focused_on(expression):
                return self.objects(expression)
        self._ready()
        local = ("b", expression) if isinstance(expression, (nodes.AssignName, nodes.AssignAttr)) \
            else ("e", expression)
        scope = own_scope(expression)
        found: set[AbstractObject] = set()
        contexts = self._solver.instances.get(scope, {None}) if not isinstance(scope, nodes.Module) else {None}
        for context in contexts:
            found |= self._solver.points.get(self._solver.var(local, scope, context), set())
        return found

    def proven(self, expression: nodes.NodeNG) -> bool:
        """Whether the answer of :meth:`objects` is complete: known, every object seen made, no set widened."""
        found = self.objects(expression)
        return bool(found) and all(o.proven for o in found)

    def may_alias(self, first: nodes.NodeNG, second: nodes.NodeNG) -> bool:
        """Whether two expressions may hold one object (constants, functions and classes aside)."""
        shared = self.objects(first) & self.objects(second)
        return any(o.kind not in _VALUES for o in shared)

    def one_object_within(self, obj: AbstractObject, root: AbstractObject) -> bool:
        """Whether ``obj`` stands for one runtime object per runtime ``root``: it was not made in
        a merged context (a summary of many), nor in a loop (or by a call in a loop) that does
        not also make ``root``. Two paths from ``root`` to such an object reach one object;
        to a summary, they may reach two."""
        inner, outer = object_loops(obj), object_loops(root)
        return inner is not None and outer is not None and inner <= outer

    def how_held(self, holder: AbstractObject, attr: str, target: AbstractObject) -> tuple[str | None, object]:
        """``("must", None)`` when ``holder.attr`` holds ``target`` on every run of its stores,
        ``("may", choice)`` when only on one side of a choice of the program (``choice``: the
        ``a if c else b``, ``x or y`` or branch statement), ``(None, None)`` when another store may
        have overwritten it or only a dead arm brings it (:mod:`nnx_lint.analysis.objects.choices`)."""
        self._ready()
        if self._choices is None:
            self._choices = Choices(self._solver)
        return self._choices.store(holder, attr, target)

    def fields(self, obj: AbstractObject, attr: str) -> set[AbstractObject]:
        """The objects ``obj.attr`` may hold (``"*"``: any element of a container)."""
        self._ready()
        return set(self._solver.points.get(self._solver.field(obj, attr), ()))

    def field_names(self, obj: AbstractObject) -> list[str]:
        """The fields stored on ``obj``, in the order first stored."""
        self._ready()
        return list(self._fields_by_holder().get(obj, ()))

    def store_nodes(self, obj: AbstractObject, attr: str, target: AbstractObject | None = None) -> list[nodes.NodeNG]:
        """The stores that put ``target`` (default: anything) into ``obj.attr``."""
        self._ready()
        found = []
        for node, source in self._solver.store_sites.get((obj, attr), ()):
            if target is None or target in self._solver.points.get(source, ()):
                found.append(node)
        return found

    def paths(self, root: AbstractObject, wanted, *, through_tree_only: bool = True) -> list[tuple[Path, AbstractObject]]:
        """Every field path from ``root`` to an object ``wanted`` accepts, breadth first, walking
        only through tree nodes (Modules, pytree dataclasses, optimizers, containers): a plain
        Python object is static to NNX, so what it holds is not in the tree. ``wanted``: the
        kinds of the objects to reach (a frozenset), or a test of an object.

        Given kinds, the walk never enters an object from which no object of those kinds can be
        reached at all (:meth:`_reaching`): the paths found, and their order, are the same, but
        a layer's tree of Variables is not enumerated path by path to find the one Rngs."""
        self._ready()
        index = self._fields_by_holder()
        if isinstance(wanted, frozenset):
            target_test = lambda obj: obj.kind in wanted  # noqa: E731
            useful = self._reaching(wanted, through_tree_only)
            if root not in useful:
                return []
        else:
            target_test, useful = wanted, None
        found: list[tuple[Path, AbstractObject]] = []
        queue = deque([(root, Path((), ()), frozenset([root]))])
        while queue:
            holder, path, seen = queue.popleft()
            if len(path.fields) >= MAX_PATH:
                continue
            for attr, targets in self._steps_from(holder, index):
                for target, store in targets:
                    if target in seen:
                        continue
                    step = Path(path.fields + (attr,), path.stores + store, path.objects + (target,))
                    if target_test(target):
                        found.append((step, target))
                    if (not through_tree_only or target.is_tree_node) and (useful is None or target in useful):
                        queue.append((target, step, seen | {target}))
        return found

    def _steps_from(self, holder: AbstractObject, index) -> list[tuple[str, list]]:
        """The fields :meth:`paths` walks from ``holder``, each with the objects it may hold (values
        aside) and the first store that puts each there (a tuple of none or one node). A
        container's ``"*"`` summarises its keyed / indexed elements: walked only when it has none."""
        steps = self._steps.get(holder)
        if steps is None:
            attrs = index.get(holder, ())
            keyed = any(attr != "*" for attr in attrs)
            steps = []
            for attr in attrs:
                if attr == "*" and (holder.kind != kinds.CONTAINER or keyed):
                    continue
                targets = [(target, tuple(self.store_nodes(holder, attr, target)[:1]))
                           for target in self.fields(holder, attr) if target.kind not in _VALUES]
                steps.append((attr, targets))
            self._steps[holder] = steps
        return steps

    def _reaching(self, wanted: frozenset, through_tree_only: bool) -> set[AbstractObject]:
        """The holders from which :meth:`paths` can reach an object of a kind in ``wanted``
        (ignoring its depth bound and its rule of not walking a cycle twice, so a superset)."""
        key = (wanted, through_tree_only)
        if key not in self._useful:
            index = self._fields_by_holder()
            holders_of: dict[AbstractObject, list[AbstractObject]] = {}
            useful: set[AbstractObject] = set()
            for holder in index:
                for _attr, targets in self._steps_from(holder, index):
                    for target, _store in targets:
                        if target.kind in wanted:
                            useful.add(holder)
                        if not through_tree_only or target.is_tree_node:
                            holders_of.setdefault(target, []).append(holder)
            work = list(useful)
            while work:
                for holder in holders_of.get(work.pop(), ()):
                    if holder not in useful:
                        useful.add(holder)
                        work.append(holder)
            self._useful[key] = useful
        return self._useful[key]

    def _fields_by_holder(self) -> dict[AbstractObject, list[str]]:
        """Each holder's stored fields (built on first use, and again after the solve grows)."""
        if self._holders is None:
            self._holders = {}
            for holder, attr in self._solver.store_sites:
                self._holders.setdefault(holder, []).append(attr)
        return self._holders

    def holds(self, obj: AbstractObject) -> list[tuple[Path, AbstractObject]]:
        """The Rngs, streams and Variables ``obj`` holds in its tree, with their paths (a flax
        layer's own Variables come from the flax table, not from here)."""
        return self.paths(obj, _STATE_KINDS)

    def constant(self, classdef: nodes.ClassDef, attr: str, besides: nodes.NodeNG | None = None) -> tuple[bool, object]:
        """``(True, value)`` when every store of ``attr`` on any instance of ``classdef`` (or on its
        outside ``self``) stores one literal ``value``; ``(False, None)`` otherwise. ``besides``: a
        store to leave out, which must not be the only one (a first store adds the attribute)."""
        self._ready()
        values: set = set()
        seen = False
        for (holder, field), sites in self._solver.store_sites.items():
            if field != attr or holder.definition is not classdef:
                continue
            if besides is not None:
                sites = [(node, source) for node, source in sites if node is not besides]
            if not sites:
                continue
            seen = True
            if any(not self._solver.points.get(source) for _node, source in sites):
                return False, None  # a store of a value the model does not know
            if self._solver.field(holder, attr) in self._solver.widened:
                return False, None
            for _node, source in sites:
                for obj in self._solver.points.get(source, ()):
                    if obj.kind != kinds.CONSTANT:
                        return False, None
                    values.add((type(obj.definition), obj.definition))
        if not seen or len(values) != 1:
            return False, None
        return True, next(iter(values))[1]

    def parameter_values(self, function: nodes.NodeNG, name: str) -> set[AbstractObject] | None:
        """What the analysed calls of ``function`` pass for parameter ``name`` (its default included
        when a call leaves it out); None when no analysed call reaches ``function``."""
        self._ready()
        binding = next((b for b in nodes_of_class(function.args, nodes.AssignName) if b.name == name), None)
        contexts = [c for c in self._solver.instances.get(function, ()) if not is_rooted(c)]
        if binding is None or not contexts:
            return None
        found: set[AbstractObject] = set()
        for context in contexts:
            found |= self._solver.points.get(self._solver.var(("b", binding), function, context), set())
        return found

    def instances_of(self, classdef: nodes.ClassDef) -> list[AbstractObject]:
        """The objects of ``classdef`` the model saw made (proven ones), in creation order."""
        self._ready()
        if self._instances is None:
            self._instances = {}
            for points in self._solver.points.values():
                for obj in points:
                    if isinstance(obj.definition, nodes.ClassDef) and obj.proven and obj.kind != kinds.CLASS:
                        self._instances.setdefault(id(obj.definition), {})[obj] = None
        return list(self._instances.get(id(classdef), ()))
