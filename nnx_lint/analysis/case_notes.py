"""The note a finding gets when it holds in one case of a parameterised test.

The name resolver reads a test parameter such as ``jit_fn`` as ``nnx.jit`` when that is the NNX
case among ``jax.jit`` / ``nnx.jit`` (:mod:`nnx_lint.analysis.test_cases`) and records the choice.
A finding whose code names the parameter then says which case it holds in, as a related location
at the decorator's value: "the case where `jit_fn` is `nnx.jit`".
"""
from __future__ import annotations

import itertools

from astroid import nodes

from nnx_lint.analysis.flow import lookup

#: How many names of one node :func:`case_notes` reads (a finding's node may be a whole function).
_MAX_NAMES_READ = 400


def case_notes(anchors: list, choices: dict[int, tuple[nodes.NodeNG, str]]) -> list[tuple[nodes.NodeNG, str]]:
    """Related locations for a finding that holds in one case of a parameterised test: for each
    parameter read as an NNX function (``choices``, the name resolver's) that a name in the
    ``anchors`` (the finding's nodes) refers to, the case's value in the decorator."""
    notes: list[tuple[nodes.NodeNG, str]] = []
    if not choices:
        return notes
    seen: set[int] = set()
    for anchor in anchors:
        if not isinstance(anchor, nodes.NodeNG):
            continue
        names = [anchor] if isinstance(anchor, nodes.Name) else []
        names += list(itertools.islice(anchor.nodes_of_class(nodes.Name), _MAX_NAMES_READ))
        for name in names:
            _scope, assignments = lookup(name)
            for assignment in assignments:
                choice = choices.get(id(assignment))
                if choice is not None and id(assignment) not in seen:
                    seen.add(id(assignment))
                    value, parameter = choice
                    notes.append((value, f"the case where `{parameter}` is `{value.as_string()}`"))
    return notes
