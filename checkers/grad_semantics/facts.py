"""What the grad semantics rules report about a differentiated argument: the facts NNX401-NNX404
share, and how its holdings and the grad's sites are shown."""
from __future__ import annotations

from dataclasses import dataclass, field

from astroid import nodes

from nnx_lint.api import ABSENT, Facts, Holdings, gradients


@dataclass(frozen=True, kw_only=True)
class DifferentiatedArgumentFacts(Facts):
    """The facts NNX401-NNX403 share: the differentiated argument and what is known of its
    class (each rule's facts add their own after these)."""

    argument: str
    position: int
    class_: str | None = field(metadata={'key': 'class'})
    class_qualified_name: str | None
    class_evidence: str
    confidence: str
    variable_types: list = ABSENT
    unknown_parts: list = ABSENT
    pin: list


def holding_facts(holdings: Holdings, categories) -> list[dict]:
    """The holdings of ``categories`` as facts (at most twelve)."""
    return [h.as_fact() for h in holdings.of(categories)][:12]


def describe_holdings(holdings: Holdings, categories) -> str:
    """The first four holdings of ``categories`` as ``path: Type (dtype)``, for a message."""
    parts = []
    for holding in holdings.of(categories)[:4]:
        dtype = {"integer": " (int)", "float": " (float)", "unknown-dtype": " (dtype unknown)"}.get(holding.category, "")
        parts.append(f"{holding.path or '<self>'}: {holding.variable_type}{dtype}")
    more = len(holdings.of(categories)) - 4
    return ", ".join(parts) + (f", +{more} more" if more > 0 else "")


def grad_sites(application: gradients.GradApplication) -> list[tuple[nodes.NodeNG, str]]:
    """The grad's creation and its application, as related locations of a finding."""
    sites = [(application.transform_node, f"the `nnx.{application.transform}` is created here"),
             (application.call, "and applied here")]
    return [(node, text) for node, text in sites if node is not None]
