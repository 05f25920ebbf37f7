"""NNX1xx: shared references and aliasing — catalogue rows A1-A9.

Tree Mode forbids any Variable being reachable twice: every NNX transform checks its
inputs and outputs for Variable aliasing, and every graph API checks the object it
walks. Rules here see sharing statically, from the class model (``context.classes``):
which attributes a class stores during construction and what object each one is.

Opt-in policy (documented on every rule):

* **Class-level rules** (NNX101 aliased attributes, NNX102 a container holding one object
  twice, NNX105 one ``Rngs`` stored twice) report the *class*, at the second store: the
  class is what needs fixing, and the problem follows every instance into every NNX
  transform and graph API, in any file. They stay silent when the store sits in a scope
  that keeps graph mode (``set_graph_mode(True)`` + ``set_graph_updates(True)`` at module
  level, or around the code), or when this file uses instances of the class with NNX
  transforms / graph APIs / ``nnx.Optimizer`` / ``.eval()`` / ``.train()`` and *every* such
  use keeps graph mode (``graph=True``, ``nnx.compat.*``): the author has opted the class in.
* **Call-site rules** (NNX103 duplicate arguments, NNX104 returned inputs, NNX106 a
  transformed constructor storing its argument, NNX107 an argument holding another
  argument, NNX108 tied models in ``fori_loop``/``while_loop``) respect the transform's own
  opt-in (flags, ``nnx.compat``, scope), like every other family.

Where the type or identity of an object is not known statically, the rules stay silent.
"""
from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field

from astroid import nodes

from nnx_lint.calls import NNXCall, match_nnx_call
from nnx_lint.classes import STATEFUL_KINDS, Alias, Ref, join_path
from nnx_lint.fixes.sites import pin_sites, pin_sites_in
from nnx_lint.flow import bound_values, expressions_within, lookup
from nnx_lint.mode import ModeContext
from nnx_lint.names import NameResolver
from nnx_lint.program_text import (
    UnsafeFact,
    access,
    bounded_index,
    identifier,
    identifier_or,
    is_identifier,
    keyword_arguments,
    set_attribute,
    shown,
)
from nnx_lint.rule import Invalid, Reproduction, Rule, Valid, differs, raises

#: Transforms whose first argument is the function they transform.
FUNCTION_TRANSFORMS = frozenset(
    {"jit", "vmap", "pmap", "grad", "value_and_grad", "remat", "checkify", "shard_map", "scan", "custom_vjp"}
)
#: Transforms applied directly to a function and its operands.
DIRECT_TRANSFORMS = frozenset({"eval_shape", "cond", "switch", "fori_loop", "while_loop"})
#: Transforms whose function returns its carry by design (not output aliasing).
CARRY_TRANSFORMS = frozenset({"scan", "fori_loop", "while_loop"})


@dataclass
class Argument:
    """One argument of a transformed call, labelled like flax's error paths."""

    label: str
    index: int | None
    expression: nodes.NodeNG


@dataclass
class TransformUse:
    """One application of an NNX-transformed function."""

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
    #: graph=True, whatever graph_updates is.
    graph_flag: bool = False

    @property
    def name(self) -> str:
        return self.transform.name

    @property
    def accepts_shared_inputs(self) -> bool:
        """Whether this transform accepts one Variable reachable twice among its inputs.

        Catalogue G3 (and flax's own tests): with `graph=True` inputs may share Variables
        even when `graph_updates=False` — except `eval_shape` and `custom_vjp`, which
        check their inputs for aliasing as soon as `graph_updates=False`.
        """
        if self.keeps_graph:
            return True
        return self.graph_flag and self.name not in ("eval_shape", "custom_vjp")


class TransformFinder:
    """Per-file: recognises applications of NNX-transformed functions."""

    def __init__(self, context) -> None:
        self.context = context
        self._modes: dict[int, ModeContext] = {}

    # -- the transform behind a callee expression -------------------------------------
    def transformed(self, callee: nodes.NodeNG, depth: int = 0) -> tuple[NNXCall, nodes.NodeNG, bool] | None:
        """``(transform, function expression, unaffected by the flip)`` when calling ``callee``
        runs an NNX-transformed function; None otherwise."""
        if depth > 4:
            return None
        if isinstance(callee, nodes.Call):
            call = self.context.nnx_call(callee)
            if call is not None and call.name in FUNCTION_TRANSFORMS and call.args:
                return call, call.args[0], not self.context.flip_changes(call)
            if isinstance(callee.func, nodes.Call) and callee.args:
                factory = self.context.nnx_call(callee.func)
                if factory is not None and factory.name in FUNCTION_TRANSFORMS and not factory.args:
                    return factory, callee.args[0], not self.context.flip_changes(factory)
            return None
        if isinstance(callee, nodes.Name):
            try:
                _scope, assignments = lookup(callee)
            except Exception:
                return None
            if len(assignments) != 1:
                return None
            assignment = assignments[0]
            if isinstance(assignment, nodes.FunctionDef):
                return self.decorated(assignment)
            if isinstance(assignment, nodes.AssignName) and isinstance(assignment.parent, nodes.Assign):
                if len(assignment.parent.targets) == 1 and assignment.parent.targets[0] is assignment:
                    return self.transformed(assignment.parent.value, depth + 1)
            if isinstance(assignment, nodes.ImportFrom):
                name = self.context.qualified_name(callee)
                definition = self.context.project.definition(name) if name else None
                if isinstance(definition, nodes.FunctionDef):
                    return self.decorated(definition)
        return None

    def decorated(self, function: nodes.FunctionDef) -> tuple[NNXCall, nodes.NodeNG, bool] | None:
        """The NNX transform decorating ``function`` (innermost first), if any."""
        if not function.decorators:
            return None
        root = function.root()
        resolver = self.context.resolver if root is self.context.module else NameResolver(root, self.context.project)
        mode = self._mode_for(root, resolver)
        for decorator in reversed(function.decorators.nodes):
            if isinstance(decorator, nodes.Call):
                call = match_nnx_call(decorator, resolver)
                if call is not None and call.name in FUNCTION_TRANSFORMS and not call.args:
                    return call, function, not mode.flip_changes(call)
                continue
            name = resolver.qualified_name(decorator)
            if name and (name.startswith("flax.nnx.")):
                short = name.rpartition(".")[2]
                if short in FUNCTION_TRANSFORMS:
                    synthetic = NNXCall(decorator, name, short)  # type: ignore[arg-type]
                    return synthetic, function, not mode.flip_changes(synthetic)
        return None

    def _mode_for(self, root: nodes.Module, resolver: NameResolver) -> ModeContext:
        if root is self.context.module:
            return self.context.mode
        key = id(root)
        if key not in self._modes:
            self._modes[key] = ModeContext(root, resolver)
        return self._modes[key]

    # -- applications -------------------------------------------------------------------
    def use_of(self, node: nodes.Call) -> TransformUse | None:
        """The :class:`TransformUse` if ``node`` applies a transformed function."""
        direct = self.context.nnx_call(node)
        if direct is not None and direct.name in DIRECT_TRANSFORMS and not direct.via_partial:
            return self._direct_use(direct)
        found = self.transformed(node.func)
        if found is None:
            return None
        transform, function, keeps = found
        arguments = _positional(node.args, "args")
        arguments += [Argument(f"kwargs[{k.arg!r}]", None, k.value) for k in node.keywords or [] if k.arg]
        return TransformUse(transform, node, [function], arguments, keeps, self.graph_flag(transform))

    def graph_flag(self, transform: NNXCall) -> bool:
        """Whether ``graph=True`` is in force for ``transform`` (its own module's mode)."""
        root = transform.node.root()
        resolver = self.context.resolver if root is self.context.module else NameResolver(root, self.context.project)
        return self._mode_for(root, resolver).call_mode(transform).graph is True

    def _direct_use(self, call: NNXCall) -> TransformUse | None:
        use = self._direct_use_of(call)
        if use is not None:
            use.graph_flag = self.graph_flag(call)
        return use

    def _direct_use_of(self, call: NNXCall) -> TransformUse | None:
        args = call.args
        keeps = not self.context.flip_changes(call)
        if any(isinstance(a, nodes.Starred) for a in args):
            return None
        if call.name == "eval_shape" and args:
            return TransformUse(call, call.node, [args[0]], _positional(args[1:], "args"), keeps)
        if call.name == "cond" and len(args) >= 3:
            return TransformUse(call, call.node, list(args[1:3]), _positional(args[3:], "operands"), keeps)
        if call.name == "switch" and len(args) >= 2:
            branches = list(args[1].elts) if isinstance(args[1], (nodes.List, nodes.Tuple)) else []
            return TransformUse(call, call.node, branches, _positional(args[2:], "operands"), keeps)
        if call.name == "fori_loop":
            body = args[2] if len(args) > 2 else call.keywords.get("body_fun")
            init = args[3] if len(args) > 3 else call.keywords.get("init_val")
            if init is not None:
                return TransformUse(call, call.node, [body] if body is not None else [],
                                    [Argument("init_val", 0, init)], keeps)
        if call.name == "while_loop":
            functions = [a for a in args[:2]]
            init = args[2] if len(args) > 2 else call.keywords.get("init_val")
            if init is not None:
                return TransformUse(call, call.node, functions, [Argument("init_val", 0, init)], keeps)
        return None


def _positional(args: list[nodes.NodeNG], label: str) -> list[Argument]:
    result = []
    for index, argument in enumerate(args):
        if isinstance(argument, nodes.Starred):
            break
        result.append(Argument(f"{label}[{index}]", index, argument))
    return result


def function_definition(expression: nodes.NodeNG | None, context=None) -> nodes.NodeNG | None:
    """The FunctionDef / Lambda / ClassDef a function expression denotes (this file, or,
    given the file ``context``, another module of the project)."""
    if isinstance(expression, (nodes.FunctionDef, nodes.Lambda, nodes.ClassDef)):
        return expression
    if isinstance(expression, nodes.Name):
        try:
            _scope, assignments = lookup(expression)
        except Exception:
            return None
        if len(assignments) != 1:
            return None
        assignment = assignments[0]
        if isinstance(assignment, (nodes.FunctionDef, nodes.ClassDef)):
            return assignment
        if isinstance(assignment, nodes.AssignName) and isinstance(assignment.parent, nodes.Assign):
            if isinstance(assignment.parent.value, nodes.Lambda):
                return assignment.parent.value
        if isinstance(assignment, (nodes.ImportFrom, nodes.Import)) and context is not None:
            return _project_definition(context, expression)
    if isinstance(expression, nodes.Attribute) and context is not None:
        return _project_definition(context, expression)
    return None


def _project_definition(context, expression: nodes.NodeNG) -> nodes.NodeNG | None:
    """A class or function of another project module that ``expression`` names."""
    name = context.qualified_name(expression)
    definition = context.project.definition(name) if name else None
    return definition if isinstance(definition, (nodes.FunctionDef, nodes.ClassDef)) else None


def returned_values(function: nodes.NodeNG) -> list[nodes.NodeNG]:
    """What a function returns: a lambda's body, or its own ``return`` values."""
    if isinstance(function, nodes.Lambda) and not isinstance(function, nodes.FunctionDef):
        return [function.body]
    values = []
    for node in function.nodes_of_class(nodes.Return, skip_klass=(nodes.FunctionDef, nodes.Lambda, nodes.ClassDef)):
        if node.value is not None and node.scope() is function:
            values.append(node.value)
    return values


def parameter_names(function: nodes.NodeNG) -> list[str]:
    arguments = function.args
    names = [a.name for a in list(arguments.posonlyargs or []) + list(arguments.args or [])]
    if isinstance(function, nodes.FunctionDef) and isinstance(function.parent, nodes.ClassDef) and names:
        names = names[1:]  # a method's self
    return names


_DUPLICATE = "Duplicate"
_KIND_WORDS = {"module": "Module", "variable": "Variable", "rngs": "Rngs", "state": "State"}
_CONTAINER_NAMES = frozenset({"List", "Sequential", "Dict", "data"})
_GRAPH_METHODS = frozenset({"eval", "train", "set_attributes"})
_GRAPH_USE_APIS = frozenset({"Optimizer", "ModelAndOptimizer", "EMA", "tabulate"})
_MODULE_USE_APIS = frozenset(
    {"state", "split", "update", "graphdef", "variables", "iter_graph", "iter_modules", "clone", "pop", "view"}
)


def _self_text(path: tuple[str, ...]) -> str:
    return join_path(("self",) + tuple(path))


def _inside(node: nodes.NodeNG | None, ancestor: nodes.NodeNG) -> bool:
    while node is not None:
        if node is ancestor:
            return True
        node = node.parent
    return False


def _short(node: nodes.NodeNG, limit: int = 60) -> str:
    text = node.as_string()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _function_label(function: nodes.NodeNG | None) -> str:
    if isinstance(function, (nodes.FunctionDef, nodes.ClassDef)):
        return function.name
    if isinstance(function, nodes.Name):
        return function.name
    return "<lambda>"


