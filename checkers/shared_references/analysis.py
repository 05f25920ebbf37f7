"""Analysis helpers shared by several shared references rules."""
from __future__ import annotations

from astroid import nodes

from nnx_lint.api import (
    SHARED_KINDS,
    Alias,
    Application,
    Argument,
    Ref,
    bound_values,
    flax_table,
    join_path,
    lookup,
    nodes_of_class,
    programs,
)


def function_definition(expression: nodes.NodeNG | None, context=None) -> nodes.NodeNG | None:
    """The FunctionDef / Lambda / ClassDef a function expression denotes (this file, or,
    given the file ``context``, another module of the project)."""
    if isinstance(expression, (nodes.FunctionDef, nodes.Lambda, nodes.ClassDef)):
        return expression
    if isinstance(expression, nodes.Name):
        _scope, assignments = lookup(expression)
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
    for node in nodes_of_class(function, nodes.Return, skip_klass=(nodes.FunctionDef, nodes.Lambda, nodes.ClassDef)):
        if node.value is not None and node.scope() is function:
            values.append(node.value)
    return values


def parameter_names(function: nodes.NodeNG) -> list[str]:
    arguments = function.args
    names = [a.name for a in list(arguments.posonlyargs or []) + list(arguments.args or [])]
    if isinstance(function, nodes.FunctionDef) and isinstance(function.parent, nodes.ClassDef) and names:
        names = names[1:]  # a method's self
    return names


DUPLICATE = "Duplicate"


KIND_WORDS = {"module": "Module", "variable": "Variable", "rngs": "Rngs", "state": "State",
               "ref": "mutable array ref"}


def self_text(path: tuple[str, ...]) -> str:
    """``self.a.b[0]`` for the attribute path ``("a", "b", "[0]")``."""
    return join_path(("self",) + tuple(path))


def inside(node: nodes.NodeNG | None, ancestor: nodes.NodeNG) -> bool:
    """Whether ``node`` is ``ancestor`` or below it."""
    while node is not None:
        if node is ancestor:
            return True
        node = node.parent
    return False


def short_source(node: nodes.NodeNG, limit: int = 60) -> str:
    """The source of ``node``, cut to ``limit`` characters, for a message."""
    return programs.clipped(node.as_string(), limit)


def function_label(function: nodes.NodeNG | None) -> str:
    """The name of a transformed function (``<lambda>`` when it has none), for a message."""
    if isinstance(function, (nodes.FunctionDef, nodes.ClassDef)):
        return function.name
    if isinstance(function, nodes.Name):
        return function.name
    if isinstance(function, nodes.Attribute):  # a bound method: `nnx.jit(self.train_step)`
        return function.attrname
    return "<lambda>"


def alias_shape(alias: Alias) -> dict:
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
        return name if name in flax_table.CONTAINER_NAMES else None
    if isinstance(container, (nodes.List, nodes.ListComp, nodes.BinOp)):
        return "list"
    if isinstance(container, (nodes.Tuple, nodes.Dict)):
        return type(container).__name__.lower()
    return None


def alias_category(alias: Alias) -> str:
    """``rngs``, ``container`` (two elements of one container) or ``attribute``: the shape of an alias."""
    first, second = alias.first, alias.second
    if alias.kind == "rngs":
        return "rngs"
    if first is not None and first.container is not None and first.container is second.container:
        return "container"
    a, b = alias.first_path, second.path
    if len(a) == len(b) and a[:-1] == b[:-1] and a[-1:] and a[-1].startswith("[") and b[-1].startswith("["):
        return "container"
    return "attribute"


def overlapping_pair(classes, refs: list[tuple[Argument, Ref | None]]):
    """The first two arguments denoting the same stateful object (or one and its part)."""
    for i, (first, ref_a) in enumerate(refs):
        if ref_a is None:
            continue
        for second, ref_b in refs[i + 1:]:
            if ref_b is None or not ref_a.overlaps(ref_b):
                continue
            kinds = (classes.kind_of(ref_a), classes.kind_of(ref_b))
            if all(kind in SHARED_KINDS for kind in kinds):
                return first, ref_a, second, ref_b, kinds
    return None


