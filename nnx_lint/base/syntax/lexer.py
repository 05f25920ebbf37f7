"""A small lexer for string literals and comments, by the newest grammar (PEP 701 f-strings).

The running interpreter's tokenizer cannot be used: before 3.12 it ends ``f"{d["k"]}"`` at the
second quote. This lexer follows the 3.12 rules whatever Python runs it, so what it finds in a
file is the same on every interpreter. It only needs string literals (with the replacement
fields of f-strings and the strings and comments inside them) and comments; everything else is
left to the parser.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_PREFIX_LETTERS = frozenset("rRbBuUfF")
#: The next place where a string or a comment may start, outside any string.
_CODE_STOP = re.compile(r"[#'\"]")
#: Inside a replacement field: also brackets and the characters that can end the expression.
_FIELD_STOP = re.compile(r"[#'\"(\[{)\]}!:=\\\r\n]")


class LexError(Exception):
    """The text is not valid Python even by the newest grammar (an unterminated string, ...)."""


@dataclass
class Field:
    """One replacement field ``{expression=!r:spec}`` of an f-string.

    ``expression`` spans the expression only; ``end`` is the offset just past the closing brace.
    """

    start: int
    expression: tuple[int, int]
    end: int
    #: String literals directly inside the expression (each may hold fields of its own).
    strings: list[StringToken] = field(default_factory=list)
    comments: list[tuple[int, int]] = field(default_factory=list)
    #: Line continuations (a backslash ending a line) in the expression.
    continuations: list[int] = field(default_factory=list)
    #: Fields nested in the format specification (``{x:{width}}``).
    spec_fields: list[Field] = field(default_factory=list)

    def all_fields(self):
        """This field, then the fields of its format specification, depth first."""
        yield self
        for nested in self.spec_fields:
            yield from nested.all_fields()


@dataclass
class StringToken:
    """A string literal: ``text[start:end]`` with its prefix and quote."""

    start: int
    end: int
    prefix: str
    quote: str
    fields: list[Field] = field(default_factory=list)

    @property
    def is_fstring(self) -> bool:
        """Whether it is an f-string (its replacement fields are code)."""
        return "f" in self.prefix.lower()

    @property
    def body(self) -> tuple[int, int]:
        """The span between the quotes."""
        return self.start + len(self.prefix) + len(self.quote), self.end - len(self.quote)


@dataclass
class Lexed:
    """The string literals and comments of a file, outside other strings, in order."""

    strings: list[StringToken]
    comments: list[tuple[int, int]]


def lex(text: str) -> Lexed:
    """Every top-level string literal and comment of ``text``; :class:`LexError` if a string
    is not terminated."""
    strings: list[StringToken] = []
    comments: list[tuple[int, int]] = []
    position = 0
    while True:
        match = _CODE_STOP.search(text, position)
        if match is None:
            return Lexed(strings, comments)
        found = match.start()
        if text[found] == "#":
            end = _line_end(text, found)
            comments.append((found, end))
            position = end
            continue
        token = _string_at(text, found)
        strings.append(token)
        position = token.end


def _line_end(text: str, position: int) -> int:
    ends = [i for i in (text.find("\n", position), text.find("\r", position)) if i >= 0]
    return min(ends) if ends else len(text)


def _string_at(text: str, quote_position: int) -> StringToken:
    """The string literal whose (first) quote is at ``quote_position``."""
    start = quote_position
    # The prefix: up to two letters right before the quote, not part of a longer name.
    while start > quote_position - 2 and start > 0 and text[start - 1] in _PREFIX_LETTERS:
        start -= 1
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start = quote_position  # `xf"..."`: a name, then a plain string (not valid code anyway)
    prefix = text[start:quote_position]
    q = text[quote_position]
    quote = q * 3 if text.startswith(q * 3, quote_position) else q
    token = StringToken(start, -1, prefix, quote)
    body_start = quote_position + len(quote)
    if token.is_fstring:
        token.end = _fstring_body(text, body_start, token, token.fields)
    else:
        token.end = _plain_body(text, body_start, quote)
    return token


def _body_pattern(quote: str) -> re.Pattern:
    """The rest of a plain string after its opening quote (escapes skipped, loop unrolled)."""
    q = re.escape(quote[0])
    if len(quote) == 1:
        return re.compile(rf"[^{q}\\\r\n]*(?:\\(?:\r\n|.)[^{q}\\\r\n]*)*{q}", re.S)
    return re.compile(rf"[^{q}\\]*(?:(?:\\.|{q}(?!{q}{q}))[^{q}\\]*)*{q}{q}{q}", re.S)


_PLAIN_BODY = {quote: _body_pattern(quote) for quote in ("'", '"', "'''", '"""')}
#: In an f-string's literal text: the characters that end it or start a field or an escape.
_FSTRING_STOP = {quote: re.compile(r"[\\{}\r\n]|" + re.escape(quote)) for quote in ("'", '"', "'''", '"""')}


