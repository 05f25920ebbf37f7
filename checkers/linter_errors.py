"""NNX0xx: the file itself could not be analysed (reported by the engine, never a crash),
and the off-by-default check of the file's ``# noqa`` comments (NNX009)."""
from __future__ import annotations

from nnx_lint.rule import Invalid, Rule, Valid
from nnx_lint.unused_noqa import UNUSED_NOQA_CODE

_DEEP_EXPRESSION = "x = " + "1 + " * 5000 + "1\n"


class UnreadableFile(Rule):
    """The file cannot be read or decoded.

    What it does:
        Reports a file whose bytes cannot be read (missing, no permission, a dangling
        symlink or a symlink loop), a path that is not a regular file (a FIFO, a device
        or a socket named ``*.py``: never opened, so it cannot hang or flood the run), a
        notebook that is not a well-formed Jupyter notebook (invalid or too deeply
        nested JSON, not UTF-8, no ``cells`` list, a cell ``source`` that is not text),
        and a file that cannot be decoded with the encoding Python would use (UTF-8, or
        the one its ``# -*- coding: -*-`` line declares); then the diagnostic points at
        the first undecodable byte.

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
    help = "Save the file as UTF-8, or declare its real encoding in a `# -*- coding: ... -*-` line (PEP 263)"
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
    help = (
        "Fix the syntax error; for syntax newer than the Python running nnx-lint, run nnx-lint with "
        "the Python version the message names"
    )
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


class AnalysisSkipped(Rule):
    """The file is too large, over its analysis budget, or too deeply nested to analyse.

    What it does:
        Reports a file that nnx-lint will not analyse because of its cost: source over
        4 MiB (a notebook over 16 MiB on disk, or with over 4 MiB of code); source over
        the analysis budget of 400 000 tokens and lines, checked before any tree is
        built (the largest file of google/flax has 75 000); an analysis that ran over
        60 seconds (then stopped, with no other diagnostic for the file); and a file
        nested so deeply that Python's parser hits its recursion limit (very long
        generated expressions). Only the first 4 MiB + 1 byte of a file are ever read.

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


class UnusedNoqa(Rule):
    """A `# noqa` comment names an NNX code that is unknown or suppressed nothing.

    What it does:
        Reports `# noqa: NNX...` codes that no nnx-lint rule has (`# noqa: NNX999`) and
        codes of rules that ran on the file but reported nothing on that line, like Ruff's
        `RUF100`. Only `NNX` codes are judged: other tools' codes (`E501`) and a bare
        `# noqa` are left alone, and so are codes of rules not enabled in this run (they
        may fire in another configuration). `# noqa: NNX009` on a line opts it out.
        Off by default: turn it on with `--extend-select NNX009`.

    Why is this bad?:
        A stale or mistyped suppression hides nothing today and silently hides the next
        real finding on that line tomorrow; a misspelt code suppresses nothing at all
        while looking as if it did. As a team migrates, suppressions added with
        `--add-noqa` go stale line by line: this finds them.

    References:
        - [Ruff: unused-noqa (RUF100)](https://docs.astral.sh/ruff/rules/unused-noqa/)
        - [flake8: selecting and ignoring violations](https://flake8.pycqa.org/en/latest/user/violations.html)
    """

    code = UNUSED_NOQA_CODE
    symbol = "unused-noqa"
    message = "Unused `noqa` directive ({detail})"
    help = ("Remove the unused codes from the `# noqa` comment (fix a misspelt one), so a real finding on "
            "this line is not hidden later")
    kind = "advisory"
    default_enabled = False
    engine_reported = True
    no_reproduction_reason = "it reports on a suppression comment, not on a Tree Mode pattern"
    no_fix_reason = ("the message names the codes to remove from the comment; removing them automatically "
                     "(as Ruff's RUF100 fix does) is not built yet")
    VALID = [
        Valid(
            "other-tools-and-rules-not-run",
            "from flax import nnx\n"
            "x = 1  # noqa: E501\n"
            "y = 2  # noqa\n"
            "z = 3  # noqa: NNX201 (that rule is not enabled in this run)\n",
        ),
    ]
    INVALID = [
        Invalid("unknown-code", "from flax import nnx\nx = 1  # noqa: NNX999  # NNX009\n"),
        Invalid("opted-out-line-and-typo", "from flax import nnx\nx = 1  # noqa: NNX999, NNX009\ny = 2  # noqa: NNX9999  # NNX009\n"),
    ]
