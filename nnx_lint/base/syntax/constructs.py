"""Syntax newer than Python 3.10, found in the text, each with a same-length older spelling.

Found by one scan of the text (:mod:`nnx_lint.base.syntax.lexer`), never by the running parser, so
the same file gives the same list on every interpreter. Each construct carries edits that
replace it, character for character, by something every Python from 3.10 parses and that
nnx-lint analyses the same way: line and column of every other node are unchanged, so findings,
``# noqa`` comments and fixes keep their places.

- ``except* E`` (3.11): the star becomes a space.
- ``x[*a]``, ``*args: *Ts`` (3.11, PEP 646): the star becomes a space.
- ``type X[T] = v`` (3.12): ``type;X    = v`` (the alias is an assignment, its parameters blanked).
- ``def f[T](...)``, ``class C[T]:`` (3.12): the parameter list is blanked.
- type parameter defaults ``[T = int]`` (3.13): the default is blanked.
- PEP 701 f-strings (3.12): strings inside replacement fields are re-quoted with the other quote,
  comments and escapes in them blanked; when that cannot give a valid older f-string (deeper
  nesting, a field over several lines of a one-line string), the f-string becomes the tuple of
  its fields' expressions, each at its own place: ``f"{a["k"]} and {b}"`` reads as
  ``(  a["k"],      b,)``.
"""
from __future__ import annotations

import bisect
import functools
import keyword
import re
from dataclasses import dataclass

from nnx_lint.base.syntax.lexer import Field, LexError, StringToken, lex

Version = tuple[int, int]


@dataclass(frozen=True)
class NewerSyntax:
    """One use of syntax newer than Python 3.10."""

    #: What it is, as a message names it (``"`type` alias statements"``).
    feature: str
    added_in: Version
    #: Where it starts: 1-based line and column (in characters).
    line: int
    column: int
    #: Same-length replacements ``(offset, text)`` that spell it in older syntax; empty when it has none.
    edits: tuple[tuple[int, str], ...]


# Not anchored at line starts: an anchored multi-line pattern is tried at every offset, this
# one only where its first letters are; the anchored patterns below then run on masked text.
# Each starts with a literal, which the regex engine finds fast.
_KEYWORD_CANDIDATES = tuple(re.compile(pattern) for pattern in (
    r"def[ \t]+\w+[ \t]*\[", r"class[ \t]+\w+[ \t]*\[", r"except[ \t]*\*", r"type[ \t]+[A-Za-z_]\w*[ \t]*[\[=]"))
