"""``# noqa`` and ``# noqa: NNX201, NNX202`` suppression comments, as in Ruff/flake8.

Comments are found with Python's tokenizer, so line numbers are the tree's own (a form
feed or a lone ``\\r`` in the file never shifts them) and ``# noqa`` inside a string is
not a comment. As in flake8 (which applies ``# noqa`` for the flake8 plugin), a comment
covers every line of the run of tokens it ends: all lines of a triple-quoted string or of
lines joined with a backslash (inside brackets each line is its own run). The CLI,
flake8 and pylint therefore suppress the same diagnostics; the one difference left is
flake8's, which also takes ``# noqa`` inside a string literal for a comment. A file the
tokenizer rejects falls back to searching each physical line.

``noqa`` itself may be written in any case, but codes are matched as written, as flake8
and Ruff match them: ``# noqa: nnx201`` suppresses nothing in any front-end (Ruff warns
that it is invalid; NNX009 reports it as an unknown code).

A comment ``# nnx-lint: noqa`` anywhere in a file (on its own line or after code, but a
comment: never text in a string) exempts the whole file, and ``# nnx-lint: noqa: NNX201``
exempts it from those codes only, like Ruff's ``# ruff: noqa``. The CLI, flake8 and pylint
all apply it through :func:`file_exemption` (flake8 knows only its own ``# flake8: noqa``,
which the CLI and pylint honour in turn when flake8 would: alone on its line, without codes).
"""
from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Iterator

from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.base.lines import physical_lines

#: The code of unknown and unused ``# noqa`` codes (NNX009, computed in ``nnx_lint.engine.unused_noqa``).
UNUSED_NOQA_CODE = "NNX009"

_NOQA = re.compile(
    r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE
)

_FILE_NOQA = re.compile(
    r"#\s*nnx-lint\s*:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?\s*$", re.IGNORECASE
)

#: flake8's own file-level comment, which flake8 applies to the plugin's findings: the CLI and
#: pylint honour it too (as Ruff does), on its own line and without codes, as flake8 requires.
_FLAKE8_FILE_NOQA = re.compile(r"#\s*flake8[:=]\s*noqa(?!:)", re.IGNORECASE)  # `noqa:` + codes: flake8 ignores it

Suppressions = dict[int, "frozenset[str] | None"]


def _codes(comment: str) -> frozenset[str] | None | bool:
    """The codes a comment suppresses (None: every code), or False if it is no noqa."""
    match = _NOQA.search(comment)
    if not match:
        return False
    codes = match.group("codes")
    # As written: flake8 (which applies noqa for the flake8 plugin) compares codes case-sensitively.
    return frozenset(c for c in re.split(r"[,\s]+", codes) if c) if codes else None


def _token_runs(text: str, last_line: int) -> Iterator[tuple[int, int, list[str]]]:
    """``(first line, last line, comments)`` of each run of tokens up to a NL or NEWLINE
    token (flake8's noqa line mapping), until ``last_line``."""
    first, last, comments = None, 0, []
    for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
        if token.type in (tokenize.ENDMARKER, tokenize.DEDENT):
            continue
        start, end = token.start[0], token.end[0]
        first = start if first is None else min(first, start)
        last = max(last, end)
        if token.type == tokenize.COMMENT:
            comments.append(token.string)
        if token.type in (tokenize.NL, tokenize.NEWLINE):
            yield first, last, comments
            if last >= last_line:
                return
            first, last, comments = None, 0, []
    if first is not None:
        yield first, last, comments


def suppressions(text: str, last_line: int | None = None) -> Suppressions:
    """Line number -> suppressed codes (None: every code), for lines up to ``last_line``."""
    if "noqa" not in text.lower():
        return {}
    last_line = text.count("\n") + text.count("\r") + 1 if last_line is None else last_line
    found: Suppressions = {}
    try:
        for first, last, comments in _token_runs(text, last_line):
            # flake8 searches the run's text and uses the first match.
            codes = next((c for c in map(_codes, comments) if c is not False), False)
            if codes is not False:
                found.update(dict.fromkeys(range(first, last + 1), codes))
    except (tokenize.TokenError, SyntaxError, ValueError):
        found = {}
        for number, line in enumerate(physical_lines(text)[:last_line], start=1):
            codes = _codes(line) if "noqa" in line.lower() else False
            if codes is not False:
                found[number] = codes
    return found


def file_exemption(text: str) -> frozenset[str] | None | bool:
    """The codes a ``# nnx-lint: noqa[: CODES]`` comment exempts the whole file from
    (None: every code), or False when the file has no such comment. Several comments add up.

    >>> sorted(file_exemption("# nnx-lint: noqa: NNX201\\nx = 1  # nnx-lint: noqa: NNX6\\n"))
    ['NNX201', 'NNX6']
    >>> file_exemption("s = '# nnx-lint: noqa'\\n")
    False
    """
    lowered = text.lower()
    if "nnx-lint" not in lowered and "flake8" not in lowered:
        return False
    try:
        # (comment, whether it is alone on its line)
        comments = [(token.string, not token.line[:token.start[1]].strip())
                    for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline)
                    if token.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError, ValueError):
        # As for line comments: a file the tokenizer rejects is searched line by line, but
        # only lines that are nothing but the comment (a string could hold the text otherwise).
        comments = [(line.strip(), True) for line in physical_lines(text) if line.lstrip().startswith("#")]
    exempted: set[str] = set()
    found = False
    for comment, alone in comments:
        if alone and _FLAKE8_FILE_NOQA.match(comment):
            return None
        match = _FILE_NOQA.match(comment)
        if match is None:
            continue
        found = True
        if match.group("codes") is None:
            return None
        # Case-sensitive, as the line comments: `nnx201` exempts nothing.
        exempted.update(c for c in re.split(r"[,\s]+", match.group("codes")) if c)
    return frozenset(exempted) if found else False


def apply_file_exemption(diagnostics: Iterable[Diagnostic], text: str) -> list[Diagnostic]:
    """Drop the diagnostics the file's ``# nnx-lint: noqa`` comments exempt it from."""
    diagnostics = list(diagnostics)
    if not diagnostics:
        return diagnostics
    exempted = file_exemption(text)
    if exempted is False:
        return diagnostics
    if exempted is None:
        return []
    return [d for d in diagnostics if not any(d.code.startswith(code) for code in exempted)]


def suppressing_line(diagnostic: Diagnostic, table: dict[int, frozenset[str] | None]) -> int | None:
    """The line of the noqa comment in ``table`` that suppresses ``diagnostic``, or None.

    The one place that decides which comment applies to which diagnostic (the unused-noqa
    check asks it too).
    """
    if diagnostic.line in table:
        codes = table[diagnostic.line]
        if codes is None or any(diagnostic.code.startswith(c) for c in codes):
            return diagnostic.line
    return None


def apply_noqa(diagnostics: Iterable[Diagnostic], text: str) -> list[Diagnostic]:
    """Drop diagnostics whose start line is covered by a matching noqa comment, and those the
    file's ``# nnx-lint: noqa`` exempts it from."""
    diagnostics = apply_file_exemption(diagnostics, text)
    if not diagnostics:
        return diagnostics
    table = suppressions(text, max(d.line for d in diagnostics))
    return [diagnostic for diagnostic in diagnostics if suppressing_line(diagnostic, table) is None]
