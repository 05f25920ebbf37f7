"""Escaping text from analysed files before it reaches a terminal, a CI log or a web page.

File names and the source text quoted in messages (attribute paths, stream names, ...)
come from the code under review, which is untrusted: a file name with a newline and
``::stop-commands::`` would otherwise become a GitHub workflow command that hides every
later annotation, and an ANSI escape in a ``setattr`` name would clear the reviewer's
terminal. Every reporter passes such text through one of the functions here.

>>> workflow_data("50%\\nnext")
'50%25%0Anext'
>>> workflow_property("a,b::c.py")
'a%2Cb%3A%3Ac.py'
>>> printable("self.\\x1b[2J\\rX")
'self.\\\\x1b[2J\\\\rX'
>>> line_start_path("::stop-commands::tok.py")
'./::stop-commands::tok.py'
>>> markdown_cell("a|b `c` <i>")
'a&#124;b &#96;c&#96; &#60;i&#62;'
"""
from __future__ import annotations


def workflow_data(text: str) -> str:
    """The message part of a GitHub workflow command (``@actions/core``'s ``escapeData``)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def workflow_property(text: str) -> str:
    """A property value of a workflow command (``@actions/core``'s ``escapeProperty``):
    ``:`` and ``,`` separate properties, so they are escaped too."""
    return workflow_data(text).replace(":", "%3A").replace(",", "%2C")


def printable(text: str, keep: str = "") -> str:
    """``text`` with every character that ``str.isprintable()`` rejects written as a
    Python escape (``\\x1b``, ``\\r``, ``\\n``, ``\\u2028``), so one field prints as one
    visible line and can never drive the terminal. Printable text, non-ASCII letters
    included, is unchanged, and so are the characters in ``keep`` (for a caller that
    escapes them losslessly itself)."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() or char in keep else _escape(char) for char in text)


def line_start_path(path: str) -> str:
    """A file path that begins an output line, made safe to begin one: printable, and
    prefixed with ``./`` (the same file) unless it starts with a letter, a digit, ``_``,
    ``.`` or ``/``. A committed file named ``::stop-commands::x.py`` would otherwise start a
    line that GitHub Actions obeys (``::``), and ``##vso[...]`` one that Azure Pipelines does."""
    shown = printable(path)
    if shown == "-":
        return shown  # standard input, as Ruff names it
    if shown.startswith(("::", "##")) or not (shown[:1].isalnum() or shown[:1] in ("_", ".", "/", "\\")):
        return "./" + shown
    return shown


def printable_lines(text: str) -> str:
    """A multi-line block (a traceback, a program) made terminal-safe line by line: the
    line breaks stay, every other non-printable character is escaped."""
    return "\n".join(printable(line) for line in text.split("\n"))


def _escape(char: str) -> str:
    # repr() gives Python's own spelling (\x1b, \r, \u2028); strip its quotes.
    return repr(char)[1:-1]


def markdown_cell(text: str) -> str:
    """Text for one cell of a Markdown table (GitHub-flavoured): no HTML, no line break,
    no pipe that ends the cell, no backtick that opens a code span, no emphasis or link
    syntax, and no ``@`` that would notify someone from a pull-request comment."""
    return printable(text).translate(_MARKDOWN_ENTITIES)


# One pass, so an inserted reference is never escaped again. Numeric character references
# render as the character and are never read as Markdown or HTML syntax.
_MARKDOWN_ENTITIES = str.maketrans({char: f"&#{ord(char)};" for char in "&<>\\|`*_[]~@#"})
