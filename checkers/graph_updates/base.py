"""The graph updates family's base rule classes."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from astroid import nodes

from nnx_lint.api import (
    ABSENT,
    Facts,
    Reach,
    Rule,
    TransformedCode,
    checkpoint,
    entry_pin_target,
    fact_index,
    passed_to,
    pin_sites_in,
    transformed_code,
)

def entry_pin(context, reach: Reach) -> list[dict]:
    """Where a pin fix keeps graph mode: the transform that traces the reached code (and the
    transforms around it), if in this file."""
    return pin_sites_in(context, entry_pin_target(reach.entry))


class TransformedCodeRule(Rule):
    """Shared walk: every function of this file that runs under a Tree Mode transform
    (and, where ``use_heuristic`` says so, unreached Module methods), plus functions of
    other project files reached from here (reported at the call that leaves this file)."""

    use_heuristic: ClassVar[bool] = False
    follow_files: ClassVar[bool] = True

    def leave_module(self, node: nodes.Module) -> None:
        service = transformed_code(self.context)
        reported_boundaries: set[int] = set()
        reached: set[int] = set()
        for reach in service.reaches():
            checkpoint("checking the functions NNX transforms trace")
            function = reach.function
            if function.root() is node:
                reached.add(id(function))
                if function.name == "__init__" and not isinstance(function, nodes.Lambda):
                    continue
                for target, fields in self.findings_for(service, reach):
                    self.report(target, **{**fields, **reach.facts(), "pin": entry_pin(self.context, reach)},
                                related=self.related_sites(reach, fields))
            elif self.follow_files and reach.boundary is not None and id(reach.boundary) not in reported_boundaries:
                if getattr(function, "name", "") == "__init__":
                    continue
                for target, fields in self.findings_for(service, reach):
                    reported_boundaries.add(id(reach.boundary))
                    file_name = (target.root().file or target.root().name).rsplit("/", 1)[-1]
                    where = f" ({file_name}:{target.lineno}, reached through this call)"
                    self.report(reach.boundary, **{**fields, **reach.facts(), "pin": entry_pin(self.context, reach), "where": where,
                                                   "file": target.root().file, "line": target.lineno},
                                related=[(target, f"the flagged code, in `{reach.chain[-1]}`"),
                                         *self.related_sites(reach, fields)])
                    break
        if self.use_heuristic:
            for function in fact_index(self.context).functions_in(node):
                if id(function) in reached:
                    continue
                reach = service.heuristic(function)
                if reach is not None:
                    for target, fields in self.findings_for(service, reach):
                        self.report(target, **{**fields, **reach.facts(), "pin": entry_pin(self.context, reach)})

    def related_sites(self, reach: Reach, fields: dict) -> list[tuple[nodes.NodeNG, str]]:
        """The other lines of a finding: the transform that traces the entry function and,
        when the changed object's class comes from a caller (in this file or another), the
        call that passes it."""
        entry = reach.entry
        if entry is None:
            return []
        sites: list[tuple[nodes.NodeNG, str]] = [(entry.node, f"`nnx.{entry.transform}` traces `{reach.chain[0]}` here")]
        object_class = fields.get("object_class")  # a report keyword, before the facts are typed
        if object_class and isinstance(entry.function, nodes.FunctionDef):
            sites.extend(passed_to(self.context, entry.function, object_class))
        return sites

    def findings(self, service: TransformedCode, reach: Reach) -> Iterator[tuple[nodes.NodeNG, dict]]:
        raise NotImplementedError

    # helpers shared by the rules
    _current: Reach | None = None

    def findings_for(self, service: TransformedCode, reach: Reach):
        self._current = reach
        try:
            yield from self.findings(service, reach)
        finally:
            self._current = None

    def owner_class(self, service: TransformedCode, expression: nodes.NodeNG):
        """The class of the object whose attribute is touched, when known."""
        return service.class_of(expression, self._current)

    def is_module_like(self, service: TransformedCode, expression: nodes.NodeNG) -> tuple[bool, str | None]:
        """(may be an NNX Module, its class name or None): unknown classes count as maybe."""
        return service.module_like(expression, self._current)


@dataclass(frozen=True, kw_only=True)
class TransformReachFacts(Facts):
    """How transformed code reaches a finding: the transform, the entry function it traces
    and the call chain from there (the facts NNX301, NNX304 and NNX305 share)."""

    transform: str
    traced_by: str
    entry: str | None
    entry_line: int | None
    call_chain: list
    confidence: str
    pin: list
    file: str = ABSENT
    line: int = ABSENT


@dataclass(frozen=True, kw_only=True)
class MethodCallFacts(TransformReachFacts):
    """What NNX304 and NNX305 report: the reach, then the method call."""

    method: str
    receiver: str
    object_class: str | None
    where: str


class MethodCallInTransform(TransformedCodeRule):
    """Calls of given methods on an outside object in transformed code."""

    facts_type = MethodCallFacts

    methods: ClassVar[frozenset[str]]

    def findings(self, service: TransformedCode, reach: Reach) -> Iterator[tuple[nodes.NodeNG, dict]]:
        for node, cls in service.outside_method_calls(reach, self.methods):
            yield node, {"method": node.func.attrname, "receiver": node.func.expr.as_string(), "object_class": cls,
                         "where": ""}
