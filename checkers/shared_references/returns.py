"""The shared references family's rule base for transformed functions' returns (NNX104, NNX106,
NNX110): what the analysis finds a transformed function returns
(:mod:`nnx_lint.analysis.returned_inputs`), reported by the rule whose code it is."""
from __future__ import annotations

from astroid import nodes

from checkers.shared_references.messages import KIND_WORDS, describe_use, function_label, has_aux, short_source
from checkers.shared_references.base import FamilyRule
from nnx_lint.api import Application, fact_index, flax_table, join_path, pin_sites_in, returned_inputs


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
    """Collects transformed function definitions; reports what they return at the end."""

    finding_code: str
    visits_transform_calls_only = True

    def __init__(self, context) -> None:
        super().__init__(context)
        self._definitions: dict[int, tuple[nodes.NodeNG, list[Application]]] = {}

    def _register(self, definition: nodes.NodeNG | None, use: Application) -> None:
        if definition is None or use.name in flax_table.CARRY_TRANSFORMS or (use.keeps_graph and use.accepts_shared_inputs):
            return  # (graph_updates=False alone still takes duplicate outputs today: see returned_inputs)
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
            self._register(returned_inputs.function_definition(function, self.context), use)
        # bare transform objects applied later are registered through their call sites

    def leave_module(self, node: nodes.Module) -> None:
        seen: set[tuple[int, int]] = set()
        analysis = returned_inputs.returned_inputs(self.context)
        for definition, uses in self._definitions.values():
            for found in analysis.of_definition(definition, uses):
                finding = self.finding(definition, uses, found)
                if finding is None:
                    continue
                where, fields = finding
                key = (where.lineno, where.col_offset)
                if key not in seen:
                    seen.add(key)
                    message, help_text = self.wording(fields)
                    # Every transform applying this definition must keep graph mode.
                    pin = pin_sites_in(self.context, *(u.transform for u in uses))
                    self.report(where, message=message, help=help_text, related=_use_sites(uses),
                                **{**fields, "pin": pin})

    def finding(self, definition: nodes.NodeNG, uses: list[Application], found) -> tuple[nodes.NodeNG, dict] | None:
        """Where and with which facts this rule reports ``found`` (what the analysis found
        ``definition`` returns), or None when it is another rule's."""
        raise NotImplementedError

    def wording(self, fields: dict) -> tuple[str | None, str | None]:
        """The message and help of one finding (None, None: the rule's own)."""
        return None, None


def input_facts(definition: nodes.NodeNG, use: Application, found) -> dict:
    """The facts of a returned input (NNX104) or of an input stored in a returned construction
    (NNX106)."""
    fields = {
        **describe_use(use),
        "function": function_label(definition),
        "parameter": found.parameter,
        "position": found.position,
        "returned": short_source(found.expression),
        "kind": KIND_WORDS.get(found.kind, found.kind),
        "has_aux": has_aux(use),
        "evidence": found.evidence,
        "confidence": "static" if found.evidence in ("annotation", "call-site", "state-view") else "heuristic",
        "part": join_path(found.part),
        "view": found.view,
    }
    if found.construction is not None:
        fields.update({
            "class_name": found.class_name or short_source(found.construction.func),
            "stored_path": join_path(found.stored_path),
            "returned": short_source(found.construction),
        })
    return fields
