"""NNX002 ``unparsable-file``: the rule, its examples."""
from __future__ import annotations

from nnx_lint.rule import Invalid, Rule, Valid


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
