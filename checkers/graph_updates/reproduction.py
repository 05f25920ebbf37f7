"""Reproduction builders and program pieces shared by several graph updates rules."""
from __future__ import annotations

import textwrap

from nnx_lint.api import GRAD_TRANSFORMS, TRANSFORMS, choice_or


# -- reproduction helpers -------------------------------------------------------------------

#: Names a reproduction must not reuse as attribute names (Module API, the fixtures' own).
RESERVED_NAMES = frozenset(
    "eval train sow perturb set_attributes iter_modules iter_children w change read lin drop "
    "layers init_cache".split()
)


def dedented(text: str) -> str:
    """``text`` dedented, without surrounding blank lines, ending in one newline."""
    return textwrap.dedent(text).strip("\n") + "\n"


def under(transform: str | None, fn: str, args: str = "m", loss: str = "m.w[...].sum()") -> tuple[str, str]:
    """``(statement, note)``: a statement running ``fn(args)`` under the flagged transform.

    Transforms the reference runtime lacks, or that cannot carry the change in graph mode
    either, run the same function under ``nnx.jit`` (the note says why). ``transform`` is a
    fact: only a known NNX transform's name reaches the program (in the note)."""
    t = choice_or(transform or "jit", TRANSFORMS, "another transform")
    if t == "cond":
        return f"nnx.cond(True, {fn}, {fn}, {args})", ""
    if t == "switch":
        return f"nnx.switch(0, [{fn}, {fn}], {args})", ""
    if t == "vmap":
        return f"nnx.vmap({fn}, in_axes=None, axis_size=2)({args})", ""
    if t == "pmap":
        return (f"nnx.vmap({fn}, in_axes=None, axis_size=2)({args})",
                "# nnx.pmap: the same per-call copy; vmap stands in for it on one CPU device\n")
    if t in GRAD_TRANSFORMS:
        return f"nnx.{t}(lambda {args}: ({fn}({args}), {loss})[1])({args})", ""
    if t == "remat":
        return f"nnx.remat({fn})({args})", ""
    if t == "eval_shape":
        return f"nnx.eval_shape({fn}, {args})", ""
    if t in ("scan", "fori_loop", "while_loop"):
        return (f"nnx.jit({fn})({args})",
                f"# found under nnx.{t}: a loop carry cannot change structure in graph mode either, so the\n"
                "# same change runs under nnx.jit\n")
    found = f"nnx.{t}" if t in TRANSFORMS else t
    note = "" if t == "jit" else f"# found under {found}: the same change under nnx.jit\n"
    return f"nnx.jit({fn})({args})", note
