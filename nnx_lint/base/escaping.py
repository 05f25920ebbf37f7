"""Escaping text from analysed files before it reaches a terminal, a CI log, an editor or a web page.

File names and the source text quoted in messages (attribute paths, stream names, ...)
come from the code under review, which is untrusted: a file name with a newline and
``::stop-commands::`` would otherwise become a GitHub workflow command that hides every
later annotation, ``##[error]`` anywhere in a line is one too (GitHub's legacy form), so is
``##vso[...]`` anywhere in a line for Azure Pipelines, an ANSI escape in a ``setattr`` name
would clear the reviewer's terminal, and ``![x](http://...)`` in a hover would make the editor
fetch a remote image. There is one function per kind of output, and every reporter passes
each piece of analysed text through the one of its output, wherever the piece sits in the line:

- :func:`printable`: plain text (terminal and CI log: ``text``, ``concise``, ``full``, ``pylint``,
  ``grouped``, the flake8 and pylint messages, the gate's text report, warnings); with
  :func:`line_start_path` for a file name that begins a line and :func:`line_start` for other
  text that does;
- :func:`workflow_data` / :func:`workflow_property` over :func:`printable`: GitHub workflow commands;
- :func:`markdown_cell`: a cell or a line of a Markdown report (the ``markdown`` format, the
  gate's step summary);
- :func:`markdown_inline`: Markdown that an editor renders (the language server's hover);
- :func:`json_document`: a JSON document printed where a CI runner reads it (``json``, ``sarif``,
  ``gitlab``, the gate's JSON); lossless.

Escaping happens in the reporters, not where a fact enters a message: the JSON, SARIF and
cache outputs carry the text as data, unchanged, and each output needs its own escape (one
applied for another would be wrong, or applied twice).

>>> workflow_data("50%\\nnext")
'50%25%0Anext'
>>> workflow_property("a,b::c.py")
'a%2Cb%3A%3Ac.py'
>>> printable("self.\\x1b[2J\\rX")
'self.\\\\x1b[2J\\\\rX'
>>> printable("x ##[error]forged ##VSO[task.complete]")
'x \\\\x23#[error]forged \\\\x23#VSO[task.complete]'
>>> line_start_path("::stop-commands::tok.py")
'./::stop-commands::tok.py'
>>> markdown_cell("a|b `c` <i>")
'a&#124;b &#96;c&#96; &#60;i&#62;'
>>> markdown_inline("![p](http://x/a.png) *b*")
'\\\\!\\\\[p\\\\]\\\\(http\\\\:\\\\/\\\\/x\\\\/a\\\\.png\\\\) \\\\*b\\\\*'
"""
from __future__ import annotations

import re


def workflow_data(text: str) -> str:
    """The message part of a GitHub workflow command (``@actions/core``'s ``escapeData``)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def workflow_property(text: str) -> str:
    """A property value of a workflow command (``@actions/core``'s ``escapeProperty``):
    ``:`` and ``,`` separate properties, so they are escaped too."""
    return workflow_data(text).replace(":", "%3A").replace(",", "%2C")


def printable(text: str, keep: str = "") -> str:
    """``text`` safe to print as one field of a terminal line or a CI log line, wherever it sits.

    Every character that ``str.isprintable()`` rejects is written as a Python escape (``\\x1b``,
    ``\\r``, ``\\n``, ``\\u2028``), so one field prints as one visible line and can never drive
    the terminal; the characters in ``keep`` stay (for a caller that escapes them losslessly
    itself). The workflow commands that CI runners obey anywhere in a line are broken by
    writing their first ``#`` as ``\\x23``: ``##[command]`` (GitHub's legacy form) and
    ``##vso[`` (Azure Pipelines, any case), and a ``#`` at either end of the field that could
    complete one with the text around it. Other printable text, non-ASCII letters included,
    is unchanged. (A ``::`` command is obeyed only at the start of a line: see
    :func:`line_start` and :func:`line_start_path`.)"""
    if text.isprintable() and "#" not in text:
        return text
    shown = text if text.isprintable() else "".join(
        char if char.isprintable() or char in keep else _escape(char) for char in text)
    return re.sub(_WORKFLOW_MARKER, r"\\x23", shown)


#: The ``#`` that opens a workflow command a runner obeys anywhere in a line (``##[``, ``##vso[``),
#: one that could open it with the text that follows the field (a trailing ``##``), and a leading
#: ``#`` that could complete one with a ``#`` that precedes the field.
_WORKFLOW_MARKER = r"(?i)#(?=#(?:\[|vso\[|$))|^#(?=\[|vso\[)"


def line_start(text: str) -> str:
    """Analysed text that begins an output line (after any indentation: GitHub's runner strips
    it): :func:`printable`, with a leading ``::`` written as ``\\x3a:`` so the line is no
    workflow command.

    >>> line_start("  ::error::forged")
    '  \\\\x3a:error::forged'
    """
    shown = printable(text)
    stripped = shown.lstrip()
    if stripped.startswith("::"):
        return shown[: len(shown) - len(stripped)] + "\\x3a" + stripped[1:]
    return shown


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


#: ``string.punctuation``: every ASCII punctuation character (CommonMark's list), written out so
#: that a run need not import ``string`` (whose ``Template`` compiles a pattern at import).
_ASCII_PUNCTUATION = r"""!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~"""


def markdown_inline(text: str) -> str:
    """Analysed text inside Markdown that an editor renders (the language server's hover): every
    ASCII punctuation character backslash-escaped (CommonMark lets each be), so no emphasis,
    code span, link, image, autolink, HTML tag, entity, heading, list or table can come from it;
    non-printable characters are written as Python escapes first. Links and images in a hover
    come only from nnx-lint's own text around it."""
    return "".join("\\" + char if char in _ASCII_PUNCTUATION else char for char in printable(text))


def json_document(serialized: str) -> str:
    """A serialized JSON document made safe to print in a CI log, losslessly: every ``#`` written
    as ``\\u0023``. JSON has ``#`` only inside strings, where the escape decodes to the same
    text, and ``json.dumps`` already escapes control characters; so no ``##[`` or ``##vso[``
    from a file name or a message reaches the log, and every parser reads the same document.

    >>> json_document('{"file": "a##[error]x.py"}')
    '{"file": "a\\\\u0023\\\\u0023[error]x.py"}'
    """
    return serialized.replace("#", "\\u0023")
