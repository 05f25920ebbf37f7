"""NNX002 ``unparsable-file``: the rule, its examples."""
from __future__ import annotations

from nnx_lint.api import Invalid, Rule, Valid


class SyntaxErrorInFile(Rule):
    """The file does not parse, or uses syntax newer than its target Python version.

    What it does:
        Reports a syntax error at its position. Syntax that a newer Python accepts is not an
        error: nnx-lint reads PEP 701 f-strings, ``type`` aliases, generics (with defaults),
        ``except*`` and PEP 646 stars on every Python it runs on (3.10 and later), and gives
        the same findings on each. It is reported only when it is newer than the project's
        target version (``--target-version``, ``target-version`` in ``[tool.nnx-lint]``, or
        the lower bound of ``[project] requires-python``), one diagnostic per use, as Ruff
        reports its version-related syntax errors; the file is then still analysed.

    Why is this bad?:
        A file that does not parse cannot be analysed; its Tree Mode breaks stay hidden.
        Every other file is still linted. Syntax newer than the target version fails on the
        oldest Python the project says it supports.

    References:
        - [Python grammar changes by version](https://docs.python.org/3/whatsnew/)
    """

    code = "NNX002"
    no_fix_reason = 'the file does not parse: a fix could not keep it valid Python'
    symbol = "unparsable-file"
    message = "{reason}"
    help = (
        "Fix the syntax error; for syntax newer than the target version, spell it for the target, "
        "or raise `target-version` (or `requires-python`) if the project needs the newer Python"
    )
    kind = "linter"
    engine_reported = True
    no_reproduction_reason = "it reports on the file itself, not on a Tree Mode pattern"
    VALID = [
        Valid("parses", "from flax import nnx\nmodel = None\n"),
        Valid("newer-syntax-without-target", "from flax import nnx\ntype Params = nnx.State\n"),
        Valid("within-target", "from flax import nnx\ntype Params = nnx.State\n", target_version=(3, 12)),
    ]
    INVALID = [
        Invalid("unclosed-parenthesis", "from flax import nnx\nmodel = nnx.Linear(2, 3  # NNX002\n"),
        Invalid(
            "newer-than-target",
            "from flax import nnx\ntype Params = nnx.State  # NNX002\n",
            target_version=(3, 11),
        ),
    ]
