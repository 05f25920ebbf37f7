"""The two modes the gate runs the tests in: the one place that knows flax's variables.

flax 0.12.8 defines both switches in ``flax/configurations.py`` with ``bool_flag``
(``nnx_graph_mode`` and ``nnx_graph_updates``, default True), which reads the upper-cased
name from the environment once, at import, through ``static_bool_env``. See docs/gate.md.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mode:
    """A named set of environment variables that puts flax NNX in one mode."""

    name: str
    label: str
    environment: dict[str, str]
    #: The values of ``flax.config.nnx_graph_mode`` / ``nnx_graph_updates`` this mode must produce.
    expected_config: dict[str, bool]


# Graph mode is set explicitly, so the graph run does not depend on the flax version's defaults.
GRAPH = Mode("graph", "graph mode",
             {"NNX_GRAPH_MODE": "true", "NNX_GRAPH_UPDATES": "true"},
             {"nnx_graph_mode": True, "nnx_graph_updates": True})
TREE = Mode("tree", "Tree Mode",
            {"NNX_GRAPH_MODE": "false", "NNX_GRAPH_UPDATES": "false"},
            {"nnx_graph_mode": False, "nnx_graph_updates": False})
MODES = (GRAPH, TREE)
