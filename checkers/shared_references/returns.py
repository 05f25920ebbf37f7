"""The shared references family's rule base for transformed functions' returns (NNX104, NNX106, NNX110)."""
from __future__ import annotations

from astroid import nodes

from checkers.shared_references.analysis import (
    DUPLICATE_OUTPUT_HELP,
    DUPLICATE_OUTPUT_MESSAGE,
    KIND_WORDS,
    ReturnFinding,
    describe_use,
    function_definition,
    function_label,
    has_aux,
    inside,
    parameter_names,
    returned_values,
    short_source,
    used_as_module,
    view_of,
)
from checkers.shared_references.base import FamilyRule
from nnx_lint.api import (
    SHARED_KINDS,
    STATEFUL_KINDS,
    Application,
    Ref,
    bound_values,
    constant_bool,
    fact_index,
    flax_table,
    join_path,
    lookup,
    pin_sites_in,
    value_model,
)


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
    while isinstance(base, (nodes.Attribute, nodes.Subscript)):
        base = base.expr if isinstance(base, nodes.Attribute) else base.value
    if not isinstance(base, nodes.Name):
        return False
    _scope, assignments = lookup(base)
    return (len(assignments) == 1 and isinstance(assignments[0], nodes.AssignName)
            and isinstance(assignments[0].parent, nodes.Arguments) and assignments[0].parent.parent is definition)


#: Transforms that return an input ref in graph mode and raise in Tree Mode (measured with
#: flax 0.12.8; grad's aux and vmap return it in both modes, eval_shape raises in both).
_INPUT_REF_TRANSFORMS = frozenset({"jit", "cond", "switch", "remat", "checkpoint"})


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


def _use_sites(uses: list[Application]) -> list[tuple[nodes.NodeNG, str]]:
    """Where each transform applying the definition is (its decorator or call) and where the
    transformed function is called, as related locations."""
    sites: list[tuple[nodes.NodeNG, str]] = []
    for use in uses:
        sites.append((use.transform.node, f"transformed by `nnx.{use.name}` here"))
        if use.call is not None and use.call is not use.transform.node:
            sites.append((use.call, "called here"))
    return sites