def relative_parts(ref_a: Ref, ref_b: Ref) -> tuple[str, str]:
    """The attribute paths of two overlapping refs below their common object
    (``model`` and ``model.encoder``: ``""`` and ``"encoder"``); state-view parts dropped."""
    a = tuple(p for p in ref_a.path if not p.startswith("<"))
    b = tuple(p for p in ref_b.path if not p.startswith("<"))
    common = min(len(a), len(b))
    return join_path(a[common:]), join_path(b[common:])


def view_of(context, expression: nodes.NodeNG) -> str | None:
    """``"state"`` for ``nnx.state(x)`` / ``nnx.variables(x)``, ``"split"`` for a state
    group of ``nnx.split(x)``, None for the object itself."""
    if isinstance(expression, nodes.Name):
        if context.classes.split_making(expression) is not None:
            return "split"
        bindings = bound_values(expression)
        if len(bindings) == 1 and isinstance(bindings[0], (nodes.Call, nodes.Subscript)):
            expression = bindings[0]
    if isinstance(expression, nodes.Call):
        name = context.qualified_name(expression.func) or ""
        if name in flax_table.STATE_READERS:
            return "state"
    if isinstance(expression, nodes.Subscript) and isinstance(expression.value, nodes.Call):
        if context.qualified_name(expression.value.func) == flax_table.NNX_SPLIT:
            return "split"
    return None


def describe_use(use: Application) -> dict:
    """The facts naming a transform application: transform, function and form (``direct`` or ``applied``)."""
    function = use.functions[0] if use.functions else None
    return {
        "transform": use.name,
        "function": function_label(function),
        "form": "direct" if use.call is use.transform.node else "applied",
    }


DUPLICATE_OUTPUT_MESSAGE = (
    "`nnx.{transform}`-transformed `{function}` returns `{returned}`, one object twice: Tree Mode raises ValueError"
)


DUPLICATE_OUTPUT_HELP = (
    "Tree Mode rejects duplicate outputs, including an object and its state (ValueError: Duplicate ...). "
    "Return it once and take `nnx.state(...)` outside the transform"
)


class ReturnFinding:
    """One returned input found by :func:`_returned_inputs`: its rule, node and the keywords it
    will be reported with (the facts by their stored names, typed when reported)."""

    def __init__(self, code, node, fields) -> None:
        self.code, self.node, self.fields = code, node, fields


def has_aux(use: Application) -> bool:
    """Whether the application's transform passes a literal ``has_aux=True`` (as the resolver decodes it)."""
    return use.decoded.has_aux is True


def used_as_module(context, function: nodes.NodeNG, name: str) -> bool:
    """Whether the body treats parameter ``name`` as an NNX Module (calls it, walks its graph,
    or, as the value model's kind from use says, writes its Variables): evidence for a
    parameter without annotation."""
    if context.classes.used_as_module(function, name):
        return True
    body = function.body if isinstance(function.body, list) else [function.body]
    for statement in body:
        for node in nodes_of_class(statement, nodes.Call):
            if isinstance(node, nodes.Call):
                func = node.func
                if isinstance(func, nodes.Name) and func.name == name:
                    return True
                if isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Name) and func.expr.name == name:
                    if func.attrname in ("eval", "train", "set_attributes", "sow", "perturb"):
                        return True
                if node.args and isinstance(node.args[0], nodes.Name) and node.args[0].name == name:
                    qualified = context.qualified_name(func) or ""
                    if qualified.startswith(flax_table.NNX_PREFIX) and qualified.rpartition(".")[2] in flax_table.MODULE_USE_APIS:
                        return True
    return False
