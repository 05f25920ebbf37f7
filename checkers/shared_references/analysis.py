"""Analysis helpers shared by several shared references rules."""
from __future__ import annotations

from dataclasses import dataclass, field

from astroid import nodes

from nnx_lint.calls import NNXCall, match_nnx_call
from nnx_lint.classes import STATEFUL_KINDS, Alias, Ref, join_path
from nnx_lint.flow import bound_values, lookup
from nnx_lint.mode import ModeContext
from nnx_lint.names import NameResolver


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
