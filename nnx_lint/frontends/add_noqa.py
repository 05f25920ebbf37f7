"""``nnx-lint check --add-noqa``: suppress every current finding in place, as Ruff does.

Each finding's line gets ``# noqa: NNXnnn`` (merged into an existing ``# noqa: X``
comment). The tokenizer decides where a comment may go: never inside a multi-line string
and never after a backslash continuation. Such a line's comment goes on the line of the
statement's last token, but only if the noqa machinery then applies it to the finding
(it checks that, rather than assuming); otherwise the finding is left as is and named.
Notebooks are not edited (their JSON would be rewritten): their findings are named too.
A second run adds nothing: the findings are suppressed by then.
"""
from __future__ import annotations

import io
import re
import tokenize
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from nnx_lint.base import bounds
from nnx_lint.base.confined_writes import WriteRefused, WriteScope, write_confined
from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.base.noqa import _NOQA, apply_noqa


@dataclass
class NoqaOutcome:
    """What ``--add-noqa`` did."""

    added: int = 0
    files: set[str] = field(default_factory=set)
    #: ``path:line: why`` for every finding that was left as is.
    skipped: list[str] = field(default_factory=list)


def add_noqa(diagnostics: list[Diagnostic], scope: WriteScope) -> NoqaOutcome:
    """Insert the comments for ``diagnostics`` into their files, writing only inside ``scope``."""
    outcome = NoqaOutcome()
    by_file: dict[str, list[Diagnostic]] = defaultdict(list)
    for diagnostic in diagnostics:
        by_file[diagnostic.path].append(diagnostic)
    for path, found in sorted(by_file.items()):
        if path.endswith(".ipynb"):
            outcome.skipped += [f"{path}: cell {d.cell or '?'}:{d.line}: notebooks are not edited by "
                                f"--add-noqa" for d in found]
            continue
        _add_to_file(Path(path), found, outcome, scope)
    return outcome


def _add_to_file(path: Path, diagnostics: list[Diagnostic], outcome: NoqaOutcome, scope: WriteScope) -> None:
    try:
        data = bounds.read_bounded(path)
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except bounds.ParseFailure as failure:
        outcome.skipped += [f"{path}:{d.line}: cannot edit the file ({failure.message})" for d in diagnostics]
        return
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        outcome.skipped += [f"{path}:{d.line}: cannot edit the file ({exc})" for d in diagnostics]
        return
    changes, skipped = plan_noqa(text, diagnostics)
    outcome.skipped += [f"{path}:{d.line}: {why}" for d, why in skipped]
    lines = text.splitlines(keepends=True)
    changed = 0
    for target, (after, count) in changes.items():
        lines[target - 1] = after
        changed += count
    if changed:
        try:
            write_confined(path, "".join(lines).encode(encoding), scope)
        except (WriteRefused, OSError) as exc:
            outcome.skipped += [f"{path}:{d.line}: not edited: {exc}" for d in diagnostics]
            return
        outcome.added += changed
        outcome.files.add(str(path))


def plan_noqa(text: str, diagnostics: list[Diagnostic]) -> tuple[dict[int, tuple[str, int]], list[tuple[Diagnostic, str]]]:
    """Where the comments for ``diagnostics`` go in ``text``, without writing anything:
    ``{line number: (the new line, codes added)}`` for the lines that change, and each
    finding that cannot get one with the reason (the CLI's ``--add-noqa`` and the language
    server's "noqa" code action both ask this).

    >>> from nnx_lint.base.diagnostic import Diagnostic
    >>> finding = Diagnostic("NNX201", "s", "m", "f.py", 1, 1, 1, 2, "raises")
    >>> plan_noqa("f(x)  # noqa: E501\\n", [finding])
    ({1: ('f(x)  # noqa: E501, NNX201\\n', 1)}, [])
    """
    lines = text.splitlines(keepends=True)
    placement = _Placement.of(text)
    if placement is None:
        return {}, [(d, "the file does not tokenize") for d in diagnostics]
    skipped: list[tuple[Diagnostic, str]] = []
    wanted: dict[int, list[str]] = defaultdict(list)
    for diagnostic in diagnostics:
        target = placement.target(diagnostic.line)
        if target is None or not 0 < target <= len(lines):
            skipped.append((diagnostic, "no line of the statement can carry a comment"))
            continue
        # Ask the noqa machinery whether a comment there would suppress this finding.
        trial = list(lines)
        trial[target - 1] = _with_codes(trial[target - 1], [diagnostic.code])
        if apply_noqa([diagnostic], "".join(trial)):
            skipped.append((diagnostic, "the line ends inside a string or continues on the next one, "
                                        f"and a `# noqa` on line {target} does not apply to it"))
            continue
        if diagnostic.code not in wanted[target]:
            wanted[target].append(diagnostic.code)
    changes: dict[int, tuple[str, int]] = {}
    for target, codes in wanted.items():
        before = lines[target - 1]
        after = _with_codes(before, codes)
        if after != before:
            changes[target] = (after, len(codes))
    return changes, skipped


def _with_codes(line: str, codes: list[str]) -> str:
    """``line`` with ``codes`` in its noqa comment (merged into one that exists)."""
    body = line.rstrip("\r\n")
    ending = line[len(body):]
    match = _NOQA.search(body)
    if match is None:
        return f"{body.rstrip()}  # noqa: {', '.join(sorted(codes))}{ending}"
    if match.group("codes") is None:
        return line  # a bare `# noqa` already suppresses everything
    present = re.split(r"[,\s]+", match.group("codes"))
    # As written, as noqa matches them: `nnx201` suppresses nothing, so NNX201 is added.
    missing = [c for c in sorted(codes) if not any(c.startswith(p) for p in present if p)]
    if not missing:
        return line
    return body[: match.end("codes")] + ", " + ", ".join(missing) + body[match.end("codes"):] + ending


@dataclass
class _Placement:
    """Which lines can end with a comment, and where each statement ends."""

    blocked: set[int]
    statement_end: dict[int, int]

    @classmethod
    def of(cls, text: str) -> _Placement | None:
        blocked: set[int] = set()
        statement_end: dict[int, int] = {}
        first_line_of_statement = 1
        fstring_start: list[int] = []
        comments: set[int] = set()
        fstring_start_type = getattr(tokenize, "FSTRING_START", None)
        fstring_end_type = getattr(tokenize, "FSTRING_END", None)
        physical = text.splitlines()
        try:
            for token in tokenize.generate_tokens(io.StringIO(text).readline):
                start, end = token.start[0], token.end[0]
                if token.type == fstring_start_type:
                    fstring_start.append(start)
                elif token.type == fstring_end_type and fstring_start:
                    blocked.update(range(fstring_start.pop(), end))  # lines inside a 3.12 f-string
                elif token.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT) and end > start:
                    blocked.update(range(start, end))  # a multi-line string: its lines end inside it
                if token.type == tokenize.COMMENT:
                    comments.add(start)
                if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                    for number in range(first_line_of_statement, start + 1):
                        statement_end[number] = start
                    first_line_of_statement = start + 1
        except (tokenize.TokenError, SyntaxError):
            return None
        for number, line in enumerate(physical, start=1):
            if line.rstrip().endswith("\\") and number not in blocked and number not in comments:
                blocked.add(number)  # a backslash continuation: nothing may follow it
        return cls(blocked, statement_end)

    def target(self, line: int) -> int | None:
        """The line that should carry the comment for a finding on ``line``, or None."""
        if line not in self.blocked:
            return line
        end = self.statement_end.get(line)
        if end is None or end in self.blocked:
            return None
        return end
