"""Program text from untrusted facts: the one place that decides what may become code.

A reproduction program (``--confirm``, ``--show-repro``) is built from a diagnostic's facts,
and facts are text taken from the analysed code (attribute paths, ``setattr`` names, Rngs
stream keys, class names, ...) or read back from a cache. The analysed code is hostile until
proven otherwise, so its text must never become code. The rules, enforced here:

* A fact becomes a *name* in the program (an attribute, a keyword argument, a class name)
  only when it is a plain ASCII identifier that is not a keyword (:func:`is_identifier`,
  :func:`identifier`, :func:`identifier_or`); an attribute path part by part
  (:mod:`nnx_lint.base.program_syntax`, which builds every program as a syntax tree).
* A fact that picks one of the builder's own variants (a transform, a Variable type) is
  checked against the known set (:func:`choice_or`), never pasted.
* Any other text appears only inside string literals, as ``ast.Constant`` nodes
  (``program_syntax.literal``); subscripts take only validated ``int`` (:func:`bounded_index`) or ``str``
  literals.
* A fact that cannot be used safely raises :class:`UnsafeFact`: the diagnostic then has no
  reproduction, with the reason (``nnx_lint.confirmation.oracle.reproduction_for``).

Defence in depth: :func:`carried_fact_text` parses a finished program and looks for the
pieces of every fact outside its string literals; unless the builder writes the same text
when that fact is replaced by a neutral name, the program is refused, never run or shown.
"""
from __future__ import annotations

import ast
import keyword
import math
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

#: A subscript index above this is not a path the analysed code can have built by hand; it
#: would only make a program (and a ``range``) as large as the fact says.
MAX_INDEX = 1024

_DIGITS = re.compile(r"[0-9]+")
#: Operators and punctuation only (``+=``, ``),``): no name, number, string or comment, so
#: nothing can be called or imported by it.
_OPERATORS = re.compile(r"[-+*/%@&|^~<>=!()\[\]{},:;. ]+")


class UnsafeFact(ValueError):
    """A fact that cannot be used in a program; its message is the reason (no reproduction)."""


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters: a hostile fact quoted in a reason.

    >>> print(shown("x = 0\\n__import__('os')"))
    "x = 0\\n__import__('os')"
    >>> len(shown("a" * 1000))
    60
    """
    return clipped(repr(value), limit)


def clipped(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters, the cut marked with ``...``."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_identifier(value: Any) -> bool:
    """Whether ``value`` can be a name in a program: an ASCII identifier, not a keyword.

    ASCII only, because Python folds non-ASCII identifiers (NFKC) into other names.

    >>> [is_identifier(v) for v in ("rngs", "_x1", "import", "a.b", "a b", "é", "", 3)]
    [True, True, False, False, False, False, False, False]
    """
    return (isinstance(value, str) and value.isascii() and value.isidentifier()
            and not keyword.iskeyword(value))


def identifier(value: Any, what: str) -> str:
    """``value`` if it is a safe name (:func:`is_identifier`), else :class:`UnsafeFact`.

    >>> identifier("encoder", "the attribute")
    'encoder'
    >>> identifier("x = 0; y", "the attribute")
    Traceback (most recent call last):
    ...
    nnx_lint.base.program_text.UnsafeFact: the attribute 'x = 0; y' is not a plain Python identifier
    """
    if not is_identifier(value):
        raise UnsafeFact("%s %s is not a plain Python identifier" % (what, shown(value)))
    return value


def identifier_or(value: Any, default: str) -> str:
    """``value`` if it is a safe name, else ``default`` (a name the builder chose).

    >>> identifier_or("Model", "M"), identifier_or("class", "M"), identifier_or(None, "M")
    ('Model', 'M', 'M')
    """
    return value if is_identifier(value) else default


def choice_or(value: Any, known: Iterable[str], default: str) -> str:
    """``value`` if it is one of ``known``, else ``default``.

    >>> choice_or("scan", {"vmap", "scan"}, "vmap"), choice_or("scan)", {"vmap", "scan"}, "vmap")
    ('scan', 'vmap')
    """
    return value if isinstance(value, str) and value in set(known) else default


def bounded_index(value: Any, what: str, limit: int = MAX_INDEX) -> int:
    """``value`` if it is an ``int`` in ``[0, limit)`` (not a bool), else :class:`UnsafeFact`.

    >>> bounded_index(3, "the position")
    3
    >>> bounded_index(10**9, "the position")
    Traceback (most recent call last):
    ...
    nnx_lint.base.program_text.UnsafeFact: the position 1000000000 is not an index below 1024
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < limit:
        raise UnsafeFact("%s %s is not an index below %d" % (what, shown(value), limit))
    return value