class ReturnRule(FamilyRule):
    """Collects transformed function definitions; analyses their returns at the end."""

    finding_code: str

    def __init__(self, context) -> None:
        super().__init__(context)
        self._definitions: dict[int, tuple[nodes.NodeNG, list[Application]]] = {}

    def _register(self, definition: nodes.NodeNG | None, use: Application) -> None:
        if definition is None or use.name in flax_table.CARRY_TRANSFORMS or (use.keeps_graph and use.accepts_shared_inputs):
            return  # (graph_updates=False alone still takes duplicate outputs today: see _findings)
        entry = self._definitions.setdefault(id(definition), (definition, []))
        entry[1].append(use)

    def visit_functiondef(self, node: nodes.FunctionDef) -> None:
        found = self.finder.decorated(node)
        if found is not None:
            transform, function, keeps = found
            self._register(node, Application(transform, None, [node], [], keeps, self.finder.flags(transform)))

    def visit_call(self, node: nodes.Call) -> None:
        use = fact_index(self.context).application(node)
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
                    duplicate = finding.fields.get("duplicate_output")
                    message, help_text = (DUPLICATE_OUTPUT_MESSAGE, DUPLICATE_OUTPUT_HELP) if duplicate else (None, None)
                    # Every transform applying this definition must keep graph mode.
                    pin = pin_sites_in(self.context, *(u.transform for u in uses))
                    self.report(finding.node, message=message, help=help_text, related=_use_sites(uses),
                                **{**finding.fields, "pin": pin})

    # -- analysis -------------------------------------------------------------------------
    def _findings(self, definition: nodes.NodeNG, uses: list[Application]) -> list[ReturnFinding]:
        use = uses[0]
        findings: list[ReturnFinding] = []
        if isinstance(definition, nodes.ClassDef):
            for call_use in uses:
                if not call_use.keeps_graph:
                    findings.extend(self._constructor_findings(definition, call_use))
            return findings
        parameters = parameter_names(definition)
        # Graph mode (graph=True, today's default, even with graph_updates=False) accepts one
        # object returned twice; returning an input already raises with graph_updates=False
        # (measured with flax 0.12.8), so only transforms the flip changes count for that.
        check_duplicates = not all(u.accepts_shared_inputs for u in uses)
        check_inputs = not all(u.keeps_graph for u in uses)
        for value in returned_values(definition):
            duplicate = self._duplicate_output(definition, value, uses) if check_duplicates else None
            if duplicate is not None:
                findings.append(duplicate)
            if not check_inputs:
                continue
            findings.extend(self._mutable_array_findings(definition, value, uses))
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
                facts = {
                    **describe_use(use),
                    "function": function_label(definition),
                    "parameter": name,
                    "position": index,
                    "returned": short_source(expression),
                    "kind": KIND_WORDS.get(kind, kind),
                    "has_aux": has_aux(use),
                    "evidence": evidence,
                    "confidence": "static" if evidence in ("annotation", "call-site", "state-view") else "heuristic",
                    "part": join_path(tuple(p for p in ref.path if not p.startswith("<"))),
                    "view": view_of(self.context, expression) if is_view else None,
                }
                if constructed_in is not None:
                    construction, stored_path = constructed_in
                    cls = self.classes.class_of(construction)
                    facts.update({
                        "class_name": cls.short_name if cls else short_source(construction.func),
                        "stored_path": join_path(stored_path),
                        "returned": short_source(construction),
                    })
                    findings.append(ReturnFinding("NNX106", construction, facts))
                else:
                    findings.append(ReturnFinding("NNX104", expression, facts))
        return findings

    def _mutable_array_findings(self, definition, value, uses: list[Application]) -> list[ReturnFinding]:
        """NNX110: returned mutable array refs (measured with flax 0.12.8: Tree Mode's
        transforms hand them to JAX, which rejects a ref among a traced function's outputs;
        graph mode turns them back into refs after the call).

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
        findings = []
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
            findings.append(ReturnFinding("NNX110", expression, {
                **describe_use(usable[0]),
                "function": function_label(definition),
                "returned": short_source(expression, 32),
                "origin": origin,
                "parameter": parameter,
                "evidence": evidence,
                "confidence": "static",  # a jax.Ref annotation or argument, or a ref made in the body
            }))
        return findings

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

    def _duplicate_output(self, definition, value, uses) -> ReturnFinding | None:
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
                return ReturnFinding("NNX104", value, {
                    **describe_use(uses[0]),
                    "function": function_label(definition),
                    "parameter": None,
                    "position": None,
                    "returned": f"{short_source(first, 30)}` and `{short_source(second, 30)}",
                    "kind": "State" if (first_view or second_view) else KIND_WORDS.get(kinds[0], kinds[0]),
                    "has_aux": has_aux(uses[0]),
                    "evidence": "state-view" if (first_view or second_view) else "annotation",
                    "confidence": "static",
                    "duplicate_output": True,
                    "views": [view_of(self.context, first) if first_view else None,
                              view_of(self.context, second) if second_view else None],
                })
        return self._output_holding_another(definition, value, uses)

    def _output_holding_another(self, definition, value, uses) -> ReturnFinding | None:
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
                    return ReturnFinding("NNX104", value, {
                        **describe_use(uses[0]),
                        "function": function_label(definition),
                        "parameter": None,
                        "position": None,
                        "returned": f"{short_source(owner, 30)}` and `{short_source(holder, 30)}",
                        "kind": "State",
                        "has_aux": has_aux(uses[0]),
                        "evidence": "state-view",
                        "confidence": "static",
                        "duplicate_output": True,
                        "held_at": place,
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

    def _constructor_findings(self, classdef: nodes.ClassDef, use: Application) -> list[ReturnFinding]:
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
            findings.append(ReturnFinding("NNX106", use.call, {
                **describe_use(use),
                "function": classdef.name,
                "class_name": classdef.name,
                "parameter": parameter,
                "position": argument.index,
                "returned": None,
                "stored_path": join_path(path),
                "kind": KIND_WORDS.get(kind, kind),
                "has_aux": False,
                "evidence": "call-site",
                "confidence": "static",
            }))
        return findings