class _FamilyRule(Rule):
    """Services every NNX1xx rule uses (no ``code``: not a rule itself)."""

    def __init__(self, context) -> None:
        super().__init__(context)
        self.finder = TransformFinder(context)

    @property
    def classes(self):
        return self.context.classes

    def kind_of_expression(self, expression: nodes.NodeNG | None) -> str | None:
        return self.classes.kind_of(self.classes.ref_of(expression))


# ---------------------------------------------------------------------------------------
# Class-level rules: aliases created while a class is constructed
# ---------------------------------------------------------------------------------------


class _ClassAliasRule(_FamilyRule):
    """Replays each NNX class of the file and reports the aliases of one category."""

    category: str

    def __init__(self, context) -> None:
        super().__init__(context)
        self._classdefs: list[nodes.ClassDef] = []
        #: id(ClassDef) -> [keeps graph mode?] for each use of an instance in this file
        self._uses: dict[int, list[bool]] = {}
        #: the same per object (Ref), for containers built outside classes
        self._object_uses: dict[Ref, list[bool]] = {}
        #: id(ClassDef) -> the NNX APIs its instances meet without graph mode (for --confirm)
        self._use_names: dict[int, list[str]] = {}
        #: id(ClassDef) / Ref -> the NNX call a pin fix would set graph mode on, for each use
        #: that does not keep it (None: a use no call keyword can pin, e.g. ``model.eval()``)
        self._pin_targets: dict[object, list[NNXCall | None]] = {}

    def visit_classdef(self, node: nodes.ClassDef) -> None:
        self._classdefs.append(node)

    def visit_call(self, node: nodes.Call) -> None:
        """Record how instances of project classes are used (for the class opt-in)."""
        call = self.context.nnx_call(node)
        if call is not None:
            self._record_constructions_inside(call)
        if call is not None and call.args and (call.is_graph_api or call.name in _GRAPH_USE_APIS):
            keeps = call.is_compat or self.context.mode.call_mode(call).graph is True
            self._record_use(call.args[0], keeps, call.name, call if call.is_graph_api or call.is_transform else None)
            return
        if isinstance(node.func, nodes.Attribute) and node.func.attrname in _GRAPH_METHODS:
            if self.classes.class_of_self(node.func.expr) is not None:
                keyword = next((k.value for k in node.keywords or [] if k.arg == "graph"), None)
                keeps = isinstance(keyword, nodes.Const) and keyword.value is True
                keeps = keeps or self.context.mode.scope_keeps_graph_mode(node, transform=False)
                self._record_use(node.func.expr, keeps, node.func.attrname)
            return
        use = self.finder.use_of(node)
        if use is not None:
            for argument in use.arguments:
                for expression, _reference in expressions_within(argument.expression, depth=1):
                    self._record_use(expression, use.accepts_shared_inputs, use.name, use.transform)

    def _record_constructions_inside(self, call) -> None:
        """``nnx.compat.get_abstract_model(lambda: Foo(...), mesh)``: Foo is used by that call."""
        lambdas = [a for a in list(call.args) + list(call.keywords.values()) if isinstance(a, nodes.Lambda)]
        if not lambdas:
            return
        mode = self.context.mode.call_mode(call)
        keeps = mode.graph is True and (mode.graph_updates is True or call.name not in ("eval_shape", "custom_vjp"))
        for function in lambdas:
            for inner in function.body.nodes_of_class(nodes.Call):
                ref = self.classes.class_of(inner)
                if ref is not None and ref.definition is not None:
                    self._uses.setdefault(id(ref.definition), []).append(keeps)

    def _record_use(self, expression: nodes.NodeNG, keeps: bool, name: str | None = None,
                    pin_target: NNXCall | None = None) -> None:
        if isinstance(expression, (nodes.Tuple, nodes.List, nodes.Dict)):
            return
        object_ref = self.classes.ref_of(expression)
        if object_ref is not None:
            self._object_uses.setdefault(object_ref, []).append(keeps)
            if not keeps:
                self._pin_targets.setdefault(object_ref, []).append(pin_target)
        ref = self.classes.class_of_self(expression)
        if ref is not None and ref.definition is not None:
            self._uses.setdefault(id(ref.definition), []).append(keeps)
            if not keeps:
                self._pin_targets.setdefault(id(ref.definition), []).append(pin_target)
            if not keeps and name:
                self._use_names.setdefault(id(ref.definition), []).append(name)

    def leave_module(self, node: nodes.Module) -> None:
        reported: set[tuple[int, int]] = set()
        for classdef in self._classdefs:
            info = self.classes.info(classdef)
            if not info.is_nnx_module:
                continue
            uses = self._uses.get(id(classdef))
            if uses and all(uses):
                continue  # every use in this file opts the class into graph mode
            construction = self.classes.construction(classdef)
            for alias in construction.aliases:
                if _category(alias) != self.category:
                    continue
                where = self._location(classdef, alias)
                if where is None or (where.lineno, where.col_offset) in reported:
                    continue
                if self.context.mode.scope_keeps_graph_mode(where, transform=True):
                    continue
                reported.add((where.lineno, where.col_offset))
                self.report(where, **self._facts(classdef, alias))

    def _location(self, classdef: nodes.ClassDef, alias: Alias) -> nodes.NodeNG | None:
        second = alias.second
        where = second.container if self.category == "container" and second.container is not None else second.origin
        if not _inside(where, classdef):
            where = second.origin
        if where.root() is not self.context.module or not _inside(where, classdef):
            return None
        if not _inside(second.node, classdef) and alias.first is not None and not _inside(alias.first.node, classdef):
            # Both stores come from a base class: reported there, unless only our arguments tie them.
            owner = second.node.frame()
            owner = owner.parent if isinstance(owner, nodes.FunctionDef) else None
            if isinstance(owner, nodes.ClassDef):
                base = self.classes.construction(owner)
                if any(a.second.node is second.node for a in base.aliases):
                    return None
        return where

    def _facts(self, classdef: nodes.ClassDef, alias: Alias) -> dict:
        second = alias.second
        return {
            "class_name": classdef.name,
            "first_path": join_path(alias.first_path),
            "second_path": second.display_path,
            "kind": _KIND_WORDS.get(alias.kind, alias.kind),
            "shared": alias.ref.describe(),
            "container": _short(second.container) if second.container is not None else None,
            "conditional": bool(second.guards),
            "stored_in": second.node.frame().name if hasattr(second.node.frame(), "name") else None,
            "confidence": "static",
            **_alias_shape(alias),
            "used_with": next(iter(self._use_names.get(id(classdef), [])), None),
            **self._pin_facts(id(classdef)),
        }

    def _pin_facts(self, key: object) -> dict:
        """A class-level finding is fixed by pinning every use of the class (or object): the
        ``pin`` sites of the uses this file shows, and whether they are all of its uses here."""
        targets = self._pin_targets.get(key, [])
        known = pin_sites(*targets, module=self.context.module)
        every_use = (bool(targets) and None not in targets
                     and len(known) == len(dict.fromkeys(id(t.node) for t in targets)))
        return {"pin": pin_sites_in(self.context, *targets), "pin_every_use": every_use}


def _alias_shape(alias: Alias) -> dict:
    """What a reproduction needs beyond the paths: which part of the shared object each
    path holds (``rngs`` and ``rngs.dropout``: ``""`` and ``"dropout"``) and the container."""
    first_ref = alias.first.ref if alias.first is not None else None
    first_part = second_part = ""
    if first_ref is not None and first_ref.overlaps(alias.ref):
        common = min(len(first_ref.path), len(alias.ref.path))
        first_part, second_part = join_path(first_ref.path[common:]), join_path(alias.ref.path[common:])
    return {"first_part": first_part, "second_part": second_part,
            "container_type": _container_type(alias.second.container)}


def _container_type(container: nodes.NodeNG | None) -> str | None:
    """``List`` / ``Sequential`` / ``Dict`` for ``nnx.*`` containers, ``list`` etc. for literals."""
    if isinstance(container, nodes.Call):
        func = container.func
        name = func.attrname if isinstance(func, nodes.Attribute) else getattr(func, "name", None)
        return name if name in _CONTAINER_NAMES else None
    if isinstance(container, (nodes.List, nodes.ListComp, nodes.BinOp)):
        return "list"
    if isinstance(container, (nodes.Tuple, nodes.Dict)):
        return type(container).__name__.lower()
    return None


def _category(alias: Alias) -> str:
    first, second = alias.first, alias.second
    if alias.kind == "rngs":
        return "rngs"
    if first is not None and first.container is not None and first.container is second.container:
        return "container"
    a, b = alias.first_path, second.path
    if len(a) == len(b) and a[:-1] == b[:-1] and a[-1:] and a[-1].startswith("[") and b[-1].startswith("["):
        return "container"
    return "attribute"


# ---------------------------------------------------------------------------------------
# Call-site rules
# ---------------------------------------------------------------------------------------


def _overlapping_pair(classes, refs: list[tuple[Argument, Ref | None]]):
    """The first two arguments denoting the same stateful object (or one and its part)."""
    for i, (first, ref_a) in enumerate(refs):
        if ref_a is None:
            continue
        for second, ref_b in refs[i + 1:]:
            if ref_b is None or not ref_a.overlaps(ref_b):
                continue
            kinds = (classes.kind_of(ref_a), classes.kind_of(ref_b))
            if all(kind in STATEFUL_KINDS for kind in kinds):
                return first, ref_a, second, ref_b, kinds
    return None


def _relative_parts(ref_a: Ref, ref_b: Ref) -> tuple[str, str]:
    """The attribute paths of two overlapping refs below their common object
    (``model`` and ``model.encoder``: ``""`` and ``"encoder"``); state-view parts dropped."""
    a = tuple(p for p in ref_a.path if not p.startswith("<"))
    b = tuple(p for p in ref_b.path if not p.startswith("<"))
    common = min(len(a), len(b))
    return join_path(a[common:]), join_path(b[common:])


def _view_of(context, expression: nodes.NodeNG) -> str | None:
    """``"state"`` for ``nnx.state(x)`` / ``nnx.variables(x)``, ``"split"`` for a state
    group of ``nnx.split(x)``, None for the object itself."""
    if isinstance(expression, nodes.Name):
        bindings = bound_values(expression)
        if len(bindings) == 1 and isinstance(bindings[0], (nodes.Call, nodes.Subscript)):
            expression = bindings[0]
    if isinstance(expression, nodes.Call):
        name = context.qualified_name(expression.func) or ""
        if name in ("flax.nnx.state", "flax.nnx.variables"):
            return "state"
    if isinstance(expression, nodes.Subscript) and isinstance(expression.value, nodes.Call):
        if context.qualified_name(expression.value.func) == "flax.nnx.split":
            return "split"
    return None


def _describe_use(use: TransformUse) -> dict:
    function = use.functions[0] if use.functions else None
    return {
        "transform": use.name,
        "function": _function_label(function),
        "form": "direct" if use.call is use.transform.node else "applied",
    }


_DUPLICATE_OUTPUT_MESSAGE = (
    "`nnx.{transform}`-transformed `{function}` returns `{returned}`, one object twice: Tree Mode raises ValueError"
)
_DUPLICATE_OUTPUT_HELP = (
    "Tree Mode rejects duplicate outputs, including an object and its state (ValueError: Duplicate ...). "
    "Return it once and take `nnx.state(...)` outside the transform"
)


class _ReturnFinding:
    """One returned input found by :func:`_returned_inputs`."""

    def __init__(self, code, node, facts) -> None:
        self.code, self.node, self.facts = code, node, facts


