"""What the grad semantics rules report about a differentiated argument: the facts NNX401-NNX404
share, and the grad's sites as related locations."""
from __future__ import annotations

from dataclasses import dataclass, field

from astroid import nodes

from nnx_lint.api import ABSENT, Facts, gradients


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


def grad_sites(application: gradients.GradApplication) -> list[tuple[nodes.NodeNG, str]]:
    """The grad's creation and its application, as related locations of a finding."""
    sites = [(application.transform_node, f"the `nnx.{application.transform}` is created here"),
             (application.call, "and applied here")]
    return [(node, text) for node, text in sites if node is not None]
