"""NNX004 ``analysis-skipped``: the rule, its examples."""
from __future__ import annotations

from nnx_lint.api import Invalid, Rule, Valid


_DEEP_EXPRESSION = "x = " + "1 + " * 5000 + "1\n"


class AnalysisSkipped(Rule):
    """The file is too large, over its analysis budget, or too deeply nested to analyse.

    What it does:
        Reports a file that nnx-lint will not analyse, or not analyse whole, because of
        its cost: source over 4 MiB (a notebook over 16 MiB on disk, or with over 4 MiB
        of code); source over the analysis budget of 400 000 tokens and lines, checked
        before any tree is built (the largest file of google/flax has 75 000); a file
        nested so deeply that Python's parser hits its recursion limit (very long
        generated expressions). Only the first 4 MiB + 1 byte of a file are ever read.

        An analysis that runs over 60 seconds of CPU time, or whose class models replay over
        100 000 steps (initialisers calling base initialisers over and over), is
        stopped: the diagnostics found before it stopped are reported with this one.
        Project modules the file imports are read up to 1 000 000 tokens and lines in
        all (or half of the file's time): the ones that do not fit are not read, this
        diagnostic names them, and the file's own code is still analysed whole.

        A file whose ``-j`` worker process died while analysing it (killed by the
        out-of-memory killer, or a crash of native code) is retried alone in a fresh
        worker; if that one dies too, the file gets this diagnostic, saying how the
        worker ended.

    Why is this bad?:
        Such files are usually generated; nnx-lint gives up on them rather than stall,
        exhaust memory or crash, so that time and memory per file stay bounded. Every
        other file is still linted.

    References:
        - [sys.setrecursionlimit](https://docs.python.org/3/library/sys.html#sys.setrecursionlimit)
    """

    code = "NNX004"
    no_fix_reason = 'the file was not analysed: nothing is known about the code to change'
    symbol = "analysis-skipped"
    message = "{reason}"
    help = "Exclude generated files from linting (`exclude` under `[tool.nnx-lint]`); every other file is still linted"
    kind = "linter"
    engine_reported = True
    no_reproduction_reason = "it reports on the file itself, not on a Tree Mode pattern"
    VALID = [Valid("short-expression", "from flax import nnx\nx = 1 + 1 + 1\n")]
    INVALID = [Invalid("generated-deep-expression", "from flax import nnx  # NNX004\n" + _DEEP_EXPRESSION)]
