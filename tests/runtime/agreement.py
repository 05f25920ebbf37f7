"""Print the differential agreement rate: ``python tests/runtime/agreement.py``.

Each program runs against tree_runtime and flax.nnx (Tree Mode); a program
agrees when outcomes match (numbers to rtol 1e-5, errors by category), or,
for a documented deviation, when each side does what the deviation says.
"""

from __future__ import annotations

import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# This checkout's tree_runtime, not an installed one.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
warnings.filterwarnings("ignore")

from runtime_deviations import agrees  # noqa: E402
from runtime_programs import PROGRAMS  # noqa: E402


def main() -> int:
    plain = deviating = plain_ok = deviating_ok = traced = traced_ok = 0
    for prog in PROGRAMS.values():
        ok, ours, theirs = agrees(prog)
        if prog.deviation is None:
            plain, plain_ok = plain + 1, plain_ok + ok
        else:
            deviating, deviating_ok = deviating + 1, deviating_ok + ok
        if not ok:
            print(f"DISAGREE {prog.name}: runtime {str(ours)[:200]} | flax {str(theirs)[:200]}")
        if prog.trace:
            ok_t, _, _ = agrees(prog, traced=True)
            traced, traced_ok = traced + 1, traced_ok + ok_t
    print(f"programs: {len(PROGRAMS)}")
    print(f"identical outcome (runtime == flax tree mode): {plain_ok}/{plain} ({100 * plain_ok / plain:.1f}%)")
    print(f"documented deviations behaving as documented: {deviating_ok}/{deviating}")
    print(f"also identical under jax.make_jaxpr: {traced_ok}/{traced}")
    print(f"overall agreement (incl. documented deviations): {plain_ok + deviating_ok}/{len(PROGRAMS)}")
    for prog in PROGRAMS.values():
        if prog.deviation is not None:
            print(f"  deviation {prog.deviation.row} ({prog.name}): runtime {prog.deviation.runtime}, flax {prog.deviation.flax}")
    return 0 if plain_ok == plain and deviating_ok == deviating else 1


if __name__ == "__main__":
    raise SystemExit(main())
