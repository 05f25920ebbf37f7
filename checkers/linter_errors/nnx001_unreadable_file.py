"""NNX001 ``unreadable-file``: the rule, its examples."""
from __future__ import annotations

from nnx_lint.api import Invalid, Rule, Valid


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
