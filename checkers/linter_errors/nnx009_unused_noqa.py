"""NNX009 ``unused-noqa``: the rule, its examples."""
from __future__ import annotations

from nnx_lint.api import UNUSED_NOQA_CODE, Invalid, Rule, Valid


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
