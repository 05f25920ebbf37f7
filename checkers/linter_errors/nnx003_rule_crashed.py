"""NNX003 ``rule-crashed``: the rule, its examples."""
from __future__ import annotations

from nnx_lint.api import Rule, Valid


class RuleCrashed(Rule):
    """A rule failed on this file; the other rules and files were still checked.

    What it does:
        Reports that one rule raised an exception while analysing this file. The rule is
        skipped for the rest of the file; ``--verbose`` prints the traceback. A failure
        of nnx-lint outside any rule is reported the same way, once, and the file is not
        analysed; every other file still is.

    Why is this bad?:
        The file may hide findings of that rule. It is a bug in nnx-lint: please report it
        with the traceback.

    References:
        - nnx-lint's issue tracker.
    """

    code = "NNX003"
    no_fix_reason = 'a rule failed: nothing is known about the code to change'
    symbol = "rule-crashed"
    message = "{reason}"
    help = "This is a bug in nnx-lint: please report it with the traceback that `--verbose` prints"
    kind = "linter"
    engine_reported = True
    no_reproduction_reason = "it reports on the file itself, not on a Tree Mode pattern"
    #: No program can trigger this on purpose: if one did, it would be a bug to fix. The
    #: engine's handling is tested with a deliberately failing rule (tests/test_engine.py).
    no_invalid_case_reason = "only a bug in a rule triggers it; tested by fault injection"
    VALID = [Valid("ordinary-file", "from flax import nnx\nmodel = nnx.Linear(2, 3, rngs=nnx.Rngs(0))\n")]
    INVALID = []
