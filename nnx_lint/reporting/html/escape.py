"""The one escaping function of the HTML report, and the safe names of its pages.

Every piece of analysed text (file and directory names, identifiers quoted in messages,
help, notes, source lines, gate test ids and their errors) reaches a page through
:func:`text`: ``html.escape(..., quote=True)`` after
:func:`~nnx_lint.base.escaping.printable`, so it is text in an element or a quoted attribute
value, never markup, and no control or bidirectional character reaches the reader. Page names
never come from a path: :func:`file_page` hashes it.

>>> text('<img src=x onerror="alert(1)">')
'&lt;img src=x onerror=&quot;alert(1)&quot;&gt;'
>>> file_page("<img src=x onerror=alert(1)>.py")
'files/f-e6cca88d9e59f21e.html'
"""
from __future__ import annotations

import hashlib
import html
import re

from nnx_lint.base.escaping import printable

_CODE = re.compile(r"NNX\d{3}")


def text(value: object, keep: str = "") -> str:
    """``value`` as HTML text (for an element's content or a quoted attribute); characters that
    are not printable are written as Python escapes, except those in ``keep`` (a tab of source)."""
    return html.escape(printable(str(value), keep), quote=True)


def file_page(path: str) -> str:
    """The page of a file, relative to the report's root: a digest of its path, so no file
    name (``..``, ``/``, ``#``, markup) ever becomes part of a URL."""
    return f"files/f-{hashlib.sha256(path.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}.html"


def rule_page(code: str) -> str | None:
    """The page of a rule (``rules/NNX201.html``), or None for anything that is not a code."""
    return f"rules/{code}.html" if _CODE.fullmatch(code) else None


def line_anchor(line: int, cell: int | None = None) -> str:
    """The id of a source line on a file page (``L12``; ``C3-L12`` in a notebook's cell 3)."""
    return f"C{int(cell)}-L{int(line)}" if cell is not None else f"L{int(line)}"


def finding_anchor(index: int) -> str:
    """The id of a finding on its file page: its position in the JSON output (``F0``)."""
    return f"F{int(index)}"