class _ReturnRule(_FamilyRule):
    """Collects transformed function definitions; analyses their returns at the end."""

    finding_code: str

    def __init__(self, context) -> None:
        super().__init__(context)
        self._definitions: dict[int, tuple[nodes.NodeNG, list[TransformUse]]] = {}

    def _register(self, definition: nodes.NodeNG | None, use: TransformUse) -> None:
        if definition is None or use.keeps_graph or use.name in CARRY_TRANSFORMS:
            return
        entry = self._definitions.setdefault(id(definition), (definition, []))
        entry[1].append(use)

    def visit_functiondef(self, node: nodes.FunctionDef) -> None:
        found = self.finder.decorated(node)
        if found is not None:
            transform, function, keeps = found
            self._register(node, TransformUse(transform, None, [node], [], keeps, self.finder.graph_flag(transform)))

    def visit_call(self, node: nodes.Call) -> None:
        use = self.finder.use_of(node)
        if use is None:
            return
        for function in use.functions:
            self._register(function_definition(function, self.context), use)
        # bare transform objects applied later are registered through their call sites

    def leave_module(self, node: nodes.Module) -> None:
        seen: set[tuple[int, int]] = set()
        for definition, uses in self._definitions.values():
            for finding in self._findings(definition, uses):
                key = (finding.node.lineno, finding.node.col_offset)
                if finding.code == self.code and key not in seen:
                    seen.add(key)
                    duplicate = finding.facts.get("duplicate_output")
                    message, help_text = (_DUPLICATE_OUTPUT_MESSAGE, _DUPLICATE_OUTPUT_HELP) if duplicate else (None, None)
                    # Every transform applying this definition must keep graph mode.
                    pin = pin_sites_in(self.context, *(u.transform for u in uses))
                    self.report(finding.node, message=message, help=help_text, **{**finding.facts, "pin": pin})

    # -- analysis -------------------------------------------------------------------------
    def _findings(self, definition: nodes.NodeNG, uses: list[TransformUse]) -> list[_ReturnFinding]:
        use = uses[0]
        findings: list[_ReturnFinding] = []
        if isinstance(definition, nodes.ClassDef):
            for call_use in uses:
                findings.extend(self._constructor_findings(definition, call_use))
            return findings
        parameters = parameter_names(definition)
        # graph=True (even with graph_updates=False) still accepts duplicate outputs.
        check_duplicates = not all(u.graph_flag for u in uses)
        for value in returned_values(definition):
            duplicate = self._duplicate_output(definition, value, uses) if check_duplicates else None
            if duplicate is not None:
                findings.append(duplicate)
            for expression, known_ref, is_view, constructed_in in self._returned_parts(value, definition):
                ref = known_ref or self.classes.ref_of(expression)
                if ref is None or ref.root[0] != "param" or ref.root[1] is not definition:
                    continue
                name = ref.root[2]
                if name not in parameters:
                    continue
                index = parameters.index(name)
                kind, evidence = self._parameter_kind(definition, name, index, ref, uses, is_view)
                if kind not in STATEFUL_KINDS:
                    continue
                facts = {
                    **_describe_use(use),
                    "function": _function_label(definition),
                    "parameter": name,
                    "position": index,
                    "returned": _short(expression),
                    "kind": _KIND_WORDS.get(kind, kind),
                    "has_aux": _has_aux(use),
                    "evidence": evidence,
                    "confidence": "static" if evidence in ("annotation", "call-site", "state-view") else "heuristic",
                    "part": join_path(tuple(p for p in ref.path if not p.startswith("<"))),
                    "view": _view_of(self.context, expression) if is_view else None,
                }
                if constructed_in is not None:
                    construction, stored_path = constructed_in
                    cls = self.classes.class_of(construction)
                    facts.update({
                        "class_name": cls.short_name if cls else _short(construction.func),
                        "stored_path": join_path(stored_path),
                        "returned": _short(construction),
                    })
                    findings.append(_ReturnFinding("NNX106", construction, facts))
                else:
                    findings.append(_ReturnFinding("NNX104", expression, facts))
        return findings

    def _returned_parts(self, value: nodes.NodeNG, definition: nodes.NodeNG, depth: int = 0):
        """``(expression, its ref if known, is a state view, construction storing it)`` per returned part."""
        if depth > 4:
            return
        if isinstance(value, (nodes.Tuple, nodes.List)):
            for element in value.elts:
                yield from self._returned_parts(element, definition, depth + 1)
        elif isinstance(value, nodes.Dict):
            for _key, element in value.items:
                yield from self._returned_parts(element, definition, depth + 1)
        elif isinstance(value, nodes.IfExp):
            yield from self._returned_parts(value.body, definition, depth + 1)
            yield from self._returned_parts(value.orelse, definition, depth + 1)
        elif isinstance(value, nodes.Starred):
            yield from self._returned_parts(value.value, definition, depth + 1)
        elif isinstance(value, nodes.Call):
            name = self.context.qualified_name(value.func)
            nnx_name = name[len("flax.nnx."):] if name and name.startswith("flax.nnx.") else None
            if nnx_name in ("state", "variables") and value.args:
                yield value, self.classes.ref_of(value.args[0]), True, None
            elif name in ("builtins.dict", "dict") or (isinstance(value.func, nodes.Name) and value.func.name == "dict"):
                for keyword in value.keywords or []:
                    yield from self._returned_parts(keyword.value, definition, depth + 1)
            else:
                cls = self.classes.class_of(value)
                if cls is not None and cls.definition is not None:
                    for path, ref, _container in self.classes.stored_items(value)[1:]:
                        if ref is not None and ref.root[0] == "param" and ref.root[1] is definition:
                            yield value, ref, False, (value, path)
        elif isinstance(value, nodes.Subscript) and isinstance(value.value, nodes.Call):
            name = self.context.qualified_name(value.value.func)
            if name == "flax.nnx.split" and value.value.args:
                index = value.slice
                if isinstance(index, nodes.Const) and isinstance(index.value, int) and index.value >= 1:
                    yield value, self.classes.ref_of(value.value.args[0]), True, None
            else:
                yield value, None, False, None
        elif isinstance(value, nodes.Name):
            bindings = bound_values(value)
            binding = bindings[0] if len(bindings) == 1 else None
            if binding is not None and _inside(binding, definition) and self._is_composite(binding):
                yield from self._returned_parts(binding, definition, depth + 1)
            else:
                yield value, None, False, None
        elif isinstance(value, (nodes.Attribute, nodes.Subscript)):
            yield value, None, False, None

    def _is_composite(self, value: nodes.NodeNG) -> bool:
        """Values whose parts :meth:`_returned_parts` enters (not plain objects)."""
        if isinstance(value, (nodes.Tuple, nodes.List, nodes.Dict, nodes.IfExp, nodes.Subscript)):
            return True
        if isinstance(value, nodes.Call):
            name = self.context.qualified_name(value.func) or ""
            if name in ("flax.nnx.state", "flax.nnx.variables") or name in ("builtins.dict", "dict"):
                return True
            cls = self.classes.class_of(value)
            return cls is not None and cls.definition is not None
        return False

    def _duplicate_output(self, definition, value, uses) -> _ReturnFinding | None:
        """The same object (or an object and its state) returned twice: `return model, nnx.state(model)`."""
        parts = []
        for expression, known_ref, is_view, constructed_in in self._returned_parts(value, definition):
            if constructed_in is None:
                ref = known_ref or self.classes.ref_of(expression)
                if ref is not None:
                    parts.append((expression, ref, is_view))
        for i, (first, first_ref, first_view) in enumerate(parts):
            for second, second_ref, second_view in parts[i + 1:]:
                if not first_ref.overlaps(second_ref) or first is second:
                    continue
                kinds = [self.classes.kind_of(first_ref), self.classes.kind_of(second_ref)]
                if not (first_view or second_view or all(k in STATEFUL_KINDS for k in kinds)):
                    continue
                return _ReturnFinding("NNX104", value, {
                    **_describe_use(uses[0]),
                    "function": _function_label(definition),
                    "parameter": None,
                    "position": None,
                    "returned": f"{_short(first, 30)}` and `{_short(second, 30)}",
                    "kind": "State" if (first_view or second_view) else _KIND_WORDS.get(kinds[0], kinds[0]),
                    "has_aux": _has_aux(uses[0]),
                    "evidence": "state-view" if (first_view or second_view) else "annotation",
                    "confidence": "static",
                    "duplicate_output": True,
                    "views": [_view_of(self.context, first) if first_view else None,
                              _view_of(self.context, second) if second_view else None],
                })
        return None

    def _parameter_kind(self, definition, name, index, ref: Ref, uses, is_view):
        if is_view:
            return "state", "state-view"
        kind = self.classes.kind_of(ref)
        if kind is not None:
            return kind, "annotation"
        call_kinds = set()
        for use in uses:
            for argument in use.arguments:
                if argument.index == index and argument.label.startswith(("args", "operands")):
                    argument_ref = self.classes.ref_of(argument.expression)
                    call_kinds.add(self.classes.kind_of(Ref(argument_ref.root, argument_ref.path + ref.path))
                                   if argument_ref else None)
        call_kinds.discard(None)
        if len(call_kinds) == 1:
            return call_kinds.pop(), "call-site"
        if not ref.path and _used_as_module(self.context, definition, name):
            return "module", "usage"
        return None, None

    def _constructor_findings(self, classdef: nodes.ClassDef, use: TransformUse) -> list[_ReturnFinding]:
        init = self.classes.init_of(classdef)
        if init is None or use.call is None:
            return []
        stored = self.classes.construction(classdef).stored_parameters()
        positional = [p.name for p in list(init.args.posonlyargs or []) + list(init.args.args or [])][1:]
        findings = []
        for argument in use.arguments:
            if argument.label.startswith("kwargs"):
                parameter = argument.label[len("kwargs['"):-2]
            elif argument.index is not None and argument.index < len(positional):
                parameter = positional[argument.index]
            else:
                continue
            if parameter not in stored:
                continue
            kind = self.classes.kind_of(self.classes.ref_of(argument.expression)) or self.classes.kind_of(
                Ref(("param", init, parameter)))
            if kind not in STATEFUL_KINDS:
                continue
            path, part = stored[parameter][0]
            findings.append(_ReturnFinding("NNX106", use.call, {
                **_describe_use(use),
                "function": classdef.name,
                "class_name": classdef.name,
                "parameter": parameter,
                "position": argument.index,
                "returned": None,
                "stored_path": join_path(path),
                "kind": _KIND_WORDS.get(kind, kind),
                "has_aux": False,
                "evidence": "call-site",
                "confidence": "static",
            }))
        return findings


def _has_aux(use: TransformUse) -> bool:
    value = use.transform.keywords.get("has_aux")
    return isinstance(value, nodes.Const) and value.value is True


def _used_as_module(context, function: nodes.NodeNG, name: str) -> bool:
    """Whether the body treats parameter ``name`` as an NNX Module (calls it, walks its graph,
    writes its Variables): evidence for a parameter without annotation."""
    body = function.body if isinstance(function.body, list) else [function.body]
    for statement in body:
        for node in statement.nodes_of_class((nodes.Call, nodes.Subscript)):
            if isinstance(node, nodes.Call):
                func = node.func
                if isinstance(func, nodes.Name) and func.name == name:
                    return True
                if isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Name) and func.expr.name == name:
                    if func.attrname in ("eval", "train", "set_attributes", "sow", "perturb"):
                        return True
                if node.args and isinstance(node.args[0], nodes.Name) and node.args[0].name == name:
                    qualified = context.qualified_name(func) or ""
                    if qualified.startswith("flax.nnx.") and qualified.rpartition(".")[2] in _MODULE_USE_APIS:
                        return True
            elif isinstance(node.parent, (nodes.Assign, nodes.AugAssign)) and node in getattr(
                node.parent, "targets", [getattr(node.parent, "target", None)]
            ):
                root = node.value
                while isinstance(root, nodes.Attribute):
                    root = root.expr
                if isinstance(root, nodes.Name) and root.name == name and isinstance(node.value, nodes.Attribute):
                    return True
    return False


# ---------------------------------------------------------------------------------------
# The rules
# ---------------------------------------------------------------------------------------

_SPEC = "[FLIP 5310](https://github.com/google/flax/issues/5310)"