def check_plain(value: Any, depth: int = 0) -> None:
    """Raise :class:`UnsafeFact` unless ``value`` is plain data (see :func:`nnx_lint.base.program_syntax.literal`)."""
    if depth > 20:
        raise UnsafeFact("the value is nested too deeply")
    if value is None or isinstance(value, (bool, int, str)):
        return
    if isinstance(value, float) and math.isfinite(value):
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            check_plain(item, depth + 1)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            check_plain(key, depth + 1)
            check_plain(item, depth + 1)
        return
    raise UnsafeFact("the value %s is not plain data" % shown(value))


# -- the guard -------------------------------------------------------------------------------

#: A plain path (``self.layers[0].w``, ``cnt.n[...]``): names, int and ``...`` subscripts.
_PLAIN_PATH = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*|\[[0-9]+\])(?:\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]+\]|\[\.\.\.\])*")
#: The neutral value a fact is replaced with to tell a builder's own text from pasted text.
NEUTRAL_FACT = "nnx_lint_neutral_fact"


def is_inert(text: str) -> bool:
    """Whether fact ``text`` is harmless even as code: blank, a plain path (names, keywords
    included, a lone keyword is at worst a syntax error; int and ``...`` subscripts),
    digits, or punctuation only. None of these can name, call or import anything new.

    >>> [is_inert(t) for t in ("", "self.w_in", "with", "layers[0].w", "0", "+=", "a(b)", "x\\ny", "'s'")]
    [True, True, True, True, True, True, False, False, False]
    """
    return (not text.strip() or bool(_PLAIN_PATH.fullmatch(text)) or bool(_DIGITS.fullmatch(text))
            or bool(_OPERATORS.fullmatch(text)))


def text_pieces(text: str) -> set[str]:
    """The non-inert pieces of a fact a builder might paste: the whole text, its lines
    (a program indents them), ``['key']`` keys (``['x = 0; y']`` pastes as ``x = 0; y``)
    and its parts between blanks, dots, brackets and quotes.

    >>> sorted(text_pieces("['x = 0; open(1)']"))
    ['0;', "['x = 0; open(1)']", 'open(1)', 'x = 0; open(1)']
    >>> sorted(text_pieces("jit\\nimport os"))
    ['import os', 'jit\\nimport os']
    """
    keys = [match.group(2) for match in re.finditer(r"\[(['\"])(.*?)\1\]", text)]
    lines = [line.strip() for line in text.splitlines()]
    pieces = {text, *keys, *lines, *re.split(r"[\s.\[\]'\"]+", text)}
    return {piece for piece in pieces if piece and not is_inert(piece)}


def string_leaves(stored: Any, path: tuple = ()) -> Iterator[tuple[tuple, str]]:
    """``(path, text)`` for every string in a stored facts dict: values and list items at any depth,
    and the keys of nested dicts (``("key", k)`` in the path); top-level keys are fact names.

    >>> list(string_leaves({"a": "x", "b": [1, "y"], "c": {"k": 2}}))
    [(('a',), 'x'), (('b', 1), 'y'), (('c', ('key', 'k')), 'k')]
    """
    if isinstance(stored, str):
        yield path, stored
    elif isinstance(stored, dict):
        for key, value in stored.items():
            if path and isinstance(key, str):
                yield path + (("key", key),), key
            yield from string_leaves(value, path + (key,))
    elif isinstance(stored, (list, tuple)):
        for position, item in enumerate(stored):
            yield from string_leaves(item, path + (position,))


def replaced(stored: Any, path: tuple, new: str) -> Any:
    """A copy of a stored facts dict ``stored`` with the string at ``path`` (see :func:`string_leaves`) set to ``new``.

    >>> replaced({"a": ["x", "y"], "c": {"k": 2}}, ("a", 1), "z")
    {'a': ['x', 'z'], 'c': {'k': 2}}
    >>> replaced({"c": {"k": 2}}, ("c", ("key", "k")), "z")
    {'c': {'z': 2}}
    """
    if not path:
        return new
    step, rest = path[0], path[1:]
    if isinstance(stored, dict):
        if isinstance(step, tuple) and not rest:  # a nested dict's key
            return {(new if key == step[1] else key): value for key, value in stored.items()}
        return {key: (replaced(value, rest, new) if key == step else value) for key, value in stored.items()}
    return [replaced(item, rest, new) if position == step else item for position, item in enumerate(stored)]


