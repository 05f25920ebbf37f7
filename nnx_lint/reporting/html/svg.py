"""The report's charts: small SVG drawn by hand, inline in the page.

Hand-written rather than a plotting library: the report needs two shapes (stacked bars and a
line over time), nnx-lint gains no dependency, the markup is ours to escape (every label goes
through :func:`.escape.text`), and the bytes are deterministic (integer coordinates, no ids
or time stamps that a library would generate). Colours come from the stylesheet by class
(``k-raises``...), so the SVG holds no inline style and the Content-Security-Policy forbids it.
"""
from __future__ import annotations

from collections.abc import Sequence

from nnx_lint.reporting.html.escape import text

_BAR_HEIGHT, _GAP, _LABEL_WIDTH, _BAR_WIDTH, _NUMBER_WIDTH = 18, 6, 260, 420, 60


def stacked_bars(title: str, rows: Sequence[tuple[str, str | None, dict[str, int]]],
                 columns: Sequence[str]) -> str:
    """Horizontal bars, one per ``(label, link or None, counts by column)``, stacked by column."""
    largest = max((sum(counts.values()) for _label, _link, counts in rows), default=0) or 1
    height = len(rows) * (_BAR_HEIGHT + _GAP) + _GAP
    width = _LABEL_WIDTH + _BAR_WIDTH + _NUMBER_WIDTH
    parts = [f'<svg class="chart bars" role="img" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg"><title>{text(title)}</title>']
    for number, (label, link, counts) in enumerate(rows):
        y = _GAP + number * (_BAR_HEIGHT + _GAP)
        caption = f'<text x="{_LABEL_WIDTH - 8}" y="{y + 13}" text-anchor="end">{text(label)}</text>'
        parts.append(f'<a href="{text(link)}">{caption}</a>' if link else caption)
        x = _LABEL_WIDTH
        for column in columns:
            count = counts.get(column, 0)
            if not count:
                continue
            span = max(1, round(count * _BAR_WIDTH / largest))
            parts.append(f'<rect class="k-{text(column)}" x="{x}" y="{y}" width="{span}" height="{_BAR_HEIGHT}">'
                         f'<title>{text(label)}: {count} {text(column)}</title></rect>')
            x += span
        parts.append(f'<text x="{x + 6}" y="{y + 13}">{sum(counts.values())}</text>')
    parts.append("</svg>")
    return "".join(parts)


_PLOT_WIDTH, _PLOT_HEIGHT, _MARGIN = 640, 220, 40


def trend(title: str, labels: Sequence[str], series: Sequence[tuple[str, str, Sequence[int | None]]]) -> str:
    """A line chart over the runs of the history: one point per run (``labels``) on each line of
    ``series`` (``(name, class, values)``; a None value draws no point)."""
    largest = max((v for _name, _cls, values in series for v in values if v is not None), default=0) or 1
    runs = len(labels)
    width, height = _PLOT_WIDTH + 2 * _MARGIN, _PLOT_HEIGHT + 2 * _MARGIN

    def x_of(index: int) -> int:
        return _MARGIN + (round(index * _PLOT_WIDTH / (runs - 1)) if runs > 1 else _PLOT_WIDTH // 2)

    def y_of(value: int) -> int:
        return _MARGIN + _PLOT_HEIGHT - round(value * _PLOT_HEIGHT / largest)

    parts = [f'<svg class="chart trend" role="img" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg"><title>{text(title)}</title>',
             f'<line class="axis" x1="{_MARGIN}" y1="{_MARGIN + _PLOT_HEIGHT}" x2="{_MARGIN + _PLOT_WIDTH}" '
             f'y2="{_MARGIN + _PLOT_HEIGHT}"/>',
             f'<line class="axis" x1="{_MARGIN}" y1="{_MARGIN}" x2="{_MARGIN}" y2="{_MARGIN + _PLOT_HEIGHT}"/>',
             f'<text x="{_MARGIN - 6}" y="{_MARGIN + 4}" text-anchor="end">{largest}</text>',
             f'<text x="{_MARGIN - 6}" y="{_MARGIN + _PLOT_HEIGHT + 4}" text-anchor="end">0</text>']
    for name, cls, values in series:
        points = [(x_of(i), y_of(v), v, labels[i]) for i, v in enumerate(values) if v is not None]
        if len(points) > 1:
            path = " ".join(f"{x},{y}" for x, y, _v, _label in points)
            parts.append(f'<polyline class="line {text(cls)}" points="{path}"/>')
        for x, y, value, label in points:
            parts.append(f'<circle class="point {text(cls)}" cx="{x}" cy="{y}" r="3">'
                         f'<title>{text(label)}: {value} {text(name)}</title></circle>')
    legend_x = _MARGIN
    for name, cls, _values in series:
        parts.append(f'<rect class="{text(cls)}" x="{legend_x}" y="10" width="12" height="12"/>'
                     f'<text x="{legend_x + 16}" y="20">{text(name)}</text>')
        legend_x += 16 + 8 * len(name) + 24
    if runs:
        parts.append(f'<text x="{x_of(0)}" y="{height - 12}" text-anchor="middle">{text(labels[0])}</text>')
    if runs > 1:
        parts.append(f'<text x="{x_of(runs - 1)}" y="{height - 12}" text-anchor="middle">{text(labels[-1])}</text>')
    parts.append("</svg>")
    return "".join(parts)
