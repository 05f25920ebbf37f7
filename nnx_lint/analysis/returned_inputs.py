"""What a transformed function returns that Tree Mode treats differently from graph mode: an
input returned (whole, a part, or a state view of it), an input stored in an object built and
returned, one object returned twice, a mutable array ref returned. The returns rules (NNX104,
NNX106, NNX110) ask it as ``nnx_lint.api.returned_inputs`` and report what it finds.

Each answer is a typed record naming the returned expression, the transformed function's
parameter it comes from and the evidence for that parameter's kind (an annotation, the
arguments of the transform's calls, a state view, the body's use of it), so that a rule only
decides how to report it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from astroid import nodes

from nnx_lint.analysis.calls import constant_bool
from nnx_lint.analysis.factories import returned_values
from nnx_lint.analysis.flow import bound_values, inside, lookup
from nnx_lint.analysis.names import root_name
from nnx_lint.analysis.refs import SHARED_KINDS, STATEFUL_KINDS, Ref
from nnx_lint.analysis.transform_types import Application
from nnx_lint.analysis.values import value_model
from nnx_lint.base.node_index import nodes_of_class
from nnx_lint.flax_table import table as flax_table

__all__ = [
    "returned_inputs", "ReturnedInputs", "ReturnedInput", "StoredInput", "DuplicateOutput", "ReturnedRef",
    "function_definition", "returned_expressions", "parameter_names", "view_of", "used_as_module",
]


def returned_inputs(context) -> ReturnedInputs:
    """The file's (memoised) :class:`ReturnedInputs`."""
    return context.service(ReturnedInputs)


@dataclass(frozen=True)
class ReturnedInput:
    """A returned part that is an input of the transformed function (or a part or state view
    of one), or, with ``construction``, an input stored in an object the function builds and
    returns."""

    expression: nodes.NodeNG
    parameter: str
    position: int
    #: The kind of object (``module``, ``variable``, ``rngs``, ``state``, ``ref``).
    kind: str
    #: ``annotation``, ``call-site``, ``state-view`` or ``usage``.
    evidence: str
    #: The attribute path below the parameter (state-view parts left out).
    part: tuple[str, ...]
    #: ``state`` / ``split`` for a state view of the input, else None.
    view: str | None
    construction: nodes.Call | None = None
    #: Where the construction's class stores the input.
    stored_path: tuple[str, ...] = ()
    #: The construction's class, when the class model knows it.
    class_name: str | None = None


@dataclass(frozen=True)
class StoredInput:
    """A class transformed itself (``nnx.eval_shape(Model, rngs)``) whose ``__init__`` stores an
    argument of the call: the built object holds the input."""

    use: Application
    parameter: str
    position: int | None
    kind: str
    stored_path: tuple[str, ...]


@dataclass(frozen=True)
class DuplicateOutput:
    """One object returned twice (``return model, nnx.state(model)``), or an object returned
    beside one that holds its Variables (``held_at`` says where)."""

    value: nodes.NodeNG
    first: nodes.NodeNG
    second: nodes.NodeNG
    #: The shared object's kind (``state`` when one of them is a state view).
    kind: str
    evidence: str
    #: The state view each one is (``state`` / ``split`` / None), when found by their refs.
    views: tuple[str | None, str | None] | None = None
    held_at: str | None = None


@dataclass(frozen=True)
class ReturnedRef:
    """A mutable array ref returned: an input's (``origin`` ``input``) or one made inside
    (``new ref``, ``ref variables``); ``use`` is the transform that rejects it."""

    expression: nodes.NodeNG
    origin: str
    parameter: str | None
    evidence: str
    use: Application


#: Transforms that return an input ref in graph mode and raise in Tree Mode (measured with
#: flax 0.12.8; grad's aux and vmap return it in both modes, eval_shape raises in both).
_INPUT_REF_TRANSFORMS = frozenset({"jit", "cond", "switch", "remat", "checkpoint"})


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


def returned_expressions(function: nodes.NodeNG) -> list[nodes.NodeNG]:
    """What a function returns: a lambda's body, or the values of its own ``return`` statements."""
    if isinstance(function, nodes.Lambda) and not isinstance(function, nodes.FunctionDef):
        return [function.body]
    return [value for value in returned_values(function) if value is not None]


def parameter_names(function: nodes.NodeNG) -> list[str]:
    """The positional parameters of ``function`` (a method's ``self`` left out)."""
    arguments = function.args
    names = [a.name for a in list(arguments.posonlyargs or []) + list(arguments.args or [])]
    if isinstance(function, nodes.FunctionDef) and isinstance(function.parent, nodes.ClassDef) and names:
        names = names[1:]  # a method's self
    return names


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