def string_constant_spans(program: str) -> list[tuple[int, int]]:
    """``(start, end)`` character offsets of every string constant in ``program`` (which
    must parse). Only plain string literals count: f-strings hold code in their braces.

    >>> sorted(string_constant_spans("x = 'a' + f'{b}' + 'é'\\n"))
    [(4, 7), (19, 22)]
    """
    nodes = list(ast.walk(ast.parse(program)))
    in_fstrings = {id(part) for node in nodes if isinstance(node, ast.JoinedStr) for part in ast.walk(node)}
    lines = program.splitlines(keepends=True)
    line_starts = [0]
    for line in lines:
        line_starts.append(line_starts[-1] + len(line))

    def offset(line: int, column: int) -> int:  # ast columns count UTF-8 bytes
        text = lines[line - 1]
        return line_starts[line - 1] + (column if text.isascii() else len(text.encode()[:column].decode()))

    return [(offset(node.lineno, node.col_offset), offset(node.end_lineno, node.end_col_offset))
            for node in nodes
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in in_fstrings]


def count_outside_strings(program: str, spans: list[tuple[int, int]], text: str) -> int:
    """How often ``text`` occurs in ``program`` not wholly inside one string literal.

    >>> program = "x = 'a; b'\\na; b = 1, 2\\n"
    >>> count_outside_strings(program, string_constant_spans(program), "a; b")
    1
    """
    count, start = 0, program.find(text)
    while start != -1:
        end = start + len(text)
        if not any(a <= start and end <= b for a, b in spans):
            count += 1
        start = program.find(text, start + 1)
    return count


def carried_fact_text(programs: list[str], facts: Any,
                      rebuild: Callable[[Any], list[str] | None]) -> str | None:
    """The reason ``programs`` (built from ``facts``) must not run, or None.

    They must parse, and no non-inert piece of a fact (:func:`text_pieces`) may appear in
    them outside string literals (as code or in a comment) - unless the builder writes that
    text itself: ``rebuild`` (the same builder on other facts; None when it gives no
    program) with the fact replaced by :data:`NEUTRAL_FACT` writes it as often. That spares
    facts that quote code the builder also writes (``nnx.DiffState(0, nnx.Param)``).

    >>> paste = lambda facts: [f"x = {facts['name']}\\n"]
    >>> carried_fact_text(paste({"name": "1; import os"}), {"name": "1; import os"}, paste)
    "the fact text '1; import os' appears in the program outside string literals"
    >>> quote = lambda facts: [f"x = {facts['name']!r}\\n"]
    >>> carried_fact_text(quote({"name": "1; import os"}), {"name": "1; import os"}, quote)
    >>> own = lambda facts: ["x = nnx.state(m)\\n"]
    >>> carried_fact_text(own({"view": "nnx.state(m)"}), {"view": "nnx.state(m)"}, own)
    """
    for program in programs:
        try:
            ast.parse(program)
        except (SyntaxError, ValueError) as exc:
            return "the program does not parse: %s" % exc
    spans: dict[str, list[tuple[int, int]]] = {}  # computed only for programs holding a piece

    def count(texts: list[str], piece: str) -> int:
        total = 0
        for program in texts:
            if piece in program:
                if program not in spans:
                    spans[program] = string_constant_spans(program)
                total += count_outside_strings(program, spans[program], piece)
        return total

    for path, text in string_leaves(facts):
        seen = {piece: count(programs, piece) for piece in text_pieces(text)}
        seen = {piece: number for piece, number in seen.items() if number}
        if not seen:
            continue
        try:
            neutral = rebuild(replaced(facts, path, NEUTRAL_FACT)) or []
            for program in neutral:
                ast.parse(program)
        except Exception:  # a builder that fails on the neutral fact cannot vouch for the text
            neutral = []
        for piece, number in sorted(seen.items(), key=lambda item: -len(item[0])):
            if count(neutral, piece) < number:
                return "the fact text %s appears in the program outside string literals" % shown(piece)
    return None
