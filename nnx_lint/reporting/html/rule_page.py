"""A page per rule that has findings: the rule's documentation (the page ``nnx-lint rule CODE``
prints, :func:`nnx_lint.reporting.docs.render_rule`) and the findings of this run.

The documentation is Markdown; :func:`markdown_html` renders the small subset the rule pages
use (headings, paragraphs, lists, fenced code, inline code and emphasis). Its links point into
the documentation tree, which a report unpacked from an artifact does not have, so a link
keeps its text and loses its target. Everything is escaped like analysed text.
"""
from __future__ import annotations

import re

from nnx_lint.reporting.html.escape import file_page, finding_anchor, text
from nnx_lint.reporting.html.highlight import highlight_lines

_INLINE = re.compile(r"`([^`]+)`|\*\*([^*]+)\*\*|\[([^\]]+)\]\([^)]*\)")


def _inline(line: str) -> str:
    out, at = [], 0
    for match in _INLINE.finditer(line):
        out.append(text(line[at:match.start()]))
        code, strong, link = match.groups()
        out.append(f"<code>{text(code)}</code>" if code is not None else
                   f"<strong>{text(strong)}</strong>" if strong is not None else text(link))
        at = match.end()
    out.append(text(line[at:]))
    return "".join(out)


def markdown_html(markdown: str) -> str:
    """The rule page's Markdown as HTML (the subset described above)."""
    html: list[str] = []
    paragraph: list[str] = []
    items: list[str] = []
    lines = markdown.split("\n")

    def flush() -> None:
        if paragraph:
            html.append("<p>" + " ".join(_inline(line) for line in paragraph) + "</p>")
            paragraph.clear()
        if items:
            html.append("<ul>" + "".join(f"<li>{_inline(item)}</li>" for item in items) + "</ul>")
            items.clear()

    number = 0
    while number < len(lines):
        line = lines[number]
        if line.startswith("```"):
            flush()
            end = next((i for i in range(number + 1, len(lines)) if lines[i].startswith("```")), len(lines))
            code = "\n".join(lines[number + 1:end]) + "\n"
            html.append('<pre class="doc source">' + "\n".join(highlight_lines(code)) + "</pre>")
            number = end + 1
            continue
        heading = re.match(r"(#{1,4}) (.*)", line)
        if heading:
            flush()
            level = len(heading.group(1)) + 1  # the page's own title is the h1
            html.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif line.startswith("- "):
            if paragraph:
                flush()
            items.append(line[2:])
        elif line.startswith("  ") and items:
            items[-1] += " " + line.strip()
        elif not line.strip():
            flush()
        else:
            if items:
                flush()
            paragraph.append(line)
        number += 1
    flush()
    return "\n".join(html)


def render_rule_page(code: str, found: list[tuple[int, dict]]) -> str:
    """The body of ``code``'s page: this run's findings of the rule, then its documentation."""
    from nnx_lint.engine.registry import rule_by_code
    from nnx_lint.reporting.docs import render_rule

    rule = rule_by_code(code)
    listed = "".join(
        f'<li><a href="../{file_page(finding["filename"])}#{finding_anchor(index)}">'
        f'{text(finding["filename"])}:{finding["location"]["row"]}</a> {text(finding["message"])}</li>'
        for index, finding in found)
    body = [f"<h1>{text(code)}{' ' + text(rule.symbol) if rule else ''}</h1>",
            f"<h2>{len(found)} finding{'s' * (len(found) != 1)} in this run</h2>", f"<ul>{listed}</ul>"]
    if rule is not None:
        page = render_rule(rule).split("\n", 1)[1]  # its first line is the title above
        body.append('<section class="doc">' + markdown_html(page) + "</section>")
    return "\n".join(body)
