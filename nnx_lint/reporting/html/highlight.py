"""Python source as HTML lines with syntax classes, from the standard library's tokenizer.

:mod:`tokenize` (not a highlighting library): no dependency, deterministic, and the same
physical lines as the diagnostics (:func:`~nnx_lint.base.lines.physical_lines`). Source that
does not tokenize keeps its classes up to the error and is plain text after it. Every piece of
text goes through :func:`.escape.text`; only the span tags are markup.

>>> highlight_lines("x = 'a<b'  # c\\n")
['x = <span class="s">&#x27;a&lt;b&#x27;</span>  <span class="c"># c</span>']
"""
from __future__ import annotations

import io
import keyword
import tokenize

from nnx_lint.base.lines import physical_lines
from nnx_lint.reporting.html.escape import text

_STRING_TYPES = {tokenize.STRING} | {getattr(tokenize, name) for name in ("FSTRING_START", "FSTRING_MIDDLE",
                                                                           "FSTRING_END") if hasattr(tokenize, name)}

#: Tabs of source are shown as tabs, not escapes.
_TAB = "\t"


def _class_of(token: tokenize.TokenInfo) -> str | None:
    if token.type in _STRING_TYPES:
        return "s"
    if token.type == tokenize.COMMENT:
        return "c"
    if token.type == tokenize.NUMBER:
        return "n"
    if token.type == tokenize.NAME and (keyword.iskeyword(token.string) or keyword.issoftkeyword(token.string)):
        return "k"
    return None


def _spans(source: str, line_count: int) -> list[list[tuple[int, int, str]]]:
    """Per line, the ``(start, end, class)`` column ranges of the highlighted tokens."""
    spans: list[list[tuple[int, int, str]]] = [[] for _ in range(line_count)]
    lines = physical_lines(source)
    try:
        for token in tokenize.generate_tokens(io.StringIO(source, newline=None).readline):
            cls = _class_of(token)
            if cls is None:
                continue
            (row, col), (end_row, end_col) = token.start, token.end
            for number in range(row, min(end_row, line_count) + 1):
                start = col if number == row else 0
                end = end_col if number == end_row else len(lines[number - 1])
                if end > start:
                    spans[number - 1].append((start, end, cls))
    except (tokenize.TokenError, SyntaxError, IndexError):
        pass  # highlighted up to here; the rest is plain text
    return spans


def highlight_lines(source: str, lines: list[str] | None = None) -> list[str]:
    """Each physical line of ``source`` as escaped HTML with ``<span class>`` around its tokens."""
    lines = physical_lines(source) if lines is None else lines
    rendered = []
    for line, spans in zip(lines, _spans(source, len(lines))):
        out, at = [], 0
        for start, end, cls in spans:
            if start < at:
                continue
            out.append(text(line[at:start], keep=_TAB))
            out.append(f'<span class="{cls}">{text(line[start:end], keep=_TAB)}</span>')
            at = end
        out.append(text(line[at:], keep=_TAB))
        rendered.append("".join(out))
    return rendered
