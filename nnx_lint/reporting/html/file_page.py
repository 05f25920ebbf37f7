"""A page per file: its source with line numbers and highlighting, each finding inline below
its line with its message, help, the fix's diff, its confirmation and its related locations
(linked to the line or file they name).

The source is read with the lint's bounds (:func:`~nnx_lint.base.bounds.read_bounded`); a
notebook is shown as the code of its cells (:func:`~nnx_lint.base.notebooks.notebook_source`),
numbered ``cell:line`` as its findings are.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nnx_lint.base.lines import physical_lines
from nnx_lint.reporting.html.counts import category
from nnx_lint.reporting.html.escape import file_page, finding_anchor, line_anchor, rule_page, text
from nnx_lint.reporting.html.highlight import highlight_lines


@dataclass(frozen=True)
class Source:
    """A file's lines as shown, and for each the (line, cell) its findings name."""

    lines: list[str]
    numbers: list[tuple[int, int | None]]


def read_source(path: str) -> Source | None:
    """The file's source as the report shows it, None if it cannot be read."""
    from nnx_lint.base import bounds
    from nnx_lint.base.notebooks import NotebookError, notebook_source

    try:
        data = bounds.read_bounded(Path(path))
        if path.endswith(".ipynb"):
            code, origin = notebook_source(data)
            return Source(highlight_lines(code), [(o.line, o.cell) for o in origin])
        code = data.decode("utf-8")
    except (bounds.ParseFailure, OSError, UnicodeDecodeError, NotebookError, ValueError):
        return None
    lines = physical_lines(code)
    return Source(highlight_lines(code, lines), [(number, None) for number in range(1, len(lines) + 1)])


def where(item: dict) -> str:
    """``path:line:col`` (``path:cell N:line:col`` in a notebook) of a finding or related location."""
    cell = f"cell {item['cell']}:" if item.get("cell") is not None else ""
    return f"{item['filename']}:{cell}{item['location']['row']}:{item['location']['column']}"


def location_link(item: dict, pages: set[str], up: str) -> str:
    """A related location, linked to its line on its file's page."""
    label = text(where(item))
    if item["filename"] not in pages:
        return label
    anchor = line_anchor(item["location"]["row"], item.get("cell"))
    return f'<a href="{up}{file_page(item["filename"])}#{anchor}">{label}</a>'


def _diff(diff: str) -> str:
    lines = []
    for line in diff.splitlines():
        cls = "add" if line.startswith("+") and not line.startswith("+++") else (
            "del" if line.startswith("-") and not line.startswith("---") else "")
        lines.append(f'<span class="{cls}">{text(line, keep=chr(9))}</span>' if cls else text(line, keep=chr(9)))
    return '<pre class="diff">' + "\n".join(lines) + "</pre>"


def finding_block(index: int, finding: dict, diff: str | None, pages: set[str], up: str) -> str:
    """One finding as shown inline on its file's page (``up`` leads back to the report's root)."""
    code = finding["code"]
    page = rule_page(code)
    code_markup = f'<a href="{up}{page}">{text(code)}</a>' if page else text(code)
    badges = [f'<span class="badge">{text(category(finding))}</span>']
    confirmation = finding.get("confirmation")
    if confirmation:
        badges.append(f'<span class="badge confirmation">{text(confirmation["status"])}</span>')
    fix = finding.get("fix")
    if fix and fix.get("edits"):
        badges.append(f'<span class="badge fix">{text(fix["applicability"])} fix</span>')
    parts = [f'<div class="finding {text(category(finding))}" id="{finding_anchor(index)}">',
             f'<p><strong>{code_markup}</strong> <span class="symbol">{text(finding["symbol"])}</span> '
             f'{" ".join(badges)} <a class="here" href="#{finding_anchor(index)}">{text(where(finding))}</a></p>',
             f'<p class="message">{text(finding["message"])}</p>']
    if finding.get("help"):
        parts.append(f'<p class="help"><strong>help:</strong> {text(finding["help"])}</p>')
    if fix:
        parts.append(f'<p class="fix"><strong>fix ({text(fix["applicability"])}):</strong> {text(fix["message"])}</p>')
        if diff:
            parts.append(_diff(diff))
    if confirmation and confirmation.get("evidence"):
        parts.append(f'<p class="evidence"><strong>evidence:</strong> {text(confirmation["evidence"])}</p>')
    if finding.get("related"):
        parts.append("<ul class=\"related\">" + "".join(
            f"<li>also at {location_link(other, pages, up)}: {text(other['message'])}</li>"
            for other in finding["related"]) + "</ul>")
    parts.append("</div>")
    return "\n".join(parts)


def render_file_page(path: str, found: list[tuple[int, dict]], diffs: dict[int, str], pages: set[str]) -> str:
    """The body of ``path``'s page: a list of its findings, then its source with them inline.
    ``found`` is ``(index in the JSON output, finding)``; ``pages`` the files that have a page."""
    up = "../"
    source = read_source(path)
    at_line: dict[tuple[int, int | None], list[tuple[int, dict]]] = {}
    for index, finding in found:
        at_line.setdefault((finding["location"]["row"], finding.get("cell")), []).append((index, finding))
    summary = "".join(
        f'<li><a href="#{finding_anchor(index)}">{text(where(finding))}</a> {text(finding["code"])} '
        f'{text(finding["message"])}</li>' for index, finding in found)
    body = [f"<h1>{text(path)}</h1>",
            f'<p>{len(found)} finding{"s" * (len(found) != 1)}.</p>', f'<ul class="findings">{summary}</ul>']
    if source is None:
        body.append('<p class="note">The source could not be read when the report was written.</p>')
        body += [finding_block(index, finding, diffs.get(index), pages, up) for index, finding in found]
        return "\n".join(body)
    shown: set[tuple[int, int | None]] = set()
    rows = ['<div class="source">']
    for markup, (number, cell) in zip(source.lines, source.numbers):
        anchor = line_anchor(number, cell)
        here = at_line.get((number, cell), [])
        label = f"{cell}:{number}" if cell is not None else str(number)
        flagged = " flagged" if here else ""
        rows.append(f'<div class="line{flagged}" id="{anchor}"><a class="ln" href="#{anchor}">{label}</a>'
                    f"<code>{markup}</code></div>")
        for index, finding in here:
            rows.append(finding_block(index, finding, diffs.get(index), pages, up))
        shown.add((number, cell))
    rows.append("</div>")
    # A finding whose line is past the end of the source as read now (the file changed).
    beyond = sorted((key for key in at_line if key not in shown), key=lambda key: (key[1] or 0, key[0]))
    rows += [finding_block(index, finding, diffs.get(index), pages, up) for key in beyond
             for index, finding in at_line[key]]
    return "\n".join(body + rows)