class AliasedAttribute(_ClassAliasRule):
    """A Module stores one Variable or submodule under two attribute paths (tied weights).

    What it does:
        Replays each NNX Module class's construction — `__init__`, the helper methods it
        calls, base classes' `__init__` (also from other files of the project), and the
        constructor arguments child classes keep — and flags the store that makes one
        Variable or Module reachable at a second path: `self.b = self.a`,
        `self.head.kernel = self.embed.embedding`, a local stored twice, an object stored
        and also wrapped by a stored wrapper (`nnx.LoRA(base_module=...)`,
        `nnx.WeightNorm(layer)`). It reports the second store and names both paths.

        Policy: the class is what needs fixing, so the class is reported wherever it is
        used. Silent when the store is in a scope that keeps graph mode, or when every
        use of the class in this file (instances passed to NNX transforms, graph APIs,
        `nnx.Optimizer`, `.eval()` / `.train()`, or built in a lambda given to an NNX
        call) keeps graph mode (`graph=True`, `nnx.compat.*`). Modules that store only
        constants hold no Variables and may be shared. A
        rename followed by `del` / `delattr` of the old name, an attribute overwritten
        before the constructor ends, ties made at call time (`self.embed.attend(x)`,
        `embedding.T` in `__call__`) and copies (`nnx.clone`) stay silent.

    Why is this bad?:
        Tree Mode forbids any Variable being reachable twice. Every NNX transform raises
        `ValueError: Duplicate Param(...) found at paths: .args[0].a, .args[0].b ...
        does not support Variable aliasing`, and every graph API (`nnx.split`,
        `nnx.state`, `nnx.clone`, `nnx.Optimizer`, `model.eval()`, ...) raises
        `Tree mode (graph=False) does not support shared references`. Inside
        `nnx.fori_loop` / `nnx.while_loop` the aliases silently diverge (NNX108).

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references) — catalogue rows A1, A2
        - {spec}
    """

    code = "NNX101"
    fixes = ("pin",)
    symbol = "aliased-module-attribute"
    kind = "raises"
    catalogue = ("A1", "A2")
    category = "attribute"
    message = (
        "`{class_name}` stores one {kind} at both `self.{first_path}` and `self.{second_path}`: Tree "
        "Mode raises ValueError"
    )
    help = (
        "Tree Mode rejects shared references in every NNX transform and graph API (ValueError: "
        "Duplicate ...). Store it once and tie by use (`self.embed.attend(x)`, a `@property`), or keep "
        "graph mode (`graph=True` / `nnx.compat.*`) at every use"
    )
    VALID = [
        Valid(
            "tie-by-use-r01-fix",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Tied(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.ones((2, 2)))
                def __call__(self, x):
                    return x @ self.w @ self.w.T

            class TiedLM(nnx.Module):
                def __init__(self, rngs):
                    self.embed = nnx.Embed(10, 4, rngs=rngs)
                def __call__(self, tokens):
                    return self.embed.attend(self.embed(tokens))

            @nnx.jit
            def step(m, x):
                m.w[...] += 1.0
                return m(x)

            y = step(Tied(), jnp.ones((1, 2)))
            """,
        ),
        Valid(
            "property-or-opted-in-r02-fix",
            """
            import optax
            from flax import nnx

            class Untied(nnx.Module):
                def __init__(self, rngs):
                    self.encoder = nnx.Linear(2, 2, rngs=rngs)
                @property
                def decoder(self):
                    return self.encoder

            class Tied(nnx.Module):
                def __init__(self, rngs):
                    self.encoder = nnx.Linear(2, 2, rngs=rngs); self.decoder = self.encoder

            def run():
                u = Untied(nnx.Rngs(0))
                a = (len(nnx.state(u)), nnx.Optimizer(u, optax.sgd(0.1), wrt=nnx.Param), u.eval())
                t = Tied(nnx.Rngs(0))
                b = (len(nnx.state(t, graph=True)), nnx.Optimizer(t, optax.sgd(0.1), wrt=nnx.Param, graph=True),
                     t.eval(graph=True), nnx.compat.clone(t), list(nnx.compat.iter_modules(t)))
                return a, b
            """,
        ),
        Valid(
            "rename-then-delete-and-overwrite",
            """
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.old = nnx.Linear(2, 2, rngs=rngs)
                    self.new = self.old
                    del self.old
                    self.a = nnx.Linear(2, 2, rngs=rngs)
                    self.b = self.a
                    self.b = nnx.Linear(2, 2, rngs=rngs)
                    self.c = nnx.clone(self.a)
                    self.size = 3
                    self.width = self.size
                    self.act = nnx.relu
                    self.other_act = self.act
            """,
        ),
        Valid(
            "two-objects-same-class",
            """
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.encoder = nnx.Linear(2, 2, rngs=rngs)
                    self.decoder = nnx.Linear(2, 2, rngs=rngs)
                    self.kernel_t = self.encoder.kernel.T
            """,
        ),
        Valid(
            "module-opted-in",
            """
            from flax import nnx
            nnx.set_graph_mode(True)
            nnx.set_graph_updates(True)

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.encoder = nnx.Linear(2, 2, rngs=rngs)
                    self.decoder = self.encoder
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "tied-variable-r01",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Tied(nnx.Module):
                def __init__(self):
                    self.w_in = nnx.Param(jnp.ones((2, 2)))
                    self.w_out = self.w_in  # NNX101

            model = Tied()
            y = nnx.jit(lambda m, x: m(x))(model, jnp.ones((1, 2)))
            """,
            tree_mode=raises("ValueError", _DUPLICATE),
        ),
        Invalid(
            "shared-submodule-graph-api-r02",
            """
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.encoder = nnx.Linear(2, 2, rngs=rngs)
                    self.decoder = self.encoder  # NNX101

            graphdef, state = nnx.split(Model(nnx.Rngs(0)))
            """,
            tree_mode=raises("ValueError", "does not support shared references"),
        ),
        Invalid(
            "tied-embedding-conditional",
            """
            from flax import nnx

            class LM(nnx.Module):
                def __init__(self, rngs, tie: bool = True):
                    self.embed = nnx.Embed(10, 4, rngs=rngs)
                    self.head = nnx.Linear(4, 10, use_bias=False, rngs=rngs)
                    if tie:
                        self.head.kernel = self.embed.embedding  # NNX101

            model = LM(nnx.Rngs(0))
            state = nnx.state(model)
            """,
            tree_mode=raises("ValueError", _DUPLICATE),
        ),
        Invalid(
            "local-stored-twice-and-wrapper",
            """
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    linear = nnx.Linear(2, 2, rngs=rngs)
                    self.linear = linear
                    self.lora = nnx.LoRA(2, 1, 2, base_module=linear, rngs=rngs)  # NNX101

            model = Model(nnx.Rngs(0))
            nnx.jit(lambda m: None)(model)
            """,
            tree_mode=raises("ValueError", _DUPLICATE),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """The class with one Variable / Module at both paths (a flax layer of the finding's
        kind, `Box` Modules for the intermediate paths), through the transform or graph API
        the file uses it with (`used_with`: the transforms both runtimes implement, and
        split / state / graphdef / clone / iter_graph); nnx.jit when there is none or for
        any other use (`nnx.Optimizer`, and `.eval()` / `.train()` / `iter_modules`, which
        tree_runtime does not check for shared references). Control: the r01 fix, the
        object stored once."""
        return _class_alias_reproduction(facts, "once")


class RepeatedContainerElement(_ClassAliasRule):
    """A container (`nnx.List`, `nnx.Sequential`, `nnx.Dict`, a list) holds one object twice.

    What it does:
        Flags `nnx.List([block, block])`, `nnx.List([block] * n)`,
        `nnx.Sequential(block, block)`, `[block for _ in range(n)]` (a block built
        outside the comprehension), and `self.blocks.append(block)` in a loop, when the
        repeated object holds Variables. Stores in Module constructors are found by
        replaying the class (see NNX101); containers built anywhere else are checked where
        they are built. `[Block(...) for _ in range(n)]` builds distinct objects and stays
        silent, as does repeating functions (`nnx.relu`) or `Dropout` without `rngs`.

        Policy as NNX101 for containers stored by a class (opt-in by scope or by every
        use in the file); a container built outside a class is silent when every use of
        it in the file keeps graph mode. Elements sharing one `Rngs` inside a class are
        reported as NNX105.

    Why is this bad?:
        Tree Mode forbids any Variable being reachable twice: an NNX transform receiving
        the container (or a model holding it) raises `ValueError: Duplicate Param(...)
        found at paths: .args[0].layers[0].bias, .args[0].layers[1].bias`, and graph APIs
        raise `Tree mode (graph=False) does not support shared references`. To share
        parameters across depth, store the block once and apply it repeatedly.

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references) — catalogue row A3
        - {spec}
    """

    code = "NNX102"
    fixes = ("pin",)
    symbol = "repeated-container-element"
    kind = "raises"
    catalogue = ("A3",)
    category = "container"
    message = (
        "`{container}` holds one {kind} at `{first_path}` and `{second_path}`: Tree Mode raises ValueError"
    )
    help = (
        "Tree Mode rejects shared references (ValueError: Duplicate ...). Store the block once and "
        "apply it repeatedly (keep a repeat count), or build distinct blocks (`[Block(...) for _ in "
        "range(n)]`)"
    )
    VALID = [
        Valid(
            "store-once-r03-fix",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Stack(nnx.Module):
                def __init__(self, rngs, depth=2):
                    self.block = nnx.Linear(2, 2, rngs=rngs)
                    self.depth = depth
                def __call__(self, x):
                    for _ in range(self.depth):
                        x = self.block(x)
                    return x

            model = Stack(nnx.Rngs(0))
            y = nnx.jit(lambda m, x: m(x))(model, jnp.ones((1, 2)))
            """,
        ),
        Valid(
            "distinct-blocks-and-functions",
            """
            from flax import nnx

            class Stack(nnx.Module):
                def __init__(self, rngs, n):
                    self.layers = nnx.List([nnx.Linear(2, 2, rngs=rngs) for _ in range(n)])
                    self.blocks = nnx.List()
                    for _ in range(n):
                        self.blocks.append(nnx.Linear(2, 2, rngs=rngs))
                    drop = nnx.Dropout(0.1)
                    self.mlp = nnx.Sequential(nnx.Linear(2, 2, rngs=rngs), nnx.relu, drop,
                                              nnx.Linear(2, 2, rngs=rngs), nnx.relu, drop)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "list-same-block-r03",
            """
            from flax import nnx

            class Stack(nnx.Module):
                def __init__(self, rngs):
                    block = nnx.Linear(2, 2, rngs=rngs)
                    self.layers = nnx.List([block, block])  # NNX102

            model = Stack(nnx.Rngs(0))
            """,
            tree_mode=raises("ValueError", _DUPLICATE),
        ),
        Invalid(
            "repeat-and-sequential",
            """
            from flax import nnx

            def build(rngs, n):
                block = nnx.Linear(2, 2, rngs=rngs)
                layers = nnx.List([block] * n)  # NNX102
                mlp = nnx.Sequential(block, nnx.relu, block)  # NNX102
                return layers, mlp
            """,
            tree_mode=raises("ValueError", _DUPLICATE),
        ),
        Invalid(
            "append-in-loop",
            """
            from flax import nnx

            class Stack(nnx.Module):
                def __init__(self, rngs, n):
                    shared = nnx.Linear(2, 2, rngs=rngs)
                    self.blocks = nnx.List()
                    for _ in range(n):
                        self.blocks.append(shared)  # NNX102
            """,
            tree_mode=raises("ValueError", _DUPLICATE),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """The container (`nnx.List`, or `nnx.Sequential` as the facts say) holding one
        Linear at both positions, in the class at the finding's path, through nnx.jit
        (or the API the file uses it with). Control: distinct blocks."""
        return _class_alias_reproduction(facts, "distinct")

    #: Elements appended one by one (``self.blocks.append(shared)`` in a loop): there is no
    #: container expression to show, so the message names the class and the paths.
    appended_message = (
        "`{class_name}` stores the same {kind} at `self.{first_path}` and `self.{second_path}`: "
        "Tree Mode raises ValueError"
    )

    def report(self, node: nodes.NodeNG, message: str | None = None, help: str | None = None, **facts) -> None:
        """As :meth:`Rule.report`, with :attr:`appended_message` when no container expression exists."""
        if message is None and facts.get("container") is None:
            message = self.appended_message
        super().report(node, message=message, help=help, **facts)

    def __init__(self, context) -> None:
        super().__init__(context)
        self._pending: list[tuple[nodes.Call, dict]] = []

    def visit_call(self, node: nodes.Call) -> None:
        super().visit_call(node)
        call = self.context.nnx_call(node)
        if call is None or call.name not in _CONTAINER_NAMES or call.is_compat or call.via_partial:
            return
        if self._in_class_store(node) or self._in_outer_container(node):
            return
        items = [item for item in self.classes.stored_items(node) if item[0]]
        for position, (path, ref, _container) in enumerate(items):
            if ref is None:
                continue
            for other_path, other_ref, _ in items[position + 1:]:
                if other_ref is None or not ref.overlaps(other_ref) or _prefix(path, other_path):
                    continue
                kind = self.classes.kind_of(other_ref)
                if kind not in STATEFUL_KINDS or self.context.mode.scope_keeps_graph_mode(node):
                    continue
                self._pending.append((node, dict(
                    class_name=None, first_path=join_path(path), second_path=join_path(other_path),
                    kind=_KIND_WORDS.get(kind, kind), shared=ref.describe(), container=_short(node),
                    conditional=False, stored_in=None, confidence="static", first_part="", second_part="",
                    container_type=call.name if call.name in ("List", "Sequential") else None,
                    used_with=None)))
                return

    def leave_module(self, node: nodes.Module) -> None:
        super().leave_module(node)
        for container, facts in self._pending:
            uses = self._object_uses.get(Ref(("new", container)))
            if uses and all(uses):
                continue  # every use of this container keeps graph mode
            self.report(container, **facts, **self._pin_facts(Ref(("new", container))))

    def _in_class_store(self, node: nodes.NodeNG) -> bool:
        """Inside the value of a ``self.x = ...`` store of a method (the class replay covers it)."""
        current = node
        while current is not None and not isinstance(current, (nodes.FunctionDef, nodes.Lambda, nodes.Module)):
            if isinstance(current, (nodes.Assign, nodes.AnnAssign)):
                targets = current.targets if isinstance(current, nodes.Assign) else [current.target]
                return any(isinstance(t, nodes.AssignAttr) for t in targets) and isinstance(
                    current.scope(), nodes.FunctionDef) and isinstance(current.scope().parent, nodes.ClassDef)
            if isinstance(current, nodes.Call) and current is not node and isinstance(current.func, nodes.Attribute) \
                    and current.func.attrname == "append":
                return isinstance(current.scope(), nodes.FunctionDef) and isinstance(current.scope().parent,
                                                                                      nodes.ClassDef)
            current = current.parent
        return False

    def _in_outer_container(self, node: nodes.NodeNG) -> bool:
        current = node.parent
        while current is not None and not isinstance(current, (nodes.FunctionDef, nodes.Lambda, nodes.Module)):
            if isinstance(current, nodes.Call):
                call = self.context.nnx_call(current)
                if call is not None and call.name in _CONTAINER_NAMES:
                    return True
            current = current.parent
        return False


def _prefix(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


class DuplicateTransformArgument(_FamilyRule):
    """One object passed twice into an NNX transform (`f(m, m)`, `f(m, m.sub)`, `f(m, nnx.state(m))`).

    What it does:
        Flags a call of an NNX-transformed function (decorated with `@nnx.jit` & co.,
        wrapped as `nnx.jit(f)`, bound to a name, imported from another project module,
        or a direct form such as `nnx.eval_shape(f, ...)` / `nnx.cond(...)`) where two
        arguments (keywords included) are the same Module / Variable / Rngs / State, or
        one is a part of the other (`model` and `model.encoder`, `model` and
        `nnx.state(model)`, `model` and a state group of `nnx.split(model)`). Objects are
        followed through local assignments; unknown types stay silent. Silent where the flip
        changes nothing: the transform keeps graph mode (`graph=True, graph_updates=True`,
        `nnx.compat.*`, scope) or already chooses Tree Mode (`graph=False` or
        `graph_updates=False`; with `graph=True, graph_updates=False` `nnx.eval_shape` and
        `nnx.custom_vjp` reject shared inputs today already, whatever the defaults).

    Why is this bad?:
        Tree Mode transforms reject Variable aliasing among their inputs: `ValueError:
        Duplicate Param(...) found at paths: .args[0].bias, .args[1].bias ... does not
        support Variable aliasing`. In graph mode `nnx.grad(f, argnums=(0, 1))(m, m)`
        already put the whole gradient under the first argument. Pass the object once and
        use it twice inside, or pass an independent `nnx.clone(...)`; disjoint state
        groups (`nnx.split(m, nnx.Param, ...)`) are fine.

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references) — catalogue row A4
        - {spec}
    """

    code = "NNX103"
    fixes = ("pin",)
    symbol = "duplicate-transform-argument"
    kind = "raises"
    catalogue = ("A4",)
    message = (
        "`{first}` and `{second}` share Variables, both passed to `nnx.{transform}`-transformed "
        "`{function}`: Tree Mode raises ValueError"
    )
    help = (
        "`{first}` ({first_position}) and `{second}` ({second_position}) are the same object or one "
        "holds the other, and Tree Mode rejects Variable aliasing among inputs (ValueError: Duplicate "
        "...). Pass it once and use it twice inside, or pass `nnx.clone(...)`"
    )
    VALID = [
        Valid(
            "once-or-clone-r04-fix",
            """
            import jax.numpy as jnp
            from flax import nnx

            def run():
                model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                x = jnp.ones((3, 2))
                f = lambda teacher, student, x: jnp.mean((teacher(x) - 2 * student(x)) ** 2)
                one = nnx.grad(lambda m, x: f(m, m, x))(model, x)
                teacher = nnx.clone(model)
                two = nnx.grad(f, argnums=(0, 1))(teacher, model, x)
                return one, two
            """,
        ),
        Valid(
            "disjoint-groups-plain-jax-opt-in",
            """
            import jax
            from flax import nnx

            def run(x):
                model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                graphdef, params, rest = nnx.split(model, nnx.Param, ...)
                step = nnx.jit(lambda p, r: nnx.merge(graphdef, p, r)(x))
                step(params, rest)
                jax.jit(lambda a, b: a)(params, params)
                nnx.jit(lambda a, b: a, graph=True, graph_updates=True)(model, model)
                other = nnx.Linear(2, 2, rngs=nnx.Rngs(1))
                nnx.jit(lambda a, b: a(x) + b(x))(model, other)
                nnx.jit(lambda a, b: a)(x, x)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "same-object-r04",
            """
            import jax.numpy as jnp
            from flax import nnx

            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            x = jnp.ones((3, 2))
            f = lambda teacher, student, x: jnp.mean((teacher(x) - student(x)) ** 2)
            nnx.jit(f)(model, model, x)  # NNX103
            nnx.vmap(f, in_axes=(None, None, 0))(model, model, x)  # NNX103
            nnx.grad(f, argnums=(0, 1))(model, model, x)  # NNX103
            """,
            tree_mode=raises("ValueError", _DUPLICATE),
        ),
        Invalid(
            "object-and-its-part",
            """
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.encoder = nnx.Linear(2, 2, rngs=rngs)

            @nnx.jit
            def step(model, encoder, state):
                return None

            model = Model(nnx.Rngs(0))
            step(model, model.encoder, None)  # NNX103
            step(model, None, nnx.state(model))  # NNX103
            """,
            tree_mode=raises("ValueError", _DUPLICATE),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """The finding's transform called with one object at both argument positions
        (itself, a part of it, `nnx.state(...)` or a split group, as the facts say).
        pmap / shard_map / checkify / custom_vjp / scan are reproduced with nnx.jit (the
        same input check; tree_runtime lacks the first three). Control: an independent
        `nnx.clone(...)` at the second position."""
        return _duplicate_argument_reproduction(facts)

    def visit_call(self, node: nodes.Call) -> None:
        use = self.finder.use_of(node)
        if use is None or use.accepts_shared_inputs or use.name in ("fori_loop", "while_loop"):
            return
        refs = [(argument, self.classes.ref_of(argument.expression)) for argument in use.arguments]
        pair = _overlapping_pair(self.classes, refs)
        if pair is None:
            return
        first, ref_a, second, ref_b, kinds = pair
        first_part, second_part = _relative_parts(ref_a, ref_b)
        self.report(
            node,
            **_describe_use(use),
            first=_short(first.expression),
            second=_short(second.expression),
            first_position=first.label,
            second_position=second.label,
            kinds=[_KIND_WORDS.get(k, k) for k in kinds],
            first_part=first_part,
            second_part=second_part,
            first_view=_view_of(self.context, first.expression),
            second_view=_view_of(self.context, second.expression),
            confidence="static",
            pin=pin_sites_in(self.context, use.transform),
        )


class TransformReturnsInput(_ReturnRule):
    """An NNX-transformed function returns (part of) its input.

    What it does:
        Looks at the `return` values of functions given to NNX transforms (decorated,
        wrapped, lambdas, direct forms like `nnx.eval_shape(lambda m: m, model)` and
        `nnx.cond`) and flags a returned parameter, a returned Variable / submodule of
        it (`model.layer`, `model.kernel`), `nnx.state(param)` / `nnx.variables(param)` /
        a state group of `nnx.split(param)`, also inside a returned tuple, list, dict
        (`has_aux` outputs included). The parameter must be known to hold NNX state: an
        annotation, the arguments at the call sites in this file, a state view, or (marked
        `"confidence": "heuristic"`) a body that calls it or writes its Variables.
        `nnx.scan` / `fori_loop` / `while_loop` bodies return their carry by design and
        are skipped. Also flags one object returned twice, or an object with its state
        (`return model, nnx.state(model)` after building `model` inside): Tree Mode rejects
        duplicate outputs too (`graph=True` alone still accepts them). Returning arrays (`m.kernel[...]`, `m(x)`), `nnx.clone(...)` or
        `nnx.graphdef(m)` stays silent. Respects the transform's opt-in.

    Why is this bad?:
        Tree Mode transforms reject input Variables returned as outputs: `ValueError:
        Duplicate Param(...) found at paths: .args[0].bias, .out.bias ... does not support
        Variable aliasing`. Inputs are updated in place, so returning them is unnecessary;
        return arrays or `nnx.clone(...)` copies instead. A very common graph-mode idiom
        hit by this is `return loss, (logits, nnx.state(model, nnx.BatchStat))` under
        `has_aux=True`.

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references) — catalogue row A5
        - {spec}
    """

    code = "NNX104"
    fixes = ("pin",)
    symbol = "transform-returns-input"
    kind = "raises"
    catalogue = ("A5",)
    message = (
        "`nnx.{transform}`-transformed `{function}` returns `{returned}`, (part of) its input "
        "`{parameter}`: Tree Mode raises ValueError"
    )
    help = (
        "Tree Mode rejects input Variables returned as outputs (ValueError: Duplicate ...). Inputs are "
        "updated in place: don't return them; return arrays or `nnx.clone(...)` copies"
    )
    VALID = [
        Valid(
            "in-place-clone-arrays-r05-fix",
            """
            import jax
            import jax.numpy as jnp
            from flax import nnx

            def run():
                model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                x = jnp.ones((1, 2))
                @nnx.jit
                def step(m):
                    m.kernel[...] += 1.0
                    return m(x).sum()
                loss = step(model)
                snap = nnx.jit(lambda m: nnx.clone(nnx.state(m)))(model)
                pure = nnx.jit(lambda m: jax.tree.map(lambda v: v[...], nnx.state(m),
                               is_leaf=lambda v: isinstance(v, nnx.Variable)))(model)
                (l, aux), g = nnx.value_and_grad(lambda m: (m(x).sum(), nnx.clone(nnx.state(m, nnx.Param))),
                                                 has_aux=True)(model)
                return loss, snap, pure, aux
            """,
        ),
        Valid(
            "scan-carry-and-arrays",
            """
            from flax import nnx

            @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))
            def body(model, x):
                return model, model(x)

            @nnx.jit
            def forward(model, x):
                return model(x), model.kernel[...], x, nnx.graphdef(model)

            @nnx.jit(graph=True, graph_updates=True)
            def identity(model: nnx.Linear):
                return model
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "returns-r05",
            """
            import jax.numpy as jnp
            from flax import nnx

            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            x = jnp.ones((1, 2))
            nnx.jit(lambda m: m)(model)  # NNX104
            nnx.jit(lambda m: m.kernel)(model)  # NNX104
            nnx.jit(lambda m: nnx.state(m))(model)  # NNX104
            nnx.value_and_grad(lambda m: (jnp.sum(m(x)), nnx.state(m)), has_aux=True)(model)  # NNX104
            nnx.eval_shape(lambda m: m, model)  # NNX104
            """,
            tree_mode=raises("ValueError", _DUPLICATE),
        ),
        Invalid(
            "train-step-returns-model",
            """
            from flax import nnx

            @nnx.jit
            def train_step(model: nnx.Module, batch):
                loss = model(batch).mean()
                return loss, model  # NNX104
            """,
            tree_mode=raises("ValueError", _DUPLICATE),
        ),
        Invalid(
            "returns-model-and-its-state",
            """
            from flax import nnx

            @nnx.jit
            def create(rngs):
                model = nnx.Linear(2, 2, rngs=rngs)
                state = nnx.state(model)
                return model, state  # NNX104
            """,
            tree_mode=raises("ValueError", _DUPLICATE),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """The finding's transform over a function returning the same kind of part of its
        input at the same position: the input, an attribute (`m.kernel`), `nnx.state(m)` /
        a split group, inside `has_aux` aux for grad / value_and_grad; or an object built
        inside and returned with its state. Control: `nnx.clone(...)` of the returned part."""
        return _returned_input_reproduction(facts)
    finding_code = "NNX104"


class SharedRngs(_ClassAliasRule):
    """One `nnx.Rngs` (or a stream of it) stored by several modules of one model.

    What it does:
        Replays each NNX Module class's construction (as NNX101) and flags the store that
        makes one `Rngs` object — an `rngs` parameter (by name or `nnx.Rngs` annotation),
        or a stream of it (`rngs.dropout`, `rngs['noise']`) — reachable at a second path:
        a module that keeps `self.rngs = rngs` and passes the same `rngs` to a child that
        keeps it too, two children that both keep it, or a list of such children built in
        a loop. Storing `rngs.fork()` or a fresh `nnx.Rngs(...)` is the fix and stays
        silent; passing `rngs` to flax layers is fine (`nnx.Linear` only draws from it,
        `nnx.Dropout` / `nnx.MultiHeadAttention` store a fork). Opt-in policy as NNX101.

    Why is this bad?:
        An `Rngs` holds `RngKey` / `RngCount` Variables. Stored twice, they are shared
        references: every Tree Mode transform raises `ValueError: Duplicate RngCount(...)
        found at paths: .args[0].noise.rngs.noise.count, .args[0].rngs.noise.count`. Give
        each module its own stream state with `rngs.fork()`.

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references) — catalogue rows A7, A8
        - {spec}
    """

    code = "NNX105"
    fixes = ("pin", "fork-shared-rngs")
    symbol = "shared-rngs"
    kind = "raises"
    catalogue = ("A7",)
    category = "rngs"
    message = (
        "`{class_name}` stores the same Rngs (`{shared}`) at `self.{first_path}` and "
        "`self.{second_path}`: Tree Mode raises ValueError"
    )
    help = (
        "Tree Mode rejects the shared RngKey/RngCount in every NNX transform (ValueError: Duplicate "
        "RngCount ...). Store `rngs.fork()` instead, so each module has its own stream state"
    )
    VALID = [
        Valid(
            "fork-r84-fix",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Noise(nnx.Module):
                def __init__(self, rngs):
                    self.rngs = rngs.fork()
                def __call__(self, x):
                    return x + self.rngs.noise.normal(x.shape)

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.noise = Noise(rngs)
                    self.rngs = rngs.fork()
                def __call__(self, x):
                    return self.noise(x) * self.rngs.noise.uniform(x.shape)

            model = Model(nnx.Rngs(noise=0))
            y1 = nnx.jit(lambda m, x: m(x))(model, jnp.ones(2))
            """,
        ),
        Valid(
            "flax-layers-draw-or-fork",
            """
            from flax import nnx

            class Block(nnx.Module):
                def __init__(self, rngs: nnx.Rngs):
                    self.rngs = rngs
                    self.linear = nnx.Linear(2, 2, rngs=rngs)
                    self.dropout = nnx.Dropout(0.1, rngs=rngs)
                    self.attention = nnx.MultiHeadAttention(2, 2, 2, rngs=rngs, decode=False)
                    self.key = rngs.params()
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "parent-and-child-r84",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Noise(nnx.Module):
                def __init__(self, rngs):
                    self.rngs = rngs
                def __call__(self, x):
                    return x + self.rngs.noise.normal(x.shape)

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.rngs = rngs
                    self.noise = Noise(rngs)  # NNX105

            model = Model(nnx.Rngs(noise=0))
            y = nnx.jit(lambda m, x: m(x))(model, jnp.ones(2))
            """,
            tree_mode=raises("ValueError", "Duplicate RngCount"),
        ),
        Invalid(
            "stream-and-children-in-loop",
            """
            from flax import nnx

            class Sampler(nnx.Module):
                def __init__(self, rngs: nnx.Rngs):
                    self.stream = rngs.dropout

            class Model(nnx.Module):
                def __init__(self, rngs: nnx.Rngs, n: int):
                    self.rngs = rngs
                    self.sampler = Sampler(rngs)  # NNX105
                    self.blocks = nnx.List()
                    for _ in range(n):
                        self.blocks.append(Sampler(rngs))  # NNX105
            """,
            tree_mode=raises("ValueError", "Duplicate RngCount"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """The class storing one `nnx.Rngs` (or a stream of it, as the facts' parts say)
        at both paths, through nnx.jit or the API the file uses it with. Control: the
        second path stores `rngs.fork()` (the r84 fix)."""
        return _class_alias_reproduction(facts, "fork")


class TransformBuildsFromInput(_ReturnRule):
    """A transform builds a Module that stores the transform's own input (`nnx.jit(Model)(rngs)`).

    What it does:
        Flags `nnx.jit(Model)(rngs)`, `nnx.eval_shape(Model, rngs)`,
        `nnx.eval_shape(lambda r: Model(r), rngs)` and transformed factory functions
        returning `Model(rngs)`, where `Model` (a project class, replayed as in NNX101)
        keeps that argument as it is (`self.rngs = rngs`, or passes it to a child that
        does). Creating the `Rngs` inside the transformed function
        (`nnx.eval_shape(lambda: Model(nnx.Rngs(0)))`) or storing `rngs.fork()` stays
        silent. Respects the transform's opt-in.

    Why is this bad?:
        The output then holds the input's Variables, which Tree Mode transforms reject:
        `ValueError: Duplicate RngCount(...) found at paths: .args[0].default.count,
        .out.rngs.default.count ... does not support Variable aliasing`.

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references) — catalogue row A8
        - {spec}
    """

    code = "NNX106"
    fixes = ("pin",)
    symbol = "transform-builds-from-input"
    kind = "raises"
    catalogue = ("A8",)
    message = (
        "`nnx.{transform}` builds `{class_name}`, which keeps its input `{parameter}` at "
        "`.{stored_path}`: Tree Mode raises ValueError"
    )
    help = (
        "The output aliases the input {kind}, which Tree Mode rejects (ValueError: Duplicate ...). "
        "Create the Rngs inside the transformed function, or store `rngs.fork()` in `{class_name}`"
    )
    VALID = [
        Valid(
            "rngs-created-inside-or-forked",
            """
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                    self.rngs = rngs

            class Forked(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                    self.rngs = rngs.fork()

            a = nnx.jit(lambda: Model(nnx.Rngs(0)))()
            b = nnx.eval_shape(lambda: Model(rngs=nnx.Rngs(0)))
            c = nnx.jit(Forked)(nnx.Rngs(0))
            d = nnx.eval_shape(Forked, nnx.Rngs(0))
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "jit-and-eval-shape-r85",
            """
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                    self.rngs = rngs

            a = nnx.jit(Model)(nnx.Rngs(0))  # NNX106
            b = nnx.eval_shape(Model, nnx.Rngs(0))  # NNX106
            c = nnx.eval_shape(lambda r: Model(r), nnx.Rngs(0))  # NNX106

            @nnx.jit
            def create(rngs: nnx.Rngs):
                return Model(rngs)  # NNX106
            """,
            tree_mode=raises("ValueError", "Duplicate RngCount"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """`nnx.jit` / `nnx.eval_shape` applied to the class itself or to a function
        building it, given an argument of the finding's kind at the finding's position,
        which the class stores at `stored_path`. Control: the argument created inside."""
        return _builds_from_input_reproduction(facts)
    finding_code = "NNX106"


class ArgumentHoldsArgument(_FamilyRule):
    """A transform argument holds another argument (`ModelAndOptimizer` passed with its model).

    What it does:
        Flags a call of an NNX-transformed function where one argument was built holding
        another one: `nnx.ModelAndOptimizer(model, tx)` (it keeps `.model`) passed next to
        `model`, a project container class (a `TrainState`-like `nnx.Pytree`) that keeps
        the model, or a model that keeps the `rngs` also passed. `nnx.Optimizer` does not
        hold the model and stays silent. Respects the transform's opt-in.

    Why is this bad?:
        The held object is reachable twice among the inputs; Tree Mode transforms raise
        `ValueError: Duplicate Param(...) found at paths: .args[0].bias,
        .args[1].model.bias ... does not support Variable aliasing`. Use `nnx.Optimizer`
        (which does not hold the model) with `optimizer.update(model, grads)`, or pass only
        the holder.

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references) — catalogue rows A9, A7
        - {spec}
    """

    code = "NNX107"
    fixes = ("pin",)
    symbol = "argument-holds-argument"
    kind = "raises"
    catalogue = ("A9",)
    message = (
        "`{holder}` holds `{held}` at `.{held_path}`; both passed to `nnx.{transform}`-transformed "
        "`{function}`: Tree Mode raises ValueError"
    )
    help = (
        "`{holder}` is {holder_position} and `{held}` is {held_position}: Tree Mode rejects the "
        "duplicate Variables (ValueError: Duplicate ...). Pass only one of them; for optimizers use "
        "`nnx.Optimizer` (it does not hold the model) with `optimizer.update(model, grads)`"
    )
    VALID = [
        Valid(
            "optimizer-r81-fix",
            """
            import jax.numpy as jnp
            import optax
            from flax import nnx

            def run():
                model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
                @nnx.jit
                def train_step(model, optimizer, x):
                    grads = nnx.grad(lambda m: jnp.sum(m(x) ** 2))(model)
                    optimizer.update(model, grads)
                train_step(model, optimizer, jnp.ones((1, 2)))
                return int(optimizer.step[...])
            """,
        ),
        Valid(
            "holder-alone",
            """
            import optax
            from flax import nnx

            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            optimizer = nnx.ModelAndOptimizer(model, optax.sgd(0.1))

            @nnx.jit
            def train_step(optimizer, x):
                return optimizer.model(x)

            train_step(optimizer, None)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "model-and-optimizer-r81",
            """
            import jax.numpy as jnp
            import optax
            from flax import nnx

            def run():
                model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                optimizer = nnx.ModelAndOptimizer(model, optax.sgd(0.1))
                @nnx.jit
                def train_step(model, optimizer, x):
                    grads = nnx.grad(lambda m: jnp.sum(m(x) ** 2))(model)
                    optimizer.update(grads)
                train_step(model, optimizer, jnp.ones((1, 2)))  # NNX107
            """,
            tree_mode=raises("ValueError", _DUPLICATE),
        ),
        Invalid(
            "model-keeps-rngs-also-passed",
            """
            from flax import nnx

            class Noisy(nnx.Module):
                def __init__(self, rngs):
                    self.rngs = rngs

            rngs = nnx.Rngs(0)
            model = Noisy(rngs)
            nnx.jit(lambda m, r: None)(model, rngs)  # NNX107
            """,
            tree_mode=raises("ValueError", "Duplicate RngCount"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """The holder (a real `nnx.ModelAndOptimizer`, else a Module keeping the held
        object at `held_path`) and the held object at the finding's positions of the
        finding's transform. Control: `nnx.Optimizer` (the r81 fix) or an independent copy."""
        return _argument_holds_argument_reproduction(facts)

    def visit_call(self, node: nodes.Call) -> None:
        use = self.finder.use_of(node)
        if use is None or use.accepts_shared_inputs or use.name in ("fori_loop", "while_loop"):
            return
        refs = [(argument, self.classes.ref_of(argument.expression)) for argument in use.arguments]
        for holder, holder_ref in refs:
            if holder_ref is None or holder_ref.root[0] != "new" or holder_ref.path:
                continue
            construction = holder_ref.root[1]
            for path, held_ref, _container in self.classes.stored_items(construction)[1:]:
                if held_ref is None:
                    continue
                for other, other_ref in refs:
                    if other is holder or other_ref is None or not other_ref.overlaps(held_ref):
                        continue
                    kind = self.classes.kind_of(other_ref)
                    if kind not in STATEFUL_KINDS:
                        continue
                    cls = self.classes.class_of(construction)
                    self.report(
                        node,
                        **_describe_use(use),
                        holder=_short(holder.expression),
                        holder_class=cls.short_name if cls else None,
                        holder_position=holder.label,
                        held=_short(other.expression),
                        held_path=join_path(path),
                        held_position=other.label,
                        kind=_KIND_WORDS.get(kind, kind),
                        confidence="static",
                        pin=pin_sites_in(self.context, use.transform),
                    )
                    return


class TiedModelInLoop(_FamilyRule):
    """A model with shared Variables carried through `nnx.fori_loop` / `nnx.while_loop`.

    What it does:
        Flags `nnx.fori_loop(...)` / `nnx.while_loop(...)` whose `init_val` is (or
        contains) an instance of a class with aliased attributes (the NNX101 / NNX102 /
        NNX105 findings), or contains one object twice. Respects the loop's opt-in
        (`graph=True, graph_updates=True`, `nnx.compat.*`, scope).

    Why is this bad?:
        Unlike every other NNX transform, Tree Mode `fori_loop` / `while_loop` do not
        check for aliasing: each alias is carried as an independent copy and written back
        in path order, so the last alias wins and the other updates are silently lost
        (`a=1.0 b=1.0` instead of `3.0` in the catalogue's reproduction); inside the body
        the aliases diverge. Untie the model (store the Variable once) before looping.

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references) — catalogue row A6
        - {spec}
    """

    code = "NNX108"
    fixes = ("pin",)
    symbol = "tied-model-in-loop"
    kind = "silent"
    catalogue = ("A6",)
    message = "`nnx.{transform}` carries {what}: Tree Mode silently loses some updates"
    help = (
        "Tree Mode loops do not check aliasing: each alias is carried as an independent copy and all but "
        "one of the updates are silently lost. Untie the model (store the Variable once and tie by use) "
        "before looping"
    )
    VALID = [
        Valid(
            "untied-model-loop",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Untied(nnx.Module):
                def __init__(self):
                    self.a = nnx.Param(jnp.ones(()))
                def __call__(self, x):
                    self.a[...] += 1.0
                    return x * self.a[...] * self.a[...]

            m = Untied()
            m = nnx.fori_loop(0, 2, lambda i, m: (m(jnp.ones(())), m)[1], m)
            """,
        ),
        Valid(
            "opted-in-loop",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Tied(nnx.Module):
                def __init__(self):
                    self.a = nnx.Param(jnp.ones(())); self.b = self.a

            m = Tied()
            m = nnx.compat.fori_loop(0, 2, lambda i, m: m, m)
            m = nnx.while_loop(lambda m: m.a[...] < 3, lambda m: m, m, graph=True, graph_updates=True)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "tied-model-r75",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Tied(nnx.Module):
                def __init__(self):
                    self.a = nnx.Param(jnp.ones(())); self.b = self.a
                def __call__(self, x):
                    self.a[...] += 1.0
                    return x * self.a[...] * self.b[...]

            x = jnp.ones(())
            m = Tied()
            m = nnx.fori_loop(0, 2, lambda i, m: (m(x), m)[1], m)  # NNX108
            m = nnx.while_loop(lambda m: m.a[...] < 3, lambda m: (m(x), m)[1], m)  # NNX108
            """,
            tree_mode=differs("the tied attributes end at a=1.0 b=1.0 instead of 3.0 (updates lost)"),
        ),
        Invalid(
            "same-object-twice-in-carry",
            """
            from flax import nnx

            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            state = nnx.fori_loop(0, 3, lambda i, c: c, (model, model))  # NNX108
            """,
            tree_mode=differs("each copy is updated independently; the last one written back wins"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """The tied class (or the carry holding one object twice) in the finding's loop;
        see :func:`_tied_loop_reproduction` for why both Tree Mode oracles observe the lost
        update although tree_runtime raises where flax stays silent (deviation A6).
        Control: the object stored (carried) once."""
        return _tied_loop_reproduction(facts)

    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        if call is None or call.name not in ("fori_loop", "while_loop"):
            return
        use = self.finder.use_of(node)
        if use is None or use.keeps_graph or not use.arguments:
            return
        init = use.arguments[0].expression
        parts = list(init.elts) if isinstance(init, (nodes.Tuple, nodes.List)) else [init]
        for part in parts:
            cls = self.classes.class_of(part)
            if cls is None or cls.definition is None:
                continue
            aliases = self.classes.construction(cls.definition).aliases
            if aliases:
                alias = aliases[0]
                what = (f"`{_short(part)}`, a `{cls.short_name}` whose `{join_path(alias.first_path)}` and "
                        f"`{join_path(alias.second.path)}` are one object")
                self.report(node, transform=call.name, what=what, class_name=cls.short_name,
                            first_path=join_path(alias.first_path), second_path=alias.second.display_path,
                            argument=_short(part), confidence="static",
                            kind=_KIND_WORDS.get(alias.kind, alias.kind), **_alias_shape(alias),
                            pin=pin_sites_in(self.context, call))
                return
        refs = [(Argument(f"init_val[{i}]", i, part), self.classes.ref_of(part)) for i, part in enumerate(parts)]
        pair = _overlapping_pair(self.classes, refs)
        if pair is not None:
            first, ref_a, second, ref_b, kinds = pair
            first_part, second_part = _relative_parts(ref_a, ref_b)
            what = f"`{_short(first.expression)}` and `{_short(second.expression)}`, one object twice"
            self.report(node, transform=call.name, what=what, class_name=None, first_path=first.label,
                        second_path=second.label, argument=_short(init), confidence="static",
                        kind=_KIND_WORDS.get(kinds[0], kinds[0]) if not first_part else
                        _KIND_WORDS.get(kinds[1], kinds[1]),
                        first_part=first_part, second_part=second_part, container_type=None,
                        pin=pin_sites_in(self.context, call))


for _rule in (AliasedAttribute, RepeatedContainerElement, DuplicateTransformArgument, TransformReturnsInput,
              SharedRngs, TransformBuildsFromInput, ArgumentHoldsArgument, TiedModelInLoop):
    _rule.__doc__ = _rule.__doc__.replace("{spec}", _SPEC)


# ---------------------------------------------------------------------------------------
# Reproduction builders (nnx-lint --confirm): programs with the finding's shape
# ---------------------------------------------------------------------------------------
#
# Every program uses only names both `tree_runtime` and `flax.nnx` provide. A finding's
# attribute paths are rebuilt with `Box`, a plain Module whose constructor stores its
# keyword arguments, `nnx.List` for `[i]` positions and `nnx.Sequential` where the finding
# names one; the shared object is a flax layer of the finding's kind.
#
# Paths, keys and names come from the analysed code: they reach the program only through
# `nnx_lint.program_text` (safe names as names, other keys as `repr` literals, indices as
# validated ints); a fact it cannot place safely means no reproduction (`UnsafeFact`).

_BOX = '''
class Box(nnx.Module):
    """A plain Module storing its keyword arguments: the finding's attribute paths."""

    def __init__(self, **children):
        for name, child in children.items():
            setattr(self, name, child)
'''
_PATH_TOKEN = re.compile(r"\.?([A-Za-z_]\w*)|\[(\d+)\]|\[(?:'([^']*)'|\"([^\"]*)\")\]")
#: Transforms the reproductions run as they are (both tree_runtime and flax implement
#: them); any other transform (pmap, shard_map, checkify, custom_vjp, ...) is reproduced
#: with nnx.jit: the input/output aliasing check is the same in every Tree Mode transform.
_REPRO_TRANSFORMS = frozenset({"jit", "vmap", "grad", "value_and_grad", "remat", "eval_shape", "cond", "switch"})
#: Graph APIs the reproductions can pass a model through (both implementations reject
#: shared references there).
_REPRO_GRAPH_APIS = {
    "split": "nnx.split(model)",
    "state": "nnx.state(model)",
    "graphdef": "nnx.graphdef(model)",
    "clone": "nnx.clone(model)",
    "iter_graph": "list(nnx.iter_graph(model))",
}


def _path_parts(path: str | None) -> list:
    """``"blocks[0].stream"`` -> ``["blocks", 0, "stream"]`` (strings: attributes or keys;
    neither is checked here: :func:`nnx_lint.program_text.access` places them safely).
    A path of another shape is no path the program can rebuild: :class:`UnsafeFact`."""
    parts: list = []
    position = 0
    text = path or ""
    while position < len(text):
        match = _PATH_TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise UnsafeFact(f"{shown(path)} is not an attribute path")
        name, number, key_a, key_b = match.groups()
        if number is not None:
            parts.append(bounded_index(int(number), f"the index in the path {shown(path)}"))
        else:
            parts.append(name if name is not None else (key_a or key_b or ""))
        position = match.end()
    return parts


def _access(base: str, path: str | None) -> str:
    """Source text reaching ``path`` from ``base``."""
    return access(base, _path_parts(path))


def _emit_tree(tree, container_type: str | None = None) -> str:
    """Source text building a nested tree: dict of str -> Box, of int -> List/Sequential."""
    if not isinstance(tree, dict):
        return tree
    if tree and all(isinstance(k, int) for k in tree):
        items = [_emit_tree(tree[i], container_type) if i in tree else
                 ("nnx.relu" if container_type == "Sequential" else "Box()") for i in range(max(tree) + 1)]
        if container_type == "Sequential":
            return "nnx.Sequential(" + ", ".join(items) + ")"
        return "nnx.List([" + ", ".join(items) + "])"
    if container_type == "Sequential" and list(tree) == ["layers"] and isinstance(tree["layers"], dict) \
            and tree["layers"] and all(isinstance(k, int) for k in tree["layers"]):
        return _emit_tree(tree["layers"], container_type)
    arguments = keyword_arguments({name: _emit_tree(child, container_type) for name, child in tree.items()
                                   if isinstance(name, str)})
    return f"Box({arguments})"


def _tree_of(stores: list[tuple[str, str]]) -> dict:
    """``[(path, expression)]`` -> nested dict (later stores at one path win)."""
    tree: dict = {}
    for path, expression in stores:
        parts = _path_parts(path)
        if not parts:
            continue
        node = tree
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[parts[-1]] = expression
    return tree


def _shared_object(kind: str | None, parts: list[str | None], scalar: bool = False) -> str:
    """A fresh object of ``kind`` that has every attribute path in ``parts``."""
    wanted = [p for p in parts if p]
    if kind == "Rngs":
        streams = [_path_parts(p)[0] for p in wanted if _path_parts(p) and isinstance(_path_parts(p)[0], str)]
        stream = identifier(streams[0], "the Rngs stream") if streams else "default"
        return f"nnx.Rngs({stream}=0)"
    if kind == "Variable" and not wanted:
        return "nnx.Param(jnp.ones(()))" if scalar else "nnx.Param(jnp.ones((2, 2)))"
    if not wanted or all(p in ("kernel", "bias") for p in wanted):
        return "Box(w=nnx.Param(jnp.ones(())))" if scalar else "nnx.Linear(2, 2, rngs=nnx.Rngs(0))"
    if all(p == "embedding" for p in wanted):
        return "nnx.Embed(4, 2, rngs=nnx.Rngs(0))"
    return _emit_tree(_tree_of([(p, "nnx.Linear(2, 2, rngs=nnx.Rngs(0))") for p in wanted]))


def _viewed(expression: str, part: str | None, view: str | None) -> str:
    """``expression`` reached at ``part``, then seen through ``view`` (state / split group)."""
    text = _access(expression, part)
    if view == "state":
        return f"nnx.state({text})"
    if view == "split":
        return f"nnx.split({text})[1]"
    return text


def _index_of(label: str | None) -> tuple[str, int | str]:
    """``"args[1]"`` -> ``("args", 1)``; ``"kwargs['x']"`` -> ``("kwargs", "x")``."""
    match = re.match(r"(\w+)\[(?:(\d+)|'([^']*)'|\"([^\"]*)\")\]", label or "")
    if match is None:
        return "args", 0
    group, number, key_a, key_b = match.groups()
    return group, bounded_index(int(number), "the argument position") if number is not None else (key_a or key_b)


def _applied(transform: str | None, placed: dict, function: str = "f", result: str = "None",
             differentiated: list[str] | None = None) -> tuple[str, str]:
    """``(definition, call)``: ``function`` taking the values in ``placed`` (label -> source)
    at their positions (free positions get an array), transformed by ``transform``.

    The function returns ``result`` (source over the parameters ``p0, p1, ...`` and
    keyword parameters), except for grad/value_and_grad, which return a scalar loss
    (and ``result`` as aux), differentiating the values at ``differentiated`` (default: all).
    """
    transform = transform if transform in _REPRO_TRANSFORMS else "jit"
    positional: dict[int, str] = {}
    diff_indices: list[int] = []
    keywords: dict[str, str] = {}
    for label, source in placed.items():
        group, index = _index_of(label)
        if group == "kwargs" and transform == "jit" and is_identifier(index):
            keywords[index] = source
        else:
            position = index if isinstance(index, int) else len(positional)
            positional[position] = source
            if differentiated is None or label in differentiated:
                diff_indices.append(position)
    # vmap needs one mapped argument: an array after the others
    count = (max(positional) + 1) if positional else 0
    arguments = [positional.get(i, "jnp.ones(2)") for i in range(count)]
    parameters = [f"p{i}" for i in range(count)] + list(keywords)
    if transform == "vmap":
        arguments.append("jnp.ones(2)")
        parameters.append("x")
    signature = ", ".join(parameters)
    body = "jnp.sum(jnp.ones(()))" if transform in ("grad", "value_and_grad") else result
    if transform in ("grad", "value_and_grad") and result != "None":
        body = f"(jnp.sum(jnp.ones(())), {result})"
    definition = f"def {function}({signature}):\n    return {body}\n"
    passed = ", ".join(arguments + [f"{k}={v}" for k, v in keywords.items()])
    if transform == "vmap":
        axes = ", ".join(["None"] * (len(arguments) - 1) + ["0"])
        out = ", out_axes=None" if result != "None" else ""  # a returned input is not mapped
        call = f"nnx.vmap({function}, in_axes=({axes},){out})({passed})"
    elif transform in ("grad", "value_and_grad"):
        # every object differentiated (graph mode rejects one object both differentiated and not)
        indices = sorted(diff_indices) or [0]
        argnums = str(indices[0]) if len(indices) == 1 else "(" + ", ".join(map(str, indices)) + ")"
        aux = ", has_aux=True" if result != "None" else ""
        call = f"nnx.{transform}({function}, argnums={argnums}{aux})({passed})"
    elif transform == "eval_shape":
        call = f"nnx.eval_shape({function}{', ' if passed else ''}{passed})"
    elif transform == "cond":
        call = f"nnx.cond(True, {function}, {function}{', ' if passed else ''}{passed})"
    elif transform == "switch":
        call = f"nnx.switch(0, [{function}, {function}]{', ' if passed else ''}{passed})"
    else:
        call = f"nnx.{transform}({function})({passed})"
    return definition, call


def _code(*blocks: str) -> str:
    return "\n".join(textwrap.dedent(block).strip("\n") for block in blocks if block) + "\n"


def _class_alias_reproduction(facts: dict, tie_fix: str) -> Reproduction:
    """NNX101 / NNX102 / NNX105: the finding's class (or container), with one object
    stored at both paths, passed through the API the file uses it with (else nnx.jit).

    ``tie_fix`` is the control's Tree Mode rewrite: ``"once"`` (store it once, tie by
    use), ``"distinct"`` (a distinct object at the second path) or ``"fork"``.
    """
    kind = facts.get("kind")
    first_part, second_part = facts.get("first_part"), facts.get("second_part")
    shared = _shared_object(kind, [first_part, second_part])
    container_type = facts.get("container_type")
    first, second = facts.get("first_path") or "a", facts.get("second_path") or "b"

    def build(second_value: str | None) -> str:
        stores = [(first, _access("shared", first_part))]
        if second_value is not None:
            stores.append((second, second_value))
        tree = _tree_of(stores)
        class_name = facts.get("class_name")
        if is_identifier(class_name) and all(isinstance(k, str) for k in tree):
            lines = [f"class {class_name}(nnx.Module):", "    def __init__(self):", f"        shared = {shared}"]
            lines += ["        " + set_attribute("self", name, _emit_tree(child, container_type))
                      for name, child in tree.items()]
            return "\n".join(lines) + f"\n\nmodel = {class_name}()\n"
        return f"shared = {shared}\nmodel = {_emit_tree(tree, container_type)}\n"

    use = facts.get("used_with")
    if use in _REPRO_GRAPH_APIS:
        apply = f"{_REPRO_GRAPH_APIS[use]}\nreturn 'ran'"
    elif use in _REPRO_TRANSFORMS:
        definition, call = _applied(use, {"args[0]": "model"})
        apply = f"{definition}{call}\nreturn 'ran'"
    else:  # no use in the file, or one reproduced by nnx.jit (see _REPRO_TRANSFORMS)
        definition, call = _applied("jit", {"args[0]": "model"})
        apply = f"{definition}{call}\nreturn 'ran'"
    if tie_fix == "once":
        fixed = None
    elif tie_fix == "fork":
        fixed = _access("shared.fork()", second_part)
    else:
        fixed = _access(_shared_object(kind, [first_part, second_part]), second_part)
    body = _code(_BOX, build(_access("shared", second_part)), apply)
    control = _code(_BOX, build(fixed), apply)
    return Reproduction(body, expect_error="aliasing", control=control)


def _duplicate_argument_reproduction(facts: dict) -> Reproduction:
    """NNX103: one object (or it and its part / its state) at the finding's two positions."""
    kinds = facts.get("kinds") or ["Module", "Module"]
    first_part, second_part = facts.get("first_part"), facts.get("second_part")
    kind = kinds[0] if not first_part else (kinds[1] if not second_part else "Module")
    shared = _shared_object(kind, [first_part, second_part])
    first_label, second_label = facts.get("first_position") or "args[0]", facts.get("second_position") or "args[1]"
    first = _viewed("shared", first_part, facts.get("first_view"))
    second = _viewed("shared", second_part, facts.get("second_view"))
    definition, call = _applied(facts.get("transform"), {first_label: first, second_label: second})
    # the rewrite: pass the object once (the other position gets an independent copy)
    fixed = _viewed("nnx.clone(shared)", second_part, facts.get("second_view"))
    fixed_definition, fixed_call = _applied(facts.get("transform"), {first_label: first, second_label: fixed})
    body = _code(_BOX, f"shared = {shared}", definition, call, "return 'ran'")
    control = _code(_BOX, f"shared = {shared}", fixed_definition, fixed_call, "return 'ran'")
    return Reproduction(body, expect_error="aliasing", control=control)


def _returned_input_reproduction(facts: dict) -> Reproduction:
    """NNX104: the transformed function returns the finding's kind of part of its input
    (the input itself, an attribute, ``nnx.state`` / a split group, in ``has_aux`` aux),
    or builds an object and returns it twice."""
    transform = facts.get("transform")
    if facts.get("duplicate_output"):
        views = facts.get("views") or [None, "state"]
        returned = ", ".join(_viewed("m", None, view) for view in views)
        body = _code(f"""
            def create():
                m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                return {returned}
            nnx.jit(create)()
            return 'ran'
            """)
        control = _code("""
            def create():
                return nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            model = nnx.jit(create)()
            return len(nnx.state(model))
            """)
        return Reproduction(body, expect_error="aliasing", control=control)
    part, view = facts.get("part"), facts.get("view")
    kind = facts.get("kind")
    if kind == "State":
        kind = "Module"
    holder = _shared_object(kind if not part else "Module", [part])
    position = facts.get("position") if isinstance(facts.get("position"), int) else 0
    position = bounded_index(position, "the argument position")
    label = f"args[{position}]" if transform not in ("cond", "switch") else f"operands[{position}]"
    parameter = f"p{position}"
    returned = _viewed(parameter, part, view)
    if facts.get("has_aux") or transform in ("grad", "value_and_grad"):
        transform = transform if transform in ("grad", "value_and_grad") else "value_and_grad"
    elif transform not in _REPRO_TRANSFORMS:
        transform = "jit"
    definition, call = _applied(transform, {label: "model"}, result=returned)
    fixed_definition, fixed_call = _applied(transform, {label: "model"}, result=f"nnx.clone({returned})")
    body = _code(_BOX, f"model = {holder}", definition, call, "return 'ran'")
    control = _code(_BOX, f"model = {holder}", fixed_definition, fixed_call, "return 'ran'")
    return Reproduction(body, expect_error="aliasing", control=control)


def _builds_from_input_reproduction(facts: dict) -> Reproduction:
    """NNX106: a transform builds the finding's class from an argument the class stores."""
    class_name = identifier_or(facts.get("class_name"), "Model")
    kind = facts.get("kind") or "Rngs"
    argument = _shared_object(kind, [])
    position = facts.get("position") if isinstance(facts.get("position"), int) else 0
    position = bounded_index(position, "the argument position")
    parameters = [f"p{i}" for i in range(position)] + ["arg"]
    stored = facts.get("stored_path") or "rngs"
    tree = _tree_of([(stored, "arg")])
    stores = "\n".join("        " + set_attribute("self", name, _emit_tree(child)) for name, child in tree.items()
                       if isinstance(name, str)) or "        pass"
    model = f"class {class_name}(nnx.Module):\n    def __init__(self, {', '.join(parameters)}):\n{stores}\n"
    arguments = ", ".join(["jnp.ones(2)"] * position + [argument])
    transform = facts.get("transform") if facts.get("transform") in ("jit", "eval_shape") else "jit"
    direct = facts.get("function") == facts.get("class_name")
    function = class_name if direct else f"lambda {', '.join(parameters)}: {class_name}({', '.join(parameters)})"
    if transform == "eval_shape":
        call = f"nnx.eval_shape({function}, {arguments})"
    else:
        call = f"nnx.jit({function})({arguments})"
    body = _code(_BOX, model, call, "return 'ran'")
    # the rewrite: create the argument inside the transformed function
    inside = ", ".join(["jnp.ones(2)"] * position + [argument])
    fixed = (f"nnx.eval_shape(lambda: {class_name}({inside}))" if transform == "eval_shape"
             else f"nnx.jit(lambda: {class_name}({inside}))()")
    control = _code(_BOX, model, fixed, "return 'ran'")
    return Reproduction(body, expect_error="aliasing", control=control)


def _argument_holds_argument_reproduction(facts: dict) -> Reproduction:
    """NNX107: an argument built holding another argument, both passed to the transform."""
    kind = facts.get("kind") or "Module"
    held = _shared_object(kind, [])
    holder_label, held_label = facts.get("holder_position") or "args[1]", facts.get("held_position") or "args[0]"
    if facts.get("holder_class") == "ModelAndOptimizer":
        setup = f"import optax\nheld = {held}\nholder = nnx.ModelAndOptimizer(held, optax.sgd(0.1))"
        fixed_setup = f"import optax\nheld = {held}\nholder = nnx.Optimizer(held, optax.sgd(0.1), wrt=nnx.Param)"
    else:
        path = facts.get("held_path") or "model"
        tree = _tree_of([(path, "held")])
        setup = f"held = {held}\nholder = {_emit_tree(tree)}"
        fixed_setup = f"held = {held}\nholder = {_emit_tree(_tree_of([(path, 'nnx.clone(held)')]))}"
    definition, call = _applied(facts.get("transform"), {holder_label: "holder", held_label: "held"})
    # the rewrite differentiates the model only (an nnx.Optimizer holds integer state)
    fixed_definition, fixed_call = _applied(facts.get("transform"), {holder_label: "holder", held_label: "held"},
                                            differentiated=[held_label])
    body = _code(_BOX, setup, definition, call, "return 'ran'")
    control = _code(_BOX, fixed_setup, fixed_definition, fixed_call, "return 'ran'")
    return Reproduction(body, expect_error="aliasing", control=control)


def _tied_loop_reproduction(facts: dict) -> Reproduction:
    """NNX108: the finding's tied model (or a carry holding one object twice) in the loop.

    The body updates the alias that comes first in flattening order (sorted attribute
    names, list positions): Tree Mode writes the carried copies back in that order, so the
    other alias's stale copy overwrites the update. The observation is the value of both
    aliases after the loop: graph mode gives the updated value at both, flax in Tree Mode
    silently gives the initial one at both. tree_runtime follows the FLIP and rejects the
    aliased carry (aliasing ValueError "Duplicate ..." before anything runs); the program
    catches exactly that error and observes the untouched model, so both Tree Mode
    implementations observe the same lost update (docs/runtime.md, deviation A6).
    ``traced=False``: the observation is the loop's concrete values, which abstract
    tracing cannot show.
    """
    kind = facts.get("kind") or "Variable"
    transform = facts.get("transform") if facts.get("transform") in ("fori_loop", "while_loop") else "fori_loop"
    first_part, second_part = facts.get("first_part"), facts.get("second_part")
    first, second = facts.get("first_path") or "a", facts.get("second_path") or "b"
    carry = first.startswith("init_val[") and second.startswith("init_val[")
    if kind == "Rngs":
        stream = next((p for p in (first_part, second_part) if is_identifier(p)), "default")
        shared = f"nnx.Rngs({stream}=0)"
        update, observe, start, updated = "{}()", "int({}.count[...])", 0, 2

        def leaf(base: str, part: str | None) -> str:  # the stream: stored as such, or of the Rngs
            return base if part else f"{base}.{stream}"
    else:
        # a scalar Param reached from both aliases: at the deeper part, else `.w` of a Box
        deepest = max([first_part or "", second_part or ""], key=len)
        if deepest:
            shared = _emit_tree(_tree_of([(deepest, "nnx.Param(jnp.ones(()))")]))
        else:
            shared = "nnx.Param(jnp.ones(()))" if kind == "Variable" else "Box(w=nnx.Param(jnp.ones(())))"
        update, observe, start, updated = "{}[...] += 1.0", "float(jnp.sum({}[...]))", 1.0, 3.0

        def leaf(base: str, part: str | None) -> str:
            # `base` holds `shared` reached at `part`: go on to the Param
            own = part or ""
            rest = deepest[len(own):].lstrip(".") if deepest else ("" if kind == "Variable" else "w")
            return _access(base, rest)

    if carry:
        parts = {bounded_index(_index_of(first)[1], "the carry position"): first_part,
                 bounded_index(_index_of(second)[1], "the carry position"): second_part}
        positions = sorted(parts)
        size = max(positions) + 1

        def make(tied: bool) -> str:
            items = [_access("shared", parts[i]) if i in parts else "jnp.ones(())" for i in range(size)]
            if not tied:  # the rewrite: carry the object once
                items = [item for i, item in enumerate(items) if i != positions[-1]]
            return f"shared = {shared}\nmodel = ({', '.join(items)},)"

        targets = [leaf(f"model[{p}]", parts[p]) for p in (positions[0], positions[-1])]
        body_target = leaf(f"m[{positions[0]}]", parts[positions[0]])
    else:
        class_name = identifier_or(facts.get("class_name"), "Model")

        def flattening_order(item):
            return [(0, p, "") if isinstance(p, int) else (1, 0, p) for p in _path_parts(item[0])]

        ordered = sorted([(first, first_part), (second, second_part)], key=flattening_order)
        tree = _tree_of([(path, _access("shared", part)) for path, part in ordered])

        def make(tied: bool) -> str:
            stores = tree if tied else tree_without(tree, ordered[1][0])  # the rewrite: store it once
            lines = [f"class {class_name}(nnx.Module):", "    def __init__(self):", f"        shared = {shared}"]
            lines += ["        " + set_attribute("self", name, _emit_tree(child)) for name, child in stores.items()
                      if isinstance(name, str)]
            return "\n".join(lines) + f"\n\nmodel = {class_name}()"

        targets = [leaf(_access("model", path), part) for path, part in ordered]
        body_target = leaf(_access("m", ordered[0][0]), ordered[0][1])
    value = observe.format(body_target).replace("int(", "(").replace("float(", "(")
    loop = ("nnx.fori_loop(0, 2, body, model)" if transform == "fori_loop"
            else f"nnx.while_loop(lambda m: {value} < {updated!r}, body, model)")

    def program(tied: bool) -> str:
        observed = targets if tied else [targets[0], targets[0]]
        return _code(_BOX, make(tied), f"""
            def body(*args):
                m = args[-1]
                {update.format(body_target)}
                return m

            try:
                {loop}
            except ValueError as error:  # tree_runtime (FLIP): the aliased carry is rejected
                if "Duplicate" not in str(error):
                    raise
            return [{observe.format(observed[0])}, {observe.format(observed[1])}]
            """)

    return Reproduction(program(True), expect_tree=[start, start], expect_graph=[updated, updated],
                        control=program(False), traced=False)


def tree_without(tree: dict, path: str) -> dict:
    """A copy of a nested store tree without the store at ``path``."""
    import copy

    result = copy.deepcopy(tree)
    parts = _path_parts(path)
    node = result
    for part in parts[:-1]:
        node = node.get(part, {})
    if isinstance(node, dict):
        node.pop(parts[-1], None)
    return result