def _views_a_parameter(context, view: nodes.NodeNG, definition: nodes.NodeNG) -> bool:
    """Whether the state view ``view`` (``nnx.state(p)``, ``nnx.split(p.encoder)[1]``, a name
    bound to a split group) is taken of a parameter of ``definition`` or a part of it: it then
    holds the caller's Variables whatever they are. A view of anything else (the merge of a
    state parameter, say) holds them only if the parameter's kind says so."""
    if isinstance(view, nodes.Name):
        split = context.classes.split_making(view)
        base = split.args[0] if split is not None else None
    elif isinstance(view, nodes.Call):
        base = view.args[0] if view.args else None
    elif isinstance(view, nodes.Subscript) and isinstance(view.value, nodes.Call):
        base = view.value.args[0] if view.value.args else None
    else:
        base = None
    base = root_name(base) if base is not None else None
    if base is None:
        return False
    _scope, assignments = lookup(base)
    return (len(assignments) == 1 and isinstance(assignments[0], nodes.AssignName)
            and isinstance(assignments[0].parent, nodes.Arguments) and assignments[0].parent.parent is definition)


def _position(definition: nodes.NodeNG, name: str) -> int:
    names = parameter_names(definition)
    return names.index(name) if name in names else -1


def _explicit_graph_updates(use: Application) -> bool | None:
    """The ``graph_updates`` flag the transform sets (None: not set)."""
    return use.flags.graph_updates if use.flags is not None else None


def _keyword_is_true(call: nodes.Call, name: str) -> bool:
    return any(k.arg == name and constant_bool(k.value) is True for k in call.keywords or [])


#: What makes Variables (or a tree's Variables) mutable array refs when given ``ref=True``.
_REF_VARIABLE_MAKERS = flax_table.REF_VARIABLE_MAKERS


def _under_ref_defaults(context, node: nodes.NodeNG, stop: nodes.NodeNG | None) -> bool:
    """Whether ``node`` runs inside ``with nnx.var_defaults(ref=True):`` (below ``stop``)."""
    child, parent = node, node.parent
    while parent is not None and parent is not stop:
        if isinstance(parent, nodes.With) and child in parent.body:
            for item, _alias in parent.items:
                if isinstance(item, nodes.Call) and _keyword_is_true(item, "ref") \
                        and context.qualified_name(item.func) == flax_table.NNX_VAR_DEFAULTS:
                    return True
        child, parent = parent, parent.parent
    return False


