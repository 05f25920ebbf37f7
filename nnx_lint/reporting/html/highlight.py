"""Python source as HTML lines with syntax classes: comments, strings, numbers, keywords.

One compiled regular expression scans the whole text (strings and comments first, so a ``#``
or a keyword inside a string is not taken for one): no dependency, deterministic, and fast.
The standard library's :mod:`tokenize` was the first choice, but it is pure Python: on
maxtext it took most of the report's time (about 250,000 tokens for the 38 flagged files).
Highlighting is only colour; a span it gets wrong on odd code (a nested f-string) misleads no
one, and every piece of text goes through :func:`.escape.text` whatever its class. The lines
are Python's physical lines (:func:`~nnx_lint.base.lines.physical_lines`), as the
diagnostics count them.

>>> highlight_lines("x = 'a<b'  # c\\n")
['x = <span class="s">&#x27;a&lt;b&#x27;</span>  <span class="c"># c</span>']
>>> highlight_lines("if x: y = 1.5\\n")
['<span class="k">if</span> x: y = <span class="n">1.5</span>']
"""
from __future__ import annotations

import bisect
import keyword
import re

from nnx_lint.base.lines import physical_lines
from nnx_lint.reporting.html.escape import text

_KEYWORDS = "|".join(sorted(keyword.kwlist, key=len, reverse=True))
_PREFIX = r"(?:[rRbBuUfF]{1,2})?"
_TOKENS = re.compile(
    r"(?P<c>#[^\n]*)"
    rf"|(?P<s>{_PREFIX}(?:'''(?:\\.|[^\\])*?(?:'''|\Z)|\"\"\"(?:\\.|[^\\])*?(?:\"\"\"|\Z)"
    r"|'(?:\\.|[^'\\\n])*(?:'|$)|\"(?:\\.|[^\"\\\n])*(?:\"|$)))"
    rf"|(?P<k>\b(?:{_KEYWORDS})\b)"
    r"|(?P<n>\b(?:0[xXoObB][0-9a-fA-F_]+|\d[\d_]*\.?[\d_]*(?:[eE][+-]?\d+)?[jJ]?)|\.\d[\d_]*(?:[eE][+-]?\d+)?[jJ]?)",
    re.MULTILINE,
)

#: Tabs of source are shown as tabs, not escapes.
_TAB = "\t"


def _spans(source: str, lines: list[str]) -> list[list[tuple[int, int, str]]]:
    """Per line, the ``(start, end, class)`` column ranges of the highlighted tokens."""
    starts, offset = [], 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    spans: list[list[tuple[int, int, str]]] = [[] for _ in lines]
    for match in _TOKENS.finditer(source):
        cls = match.lastgroup
        start, end = match.span()
        row = bisect.bisect_right(starts, start) - 1
        while row < len(lines) and start < end:
            line_end = starts[row] + len(lines[row])
            stop = min(end, line_end)
            if stop > start:
                spans[row].append((start - starts[row], stop - starts[row], cls))
            row += 1
            start = starts[row] if row < len(lines) else end
    return spans


def highlight_lines(source: str, lines: list[str] | None = None) -> list[str]:
    """Each physical line of ``source`` as escaped HTML with ``<span class>`` around its tokens."""
    lines = physical_lines(source) if lines is None else lines
    joined = "\n".join(lines)  # one separator per line break, whatever the file's line endings
    rendered = []
    for line, spans in zip(lines, _spans(joined, lines)):
        out, at = [], 0
        for start, end, cls in spans:
            out.append(text(line[at:start], keep=_TAB))
            out.append(f'<span class="{cls}">{text(line[start:end], keep=_TAB)}</span>')
            at = end
        out.append(text(line[at:], keep=_TAB))
        rendered.append("".join(out))
    return rendered