_TYPE_ALIAS = re.compile(r"^([ \t]*)type([ \t]+)[A-Za-z_]\w*[ \t]*(\[)?", re.M)
_GENERIC_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+\w+[ \t]*(\[)", re.M)
_GENERIC_CLASS = re.compile(r"^[ \t]*class[ \t]+\w+[ \t]*(\[)", re.M)
_EXCEPT_STAR = re.compile(r"^[ \t]*except[ \t]*(\*)", re.M)
_STAR_CANDIDATE = re.compile(r"[\[,][ \t\r\n]*\*(?!\*)|:[ \t]*\*(?![*=])")
_STAR_ANNOTATION = re.compile(r"\*[ \t]*[A-Za-z_]\w*[ \t]*:[ \t]*(\*)(?![*=])")
_STAR_IN_LIST = re.compile(r"[\[,][ \t\r\n]*\*(?!\*)")
_OPEN_CLOSE = re.compile(r"[\[\](){}]")
_BETWEEN_STRINGS = re.compile(r"[ \t\f]*(?:\\\r?\n[ \t\f]*)*")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_NOT_LINE_BREAKS = re.compile(r"[^\r\n]+")


@functools.lru_cache(maxsize=4)
def find_newer_syntax(text: str) -> tuple[NewerSyntax, ...]:
    """Every use of syntax newer than Python 3.10 in ``text``, in text order.

    Text that is not Python by the newest grammar either (an unterminated string) gives what
    was found before the error: the parser reports that error itself.
    """
    try:
        lexed = lex(text)
    except LexError:
        return ()
    lines = _LineIndex(text)
    found: list[NewerSyntax] = []
    masked: str | None = None
    for token in lexed.strings:
        if token.is_fstring and _needs_312(text, token):
            if masked is None:
                masked = _masked(text, lexed.strings, lexed.comments)
            edits = _lower_fstring(text, masked, token, lexed.strings)
            found.append(NewerSyntax("PEP 701 f-strings (quotes, backslashes or comments in replacement "
                                     "fields)", (3, 12), *lines.at(token.start), edits))
    if any(candidate.search(text) for candidate in _KEYWORD_CANDIDATES):
        masked = masked or _masked(text, lexed.strings, lexed.comments)
        found += _keyword_constructs(masked, lines)
    if _STAR_CANDIDATE.search(text):
        masked = masked or _masked(text, lexed.strings, lexed.comments)
        found += _starred(masked, lines)
    return tuple(sorted(found, key=lambda item: (item.line, item.column, item.added_in)))


def lowered(text: str, constructs: tuple[NewerSyntax, ...], newer_than: Version) -> str:
    """``text`` with every construct added after ``newer_than`` spelled in older syntax."""
    chars = list(text)
    # Newest first: an older construct's edit (a whole parameter list blanked) covers a newer
    # one inside it (a default in that list), and must win.
    for construct in sorted(constructs, key=lambda item: item.added_in, reverse=True):
        if construct.added_in > newer_than:
            for offset, replacement in construct.edits:
                chars[offset:offset + len(replacement)] = replacement
    return "".join(chars)


class _LineIndex:
    """Offsets to (line, column), the line starts found on first use (most files need none)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts: list[int] | None = None

    def at(self, offset: int) -> tuple[int, int]:
        if self.starts is None:
            self.starts = [0] + [match.end() for match in _LINE_BREAK.finditer(self.text)]
        line = bisect.bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1] + 1


def _masked(text: str, strings: list[StringToken], comments: list[tuple[int, int]]) -> str:
    """``text`` with string bodies and comments blanked (line breaks kept): only code is left."""
    pieces: list[str] = []
    position = 0
    spans = sorted([token.body for token in strings] + comments)
    for start, end in spans:
        pieces.append(text[position:start])
        span = text[start:end]
        if "\n" in span or "\r" in span:
            pieces.append(_NOT_LINE_BREAKS.sub(lambda run: " " * len(run.group()), span))
        else:
            pieces.append(" " * (end - start))
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def _blank(text: str, start: int, end: int) -> str | None:
    """``text[start:end]`` as spaces, each line break kept behind a ``\\`` continuation so the
    statement goes on; None when a line of the span is empty (no room for the backslash)."""
    out = []
    for piece in re.split(r"(\r\n|\r|\n)", text[start:end]):
        if piece in ("\r\n", "\r", "\n"):
            if not out or not out[-1] or out[-1].endswith(("\n", "\r")):
                return None
            out[-1] = out[-1][:-1] + "\\"
            out.append(piece)
        else:
            out.append(" " * len(piece))
    return "".join(out)


def _closing(masked: str, opening: int) -> int | None:
    """The offset of the bracket that closes the one at ``opening`` (in masked text)."""
    depth = 0
    for match in re.compile(r"[\[\](){}]").finditer(masked, opening):
        depth += 1 if match.group() in "([{" else -1
        if depth == 0:
            return match.start()
    return None


def _keyword_constructs(masked: str, lines: _LineIndex) -> list[NewerSyntax]:
    found = []
    for match in _EXCEPT_STAR.finditer(masked):
        star = match.start(1)
        keyword_start = match.start(0) + len(match.group(0)) - len(match.group(0).lstrip(" \t"))
        found.append(NewerSyntax("`except*` clauses", (3, 11), *lines.at(keyword_start), ((star, " "),)))
    for match in _TYPE_ALIAS.finditer(masked):
        end = match.end()
        edits = [(match.start(2), ";")]
        defaults = []
        if match.group(3):
            close = _closing(masked, match.start(3))
            blanked = _blank(masked, match.start(3), close + 1) if close is not None else None
            if blanked is None:
                continue
            defaults = _defaults(masked, match.start(3), close, lines)
            edits.append((match.start(3), blanked))
            end = close + 1
        if not re.match(r"[ \t]*=(?!=)", masked[end:end + 200]):
            continue  # `type = 1`, `type X` alone: not an alias statement
        found += defaults
        start = match.start(0) + len(match.group(1))
        found.append(NewerSyntax("`type` alias statements", (3, 12), *lines.at(start), tuple(edits)))
    for pattern, feature in ((_GENERIC_DEF, "generic functions `def f[T](...)`"),
                             (_GENERIC_CLASS, "generic classes `class C[T]:`")):
        for match in pattern.finditer(masked):
            opening = match.start(1)
            close = _closing(masked, opening)
            blanked = _blank(masked, opening, close + 1) if close is not None else None
            if blanked is None:
                continue
            found += _defaults(masked, opening, close, lines)
            found.append(NewerSyntax(feature, (3, 12), *lines.at(opening), ((opening, blanked),)))
    return found


def _defaults(masked: str, opening: int, close: int, lines: _LineIndex) -> list[NewerSyntax]:
    """Type parameter defaults (``[T = int]``, 3.13) in the list from ``opening`` to ``close``."""
    found = []
    depth = 0
    default_start = None
    for position in range(opening, close + 1):
        char = masked[position]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        if depth == 1 and char == "=" and default_start is None:
            default_start = position
        elif default_start is not None and ((depth == 1 and char == ",") or depth == 0):
            blanked = _blank(masked, default_start, position)
            found.append(NewerSyntax("type parameter defaults", (3, 13), *lines.at(default_start),
                                     ((default_start, blanked),) if blanked is not None else ()))
            default_start = None
    return found


def _starred(masked: str, lines: _LineIndex) -> list[NewerSyntax]:
    """PEP 646: ``x[*a]`` and ``*args: *Ts`` (3.11)."""
    found = []
    for match in _STAR_IN_LIST.finditer(masked):
        star = match.end() - 1
        opening = _enclosing_bracket(masked, star)
        if opening is not None and masked[opening] == "[" and _is_subscript(masked, opening):
            found.append(NewerSyntax("star expressions in subscripts (PEP 646)", (3, 11), *lines.at(star),
                                     ((star, " "),)))
    for match in _STAR_ANNOTATION.finditer(masked):
        star = match.start(1)
        found.append(NewerSyntax("star annotations `*args: *Ts` (PEP 646)", (3, 11), *lines.at(star), ((star, " "),)))
    return found


def _enclosing_bracket(masked: str, position: int) -> int | None:
    """The offset of the innermost bracket open at ``position``, or None (top level)."""
    for window_start in (max(0, position - 4000), 0):
        stack: list[int] = []
        for match in _OPEN_CLOSE.finditer(masked, window_start, position):
            if match.group() in "([{":
                stack.append(match.start())
            elif stack:
                stack.pop()
        if stack:
            return stack[-1]
        if window_start == 0:
            return None
    return None


def _is_subscript(masked: str, opening: int) -> bool:
    """Whether the ``[`` at ``opening`` indexes the expression before it (not a list display)."""
    before = masked[max(0, opening - 80):opening].rstrip()
    if not before:
        return False
    last = before[-1]
    if last in ")]'\"":
        return True
    word = re.search(r"[A-Za-z_]\w*$", before)
    if word is None:
        return False
    name = word.group()
    if keyword.iskeyword(name) or re.search(r"\b(?:def|class|type)[ \t]+\w+$", before):
        return False  # a list display, or the type parameters of a generic (3.12, blanked as a whole)
    line_start = before.rfind("\n") + 1
    # `case [*rest]:` is a match pattern (a soft keyword at the start of its line).
    return not (name == "case" and not before[line_start:word.start()].strip())


# --- PEP 701 f-strings -------------------------------------------------------------------


def _needs_312(text: str, token: StringToken) -> bool:
    """Whether the f-string ``token`` is valid only from Python 3.12 (PEP 701)."""
    quote = token.quote
    one_line = len(quote) == 1
    for top in token.fields:
        for replacement in top.all_fields():
            start, end = replacement.expression
            region = text[start:end]
            if "\\" in region or "#" in region:
                return True
            if (quote[0] in region) if one_line else (quote in region):
                return True
            if one_line and ("\n" in region or "\r" in region):
                return True
            if any(nested.is_fstring and _needs_312(text, nested) for nested in replacement.strings):
                return True
    return False


def _lower_fstring(text: str, masked: str, token: StringToken,
                   siblings: list[StringToken]) -> tuple[tuple[int, str], ...]:
    """The edits that spell the PEP 701 f-string ``token`` for Python 3.10 (``siblings``: the strings
    around it, for implicit concatenation)."""
    requoted = _requoted(text, token)
    if requoted is not None:
        return ((token.start, requoted),)
    return tuple(_as_tuple(text, masked, token, siblings))


def _fields_of(token: StringToken) -> list[Field]:
    return [replacement for top in token.fields for replacement in top.all_fields()]


def _requoted(text: str, token: StringToken) -> str | None:
    """The f-string spelled for Python 3.10 with the same length, or None if it cannot be:
    strings in its fields take the other quote, comments and escapes in them are blanked."""
    outer = token.quote[0]
    other = "'" if outer == '"' else '"'
    chars = list(text[token.start:token.end])
    base = token.start
    for replacement in _fields_of(token):
        start, end = replacement.expression
        if replacement.continuations or (len(token.quote) == 1 and re.search(r"[\r\n]", text[start:end])):
            return None
        for comment_start, comment_end in replacement.comments:
            chars[comment_start - base:comment_end - base] = " " * (comment_end - comment_start)
        for nested in replacement.strings:
            spelled = _requoted_nested(text, nested, outer, other)
            if spelled is None:
                return None
            chars[nested.start - base:nested.end - base] = spelled
    candidate = "".join(chars)
    try:
        relexed = lex(candidate)
    except LexError:
        return None
    whole = len(relexed.strings) == 1 and relexed.strings[0].end == len(candidate)
    if not whole or _needs_312(candidate, relexed.strings[0]):
        return None
    return candidate


def _requoted_nested(text: str, nested: StringToken, outer: str, other: str) -> str | None:
    """A string inside a replacement field, with the quote the field allows before 3.12."""
    if nested.is_fstring and any(r.strings or r.comments or r.continuations for r in _fields_of(nested)):
        return None  # a third level of quotes: no older spelling keeps them
    body_start, body_end = nested.body
    body = re.sub(r"\\(?:\r\n|.)|#", lambda m: " " * len(m.group()), text[body_start:body_end], flags=re.S)
    quote = nested.quote.replace(outer, other)
    if outer in body or quote[0] in body or re.search(r"[\r\n]", body) and len(quote) == 1:
        return None
    return nested.prefix + quote + body + quote


def _adjacent(text: str, masked: str, left: StringToken, right: StringToken) -> bool:
    """Whether two string literals are one implicitly concatenated string."""
    between = text[left.end:right.start]
    if _BETWEEN_STRINGS.fullmatch(between):
        return True
    # Across lines only inside brackets.
    if between.strip() == "" and _depth_at(masked, left.end) > 0:
        return True
    return False


def _depth_at(masked: str, offset: int) -> int:
    depth = 0
    for match in re.compile(r"[\[\](){}]").finditer(masked, 0, offset):
        depth += 1 if match.group() in "([{" else -1
    return depth


def _as_tuple(text: str, masked: str, token: StringToken, siblings: list[StringToken]) -> list[tuple[int, str]]:
    """The f-string as the tuple of its fields' expressions, each where it was: the code in the
    fields is analysed; only the f-string's own value is not a string any more."""
    base = token.start
    chars = [c if c in "\r\n" else " " for c in text[token.start:token.end]]
    terminators = []
    for replacement in _fields_of(token):
        start, end = replacement.expression
        chars[start - base:end - base] = text[start:end]
        for nested in replacement.strings:
            if nested.is_fstring and _needs_312(text, nested):
                for offset, spelled in _lower_fstring(text, masked, nested, replacement.strings):
                    chars[offset - base:offset - base + len(spelled)] = spelled
        chars[end - base] = ","
        terminators.append(end)
    index = next((i for i, s in enumerate(siblings) if s is token), None)
    after_string = index is not None and index > 0 and _adjacent(text, masked, siblings[index - 1], token)
    before_string = (index is not None and index + 1 < len(siblings)
                     and _adjacent(text, masked, token, siblings[index + 1]))
    if after_string:
        chars[0], chars[1] = "+", "("  # `"a" f"{x}"`: a sum, not a call of the string
    else:
        chars[0] = "("
    closing = len(chars) - len(token.quote)
    if before_string and terminators:
        chars[max(terminators) - base] = ")"
        chars[closing] = "+"
    else:
        chars[closing] = ")"
    return [(token.start, "".join(chars))]
