"""NNX0xx: the file itself could not be analysed. Reported by the engine, never a crash."""
from __future__ import annotations

from nnx_lint.rule import Invalid, Rule, Valid

_DEEP_EXPRESSION = "x = " + "1 + " * 5000 + "1\n"


class UnreadableFile(Rule):
    """The file cannot be read or decoded.

    What it does:
        Reports a file whose bytes cannot be read, or cannot be decoded with the
        encoding Python would use (UTF-8, or the one its ``# -*- coding: -*-`` line
        declares). The diagnostic points at the first undecodable byte.

    Why is this bad?:
        nnx-lint cannot see any code in such a file, so it cannot promise the file is
        ready for Tree Mode. Every other file is still linted.

    References:
        - [PEP 263: source code encodings](https://peps.python.org/pep-0263/)
    """

    code = "NNX001"
    no_fix_reason = 'the file could not be read: there is no code to change'
    symbol = "unreadable-file"
    message = "{reason}"
    kind = "linter"
    engine_reported = True
    no_reproduction_reason = "it reports on the file itself, not on a Tree Mode pattern"
    VALID = [Valid("utf8-with-accents", "from flax import nnx\nname = 'café'\n")]
    INVALID = [
        Invalid(
            "wrong-declared-encoding",
            "# -*- coding: ascii -*-\nfrom flax import nnx\nname = 'café'  # NNX001\n",
        )
    ]


class SyntaxErrorInFile(Rule):
    """The file does not parse.

    What it does:
        Reports a syntax error at its position. When the file uses syntax newer than
        the Python running nnx-lint (``type X = ...`` needs 3.12), the message says so
        and which Python to run nnx-lint with.

    Why is this bad?:
        A file that does not parse cannot be analysed; its Tree Mode breaks stay hidden.
        Every other file is still linted.

    References:
        - [Python grammar changes by version](https://docs.python.org/3/whatsnew/)
    """

    code = "NNX002"
    no_fix_reason = 'the file does not parse: a fix could not keep it valid Python'
    symbol = "unparsable-file"
    message = "{reason}"
    kind = "linter"
    engine_reported = True
    no_reproduction_reason = "it reports on the file itself, not on a Tree Mode pattern"
    VALID = [Valid("parses", "from flax import nnx\nmodel = None\n")]
    INVALID = [
        Invalid("unclosed-parenthesis", "from flax import nnx\nmodel = nnx.Linear(2, 3  # NNX002\n"),
        Invalid(
            "newer-syntax",
            "from flax import nnx\ntype Params = nnx.State  # NNX002\n",
            python_below=(3, 12),
        ),
    ]


class RuleCrashed(Rule):
    """A rule failed on this file; the other rules and files were still checked.

    What it does:
        Reports that one rule raised an exception while analysing this file. The rule is
        skipped for the rest of the file; ``--verbose`` prints the traceback.

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
    kind = "linter"
    engine_reported = True
    no_reproduction_reason = "it reports on the file itself, not on a Tree Mode pattern"
    #: No program can trigger this on purpose: if one did, it would be a bug to fix. The
    #: engine's handling is tested with a deliberately failing rule (tests/test_engine.py).
    no_invalid_case_reason = "only a bug in a rule triggers it; tested by fault injection"
    VALID = [Valid("ordinary-file", "from flax import nnx\nmodel = nnx.Linear(2, 3, rngs=nnx.Rngs(0))\n")]
    INVALID = []


class AnalysisSkipped(Rule):
    """The file is too large or too deeply nested to analyse.

    What it does:
        Reports a file over 4 MiB, or one nested so deeply that Python's parser hits its
        recursion limit (very long generated expressions).

    Why is this bad?:
        Such files are usually generated; nnx-lint gives up on them rather than stall or
        crash. Every other file is still linted.

    References:
        - [sys.setrecursionlimit](https://docs.python.org/3/library/sys.html#sys.setrecursionlimit)
    """

    code = "NNX004"
    no_fix_reason = 'the file was not analysed: nothing is known about the code to change'
    symbol = "analysis-skipped"
    message = "{reason}"
    kind = "linter"
    engine_reported = True
    no_reproduction_reason = "it reports on the file itself, not on a Tree Mode pattern"
    VALID = [Valid("short-expression", "from flax import nnx\nx = 1 + 1 + 1\n")]
    INVALID = [Invalid("generated-deep-expression", "from flax import nnx  # NNX004\n" + _DEEP_EXPRESSION)]