def _plain_body(text: str, position: int, quote: str) -> int:
    """The offset past the closing quote of a plain string whose body starts at ``position``."""
    match = _PLAIN_BODY[quote].match(text, position)
    if match is None:
        raise LexError(f"unterminated string literal at offset {position}")
    return match.end()


def _fstring_body(text: str, position: int, token: StringToken, fields: list[Field], in_spec: bool = False) -> int:
    """Lex an f-string's body (or a format spec) from ``position``, adding its replacement
    fields to ``fields``; the offset past its end (in a format spec: of the closing ``}``)."""
    quote = token.quote
    raw = "r" in token.prefix.lower()
    n = len(text)
    stop = _FSTRING_STOP[quote]
    while position < n:
        match = stop.search(text, position)
        if match is None:
            break
        position = match.start()
        char = text[position]
        if in_spec and char == "}":
            return position
        if text.startswith(quote, position):
            if in_spec:
                raise LexError(f"unterminated replacement field at offset {position}")
            return position + len(quote)
        if char == "\\":
            following = text[position + 1:position + 2]
            if not raw and following == "N" and text.startswith("{", position + 2):
                close = text.find("}", position + 3)
                position = close + 1 if close >= 0 else n
                continue
            position += 1 if following in ("{", "}") else 2
            continue
        if char == "{":
            if text.startswith("{", position + 1) and not in_spec:
                position += 2
                continue
            replacement = _field(text, position, token)
            fields.append(replacement)
            position = replacement.end
            continue
        if char == "}" and text.startswith("}", position + 1):
            position += 2
            continue
        if len(quote) == 1 and char in "\r\n":
            break
        position += 1
    raise LexError(f"unterminated f-string at offset {position}")


def _field(text: str, position: int, token: StringToken) -> Field:
    """The replacement field whose ``{`` is at ``position``."""
    replacement = Field(position, (position + 1, -1), -1)
    expression_end = _expression(text, position + 1, replacement)
    replacement.expression = (position + 1, expression_end)
    position = expression_end
    n = len(text)
    if position < n and text[position] == "=":
        position += 1
        while position < n and text[position] in " \t\r\n\f":
            position += 1
    if position < n and text[position] == "!":
        position += 2  # the conversion letter
    if position < n and text[position] == ":":
        position = _fstring_body(text, position + 1, token, replacement.spec_fields, in_spec=True)
    if position >= n or text[position] != "}":
        raise LexError(f"unterminated replacement field at offset {replacement.start}")
    replacement.end = position + 1
    return replacement


def _expression(text: str, position: int, replacement: Field) -> int:
    """The offset where the expression of a replacement field ends (at ``=``, ``!``, ``:`` or ``}``
    outside brackets)."""
    depth = 0
    n = len(text)
    while True:
        match = _FIELD_STOP.search(text, position)
        if match is None:
            raise LexError("unterminated replacement field")
        position = match.start()
        char = text[position]
        if char in "'\"":
            nested = _string_at(text, position)
            replacement.strings.append(nested)
            position = nested.end
        elif char == "#":
            end = _line_end(text, position)
            replacement.comments.append((position, end))
            position = end
        elif char == "\\":
            if text[position + 1:position + 2] in ("\n", "\r"):
                replacement.continuations.append(position)
            position += 2
        elif char in "([{":
            depth += 1
            position += 1
        elif char in ")]}":
            if depth == 0:
                if char == "}":
                    return position
                raise LexError(f"unmatched {char!r} at offset {position}")
            depth -= 1
            position += 1
        elif char in "\r\n":
            position += 1
        elif depth:
            position += 1
        elif char == "!":
            if text.startswith("!=", position):
                position += 2
            else:
                return position
        elif char == ":":
            return position
        else:  # "=": the debug specifier when only whitespace follows before `!`, `:` or `}`
            if position + 1 < n and text[position + 1] == "=":
                position += 2
                continue
            if text[position - 1:position] in ("=", "!", "<", ">"):
                position += 1
                continue
            rest = position + 1
            while rest < n and text[rest] in " \t\r\n\f":
                rest += 1
            if rest < n and text[rest] in "!:}":
                return position
            position += 1