class ReturnedInputs:
    """What the file's transformed functions return, per definition and the transform
    applications of it (one per file, for every returns rule)."""

    def __init__(self, context) -> None:
        self.context = context
        self.classes = context.classes

    def of_definition(self, definition: nodes.NodeNG, uses: list[Application]
                      ) -> list[ReturnedInput | StoredInput | DuplicateOutput | ReturnedRef]:
        """Every finding about what ``definition`` (applied by ``uses``) returns, in the order
        of its returns: for each returned value, a duplicate output first, then its refs, then
        its inputs."""
        found: list[ReturnedInput | StoredInput | DuplicateOutput | ReturnedRef] = []
        if isinstance(definition, nodes.ClassDef):
            for call_use in uses:
                if not call_use.keeps_graph:
                    found.extend(self._stored_inputs(definition, call_use))
            return found
        parameters = parameter_names(definition)
        # Graph mode (graph=True, today's default, even with graph_updates=False) accepts one
        # object returned twice; returning an input already raises with graph_updates=False
        # (measured with flax 0.12.8), so only transforms the flip changes count for that.
        check_duplicates = not all(u.accepts_shared_inputs for u in uses)
        check_inputs = not all(u.keeps_graph for u in uses)
        for value in returned_expressions(definition):
            duplicate = self._duplicate_output(definition, value) if check_duplicates else None
            if duplicate is not None:
                found.append(duplicate)
            if not check_inputs:
                continue
            found.extend(self._returned_refs(definition, value, uses))
            for expression, known_ref, is_view, constructed_in in self._returned_parts(value, definition):
                ref = known_ref or self.classes.ref_of(expression)
                if ref is None or ref.root[0] != "param" or ref.root[1] is not definition:
                    continue
                name = ref.root[2]
                if name not in parameters:
                    continue
                index = parameters.index(name)
                direct_view = is_view and _views_a_parameter(self.context, expression, definition)
                kind, evidence = self._parameter_kind(definition, name, index, ref, uses, direct_view)
                if is_view and kind in STATEFUL_KINDS:
                    kind = "state"
                if kind not in STATEFUL_KINDS:
                    continue
                returned = ReturnedInput(expression, name, index, kind, evidence,
                                         tuple(p for p in ref.path if not p.startswith("<")),
                                         view_of(self.context, expression) if is_view else None)
                if constructed_in is not None:
                    construction, stored_path = constructed_in
                    cls = self.classes.class_of(construction)
                    returned = ReturnedInput(expression, name, index, kind, evidence, returned.part, returned.view,
                                             construction, tuple(stored_path), cls.short_name if cls else None)
                found.append(returned)
        return found

    def _returned_refs(self, definition, value, uses: list[Application]) -> list[ReturnedRef]:
        """Returned mutable array refs (measured with flax 0.12.8: Tree Mode's transforms hand
        them to JAX, which rejects a ref among a traced function's outputs; graph mode turns
        them back into refs after the call).

        An input ref (a ``jax.Ref`` parameter, or a ref stored in an input Module) returned
        from ``nnx.jit`` / ``cond`` / ``switch`` / ``remat`` runs in graph mode only. A ref made
        inside (``jax.new_ref``, a Variable or Module built with ``ref=True`` / ``nnx.with_vars(...,
        ref=True)`` or under ``nnx.var_defaults(ref=True)``) returned from ``nnx.jit`` runs in
        graph mode only when some input is an NNX object: otherwise both modes raise, and
        nothing changes.
        """
        transforms = [u for u in uses if not u.keeps_graph and _explicit_graph_updates(u) is not False]
        if not transforms:
            return []
        found = []
        for expression, known_ref, is_view, constructed_in in self._returned_parts(value, definition):
            if is_view or constructed_in is not None:
                continue
            ref = known_ref or self.classes.ref_of(expression)
            origin = parameter = evidence = None
            if ref is not None and ref.root[0] == "param" and ref.root[1] is definition:
                kind, evidence = self._parameter_kind(definition, ref.root[2], _position(definition, ref.root[2]),
                                                      ref, uses, False)
                if kind == "ref":
                    origin, parameter = "input", ref.root[2]
                usable = [u for u in transforms if u.name in _INPUT_REF_TRANSFORMS]
            else:
                origin = self._made_mutable_inside(expression, ref, definition, transforms)
                evidence = "construction"
                usable = [u for u in transforms if u.name == "jit"]
                if origin is not None and not self._takes_an_nnx_object(definition, uses):
                    continue  # graph mode raises too
            if origin is None or not usable:
                continue
            found.append(ReturnedRef(expression, origin, parameter, evidence, usable[0]))
        return found

    def _made_mutable_inside(self, expression, ref, definition, uses) -> str | None:
        """``"new ref"`` for a ``jax.new_ref(...)`` made in ``definition``; ``"ref variables"`` for a
        Variable or Module made there with ``ref=True`` Variables; None otherwise."""
        if ref is None or ref.root[0] != "new" or ref.path or not inside(ref.root[1], definition):
            return None
        call = ref.root[1]
        kind = self.classes.kind_of(ref)
        if kind == "ref":
            return "new ref"
        if kind not in ("module", "variable"):
            return None
        if _keyword_is_true(call, "ref") and (
                kind == "variable" or self.context.qualified_name(call.func) in _REF_VARIABLE_MAKERS):
            return "ref variables"  # nnx.with_vars(m, ref=True), nnx.Param(v, ref=True)
        if _under_ref_defaults(self.context, call, definition) or any(
                _under_ref_defaults(self.context, u.call, None) for u in uses if u.call):
            return "ref variables"
        return None

    def _takes_an_nnx_object(self, definition, uses: list[Application]) -> bool:
        """Whether some argument of the transformed function is known to be an NNX object
        (Module, Variable, Rngs, State) or a ref."""
        for name in parameter_names(definition):
            if self.classes.kind_of(Ref(("param", definition, name))) in SHARED_KINDS:
                return True
        for use in uses:
            for argument in use.arguments:
                if self.classes.kind_of(self.classes.ref_of(argument.expression)) in SHARED_KINDS:
                    return True
        return False

    def _returned_parts(self, value: nodes.NodeNG, definition: nodes.NodeNG, depth: int = 0) -> Iterator[tuple]:
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
            nnx_name = name[len(flax_table.NNX_PREFIX):] if name and name.startswith(flax_table.NNX_PREFIX) else None
            if nnx_name in ("state", "variables") and value.args:
                yield value, self.classes.ref_of(value.args[0]), True, None
            elif name in ("builtins.dict", "dict") or (isinstance(value.func, nodes.Name) and value.func.name == "dict"):
                for keyword in value.keywords or []:
                    yield from self._returned_parts(keyword.value, definition, depth + 1)
            elif (held := self.classes.ref_of(value)) is not None and held.root[0] == "param":
                yield value, held, False, None  # dataclasses.replace(c, steps=...): still holds c's objects
            else:
                cls = self.classes.class_of(value)
                if cls is not None and cls.definition is not None:
                    for path, ref, _container in self.classes.stored_items(value)[1:]:
                        if ref is not None and ref.root[0] == "param" and ref.root[1] is definition:
                            yield value, ref, False, (value, path)
                else:
                    yield value, None, False, None  # the call's own result (`jax.new_ref(x)`)
        elif isinstance(value, nodes.Subscript) and isinstance(value.value, nodes.Call):
            name = self.context.qualified_name(value.value.func)
            if name == flax_table.NNX_SPLIT and value.value.args:
                index = value.slice
                if isinstance(index, nodes.Const) and isinstance(index.value, int) and index.value >= 1:
                    yield value, self.classes.ref_of(value.value.args[0]), True, None
            else:
                yield value, None, False, None
        elif isinstance(value, nodes.Name):
            bindings = bound_values(value)
            binding = bindings[0] if len(bindings) == 1 else None
            if binding is not None and inside(binding, definition) and self._is_composite(binding):
                yield from self._returned_parts(binding, definition, depth + 1)
            elif (split := self.context.classes.split_making(value)) is not None and inside(split, definition):
                # `_, state = nnx.split(m)`: a state group of m
                yield value, self.classes.ref_of(value), True, None
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
            if name in flax_table.STATE_READERS or name in ("builtins.dict", "dict"):
                return True
            cls = self.classes.class_of(value)
            return cls is not None and cls.definition is not None
        return False

    def _duplicate_output(self, definition, value) -> DuplicateOutput | None:
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
                by_view = first_view or second_view
                return DuplicateOutput(
                    value, first, second, "state" if by_view else kinds[0],
                    "state-view" if by_view else "annotation",
                    views=(view_of(self.context, first) if first_view else None,
                           view_of(self.context, second) if second_view else None))
        return self._output_holding_another(value)

    def _output_holding_another(self, value) -> DuplicateOutput | None:
        """`return model, optimizer` where the optimizer was built from model's Variables
        (`SGD(nnx.variables(model, nnx.Param))`, flax's `10_fsdp_and_optimizer.py`): Tree
        Mode rejects the outputs' shared Variables as it does `return model, nnx.state(model)`."""
        if not isinstance(value, (nodes.Tuple, nodes.List)):
            return None
        values = value_model(self.context)
        returned = [(element, self.classes.ref_of(element)) for element in value.elts
                    if not isinstance(element, nodes.Starred)]
        for i, (first, first_ref) in enumerate(returned):
            for second, second_ref in returned[i + 1:]:
                if first_ref is None or second_ref is None or first_ref.overlaps(second_ref):
                    continue
                for held, holder, owner in ((first_ref, second, first), (second_ref, first, second)):
                    place = values.held_part_of(holder, held)
                    if place is None or self.classes.kind_of(held) not in STATEFUL_KINDS:
                        continue
                    return DuplicateOutput(value, owner, holder, "state", "state-view", held_at=place)
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
                    argument_kind = (self.classes.kind_of(Ref(argument_ref.root, argument_ref.path + ref.path))
                                     if argument_ref else None)
                    if argument_kind in STATEFUL_KINDS and not ref.path \
                            and view_of(self.context, argument.expression) is not None:
                        argument_kind = "state"  # `step(graphdef, state)` after `graphdef, state = nnx.split(model)`
                    call_kinds.add(argument_kind)
        call_kinds.discard(None)
        if len(call_kinds) == 1:
            return call_kinds.pop(), "call-site"
        if not ref.path and used_as_module(self.context, definition, name):
            return "module", "usage"
        return None, None

    def _stored_inputs(self, classdef: nodes.ClassDef, use: Application) -> list[StoredInput]:
        init = self.classes.init_of(classdef)
        if init is None or use.call is None:
            return []
        stored = self.classes.construction(classdef).stored_parameters()
        positional = [p.name for p in list(init.args.posonlyargs or []) + list(init.args.args or [])][1:]
        found = []
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
            path, _part = stored[parameter][0]
            found.append(StoredInput(use, parameter, argument.index, kind, tuple(path)))
        return found
