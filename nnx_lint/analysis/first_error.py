"""Which error Tree Mode raises first on a line, named in the later findings' messages.

Several rules can flag one line (``nnx.grad(f)(m, m)`` over a Module with integer state:
NNX103's ``Duplicate`` ValueError and NNX401's TypeError). Tree Mode stops at the first
check that fails, so a message naming a later error (or promising a silent change) is not
what the user sees. Each rule has a ``stage``: the order in which Tree Mode's checks fire
(:data:`STAGES`). On a line with findings of several stages, each finding after the first
raising one gets :data:`TEMPLATE` appended, naming that error and its code.

>>> from nnx_lint.base.diagnostic import Diagnostic
>>> def finding(code, kind, message):
...     return Diagnostic(code, "s", message, "m.py", 3, 1, 3, 9, kind)
>>> later, first = name_first_errors(
...     [finding("NNX401", "raises", "grad over ints: Tree Mode raises TypeError"),
...      finding("NNX103", "raises", "m and m share Variables: Tree Mode raises ValueError")],
...     {"NNX401": 30, "NNX103": 20}.get)
>>> later.message
'grad over ints: Tree Mode raises TypeError; but Tree Mode raises ValueError first (NNX103)'
>>> first.message
'm and m share Variables: Tree Mode raises ValueError'
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from nnx_lint.base.diagnostic import UNPROVEN, Diagnostic

#: Tree Mode's checks, in the order they fire on one line (measured with flax 0.12.8):
#: creating the transform (prefix filters are rejected there), flattening its inputs (Variable aliasing), tracing (grad over non-float state),
#: then silent changes (which raise nothing). A raising rule whose place in this order has
#: not been measured has no stage, and takes no part.
STAGES: dict[str, int] = {
    "transform-created": 10,
    "inputs-flattened": 30,
    "traced": 40,
    "silent": 90,
}
#: What a later finding on the line says about the first error.
TEMPLATE = "; but Tree Mode raises {error} first ({code})"
_ERROR = re.compile(r"Tree Mode raises (\w+(?:Error|Exception))")


def name_first_errors(diagnostics: list[Diagnostic], stage_of: Callable[[str], int | None]) -> list[Diagnostic]:
    """``diagnostics`` (one file's), each finding after the first raising one on its line
    carrying :data:`TEMPLATE`; ``stage_of(code)`` is the rule's stage (None: not staged,
    as NNX0xx linter findings). Order is kept."""
    first: dict[tuple, tuple[int, Diagnostic]] = {}
    for diagnostic in diagnostics:
        stage = stage_of(diagnostic.code)
        if stage is None or diagnostic.kind != "raises" or diagnostic.proof == UNPROVEN:
            continue  # an unproven finding (audit mode) is not known to raise at all
        key = _line(diagnostic)
        if key not in first or stage < first[key][0]:
            first[key] = (stage, diagnostic)
    out = []
    for diagnostic in diagnostics:
        stage = stage_of(diagnostic.code)
        found = first.get(_line(diagnostic))
        if stage is None or found is None or found[0] >= stage or found[1].code == diagnostic.code:
            out.append(diagnostic)
            continue
        match = _ERROR.search(found[1].message)
        note = TEMPLATE.format(error=match.group(1) if match else "an error", code=found[1].code)
        out.append(dataclasses.replace(diagnostic, message=diagnostic.message + note))
    return out


def _line(diagnostic: Diagnostic) -> tuple:
    return (diagnostic.path, diagnostic.cell, diagnostic.line)


__all__ = ["STAGES", "TEMPLATE", "name_first_errors"]
