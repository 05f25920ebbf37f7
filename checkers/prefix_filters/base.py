"""The prefix filters family's base rule classes."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from astroid import nodes

from nnx_lint.api import (
    ABSENT,
    Facts,
    NNXCall,
    Rule,
    fact_index,
    may_leave,
    pin_sites_in,
    position_in,
)


@dataclass(frozen=True, kw_only=True)
class PrefixFilterFacts(Facts):
    """What the NNX2xx rules report. A filter that reaches no transform in the file, but may
    leave the code that builds it (``may_leave``), is reported where it is constructed: ``transform``, ``argument`` and ``position`` are None, ``form`` is
    ``"construction"`` and there is no ``pin``."""

    filter: str
    transform: str | None
    argument: str | None
    position: int | None
    filter_args: list
    form: str
    line_constructed: int
    pin: list = ABSENT


class PrefixFilterRule(Rule):
    """Shared logic: find one filter class in the prefix arguments of NNX transforms."""

    facts_type = PrefixFilterFacts
    #: Tree Mode rejects the filter when the transform is created, before it is ever called.
    stage = "transform-created"
    #: A filter's construction and the transforms reading it are both calls of the nnx API.
    visits_nnx_calls_only = True
    filter_name: ClassVar[str]
    unused_message: ClassVar[str]
    unused_help: ClassVar[str]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._constructions: list[nodes.Call] = []
        self._consumed: set[int] = set()

    def visit_call(self, node: nodes.Call) -> None:
        facts = fact_index(self.context)
        if facts.filter_construction(node, self.filter_name):
            self._constructions.append(node)
            return
        call = facts.nnx_call(node)
        if call is None or not call.is_transform:
            return
        affected = self.context.flip_changes(call)
        for argument, value, expression, reference in facts.filters_in_prefixes(call, self.filter_name):
            self._consumed.add(id(expression))
            if affected:
                self._report_use(call, argument, value, expression, reference)

    def _report_use(self, call: NNXCall, argument: str, value, construction: nodes.Call, reference) -> None:
        self.report(
            reference,
            filter=self.filter_name,
            transform=call.name,
            argument=argument,
            position=position_in(value, reference),
            filter_args=[a.as_string() for a in construction.args],
            form=call.form,
            line_constructed=construction.lineno,
            pin=pin_sites_in(self.context, call),
            related=[(construction, f"the `nnx.{self.filter_name}` is constructed here"),
                     (call.node, f"used by `nnx.{call.name}` here")],
        )

    def leave_module(self, node: nodes.Module) -> None:
        for construction in self._constructions:
            # A filter that reaches no transform here is reported only if it may reach one
            # elsewhere: constructing it does not raise, a transform reading it does. One only
            # read where it is made (a lookup helper's ``map_prefix``) breaks nothing.
            if id(construction) in self._consumed or not may_leave(construction):
                continue
            if self.context.mode.scope_keeps_graph_mode(construction):
                continue
            self.report(
                construction,
                message=self.unused_message,
                help=self.unused_help,
                filter=self.filter_name,
                transform=None,
                argument=None,
                position=None,
                filter_args=[a.as_string() for a in construction.args],
                form="construction",
                line_constructed=construction.lineno,
            )
