"""The index page: the totals, the trend, the charts by family and by rule, and the tables by
directory, by file and by rule (sortable, the worst first), linked to the file and rule pages."""
from __future__ import annotations

from nnx_lint.reporting.html import svg
from nnx_lint.reporting.html.counts import COLUMNS, TOTALS, Row, directory_of, family_of, rows_by
from nnx_lint.reporting.html.escape import file_page, rule_page, text
from nnx_lint.reporting.html.history import History
from nnx_lint.reporting.html.layout import table

_COLUMN_LABELS = {"raises": "raises", "silent": "silent", "unproven": "unproven", "linter": "not analysed",
                  "advisory": "advisory"}


def _totals(counts: dict[str, int]) -> str:
    cards = [f'<div class="total {key}" title="{text(why)}"><span class="number" data-total="{key}">{counts[key]}'
             f"</span>{text(label)}</div>" for key, label, why in TOTALS]
    return '<section class="totals">' + "".join(cards) + "</section>"


def _count_table(first: str, rows: list[Row], link) -> str:
    """A sortable table of ``rows`` (already the worst first): name, a column per kind, total."""
    headings = [(first, "text"), *((_COLUMN_LABELS[c], "number") for c in COLUMNS), ("total", "number")]
    cells = []
    for row in rows:
        target = link(row.key)
        name = f'<a href="{target}">{text(row.key)}</a>' if target else text(row.key)
        cells.append([(name, row.key), *((str(row.counts[c]), row.counts[c]) for c in COLUMNS),
                      (str(row.total), row.total)])
    return table(headings, cells)


def trend_chart(history: History) -> str:
    """Breaks (raises and silent) and the findings the baseline hides, one point per run."""
    labels = [f"{run['time'][:10]} {(run['commit'] or '')[:8]}".strip() for run in history.runs]
    breaks = [run["kinds"]["raises"] + run["kinds"]["silent"] for run in history.runs]
    series = [("breaks", "k-breaks", breaks), ("all findings", "k-total", [run["total"] for run in history.runs])]
    if any(run["baselined"] is not None for run in history.runs):
        series.append(("in the baseline", "k-baselined", [run["baselined"] for run in history.runs]))
    return svg.trend("Breaks over time", labels, series)


def render_index(findings: list[dict], counts: dict[str, int], files_checked: int, history: History | None,
                 gate_counts: dict[str, int] | None) -> str:
    """The body of ``index.html``."""
    files = len({f["filename"] for f in findings})
    body = [f"<h1>Tree Mode migration: {len(findings)} finding{'s' * (len(findings) != 1)} in {files} "
            f"file{'s' * (files != 1)} ({files_checked} checked)</h1>", _totals(counts)]
    if gate_counts is not None:
        body.append(f'<p><a href="gate.html">Tests that break in Tree Mode</a>: {gate_counts["broken"]} '
                    f'({gate_counts["explained"]} explained by a finding, {gate_counts["unexplained"]} '
                    "unexplained).</p>")
    if history is not None and history.runs:
        bad = history.skipped
        skipped = f" ({bad} malformed line{'s' * (bad != 1)} skipped)" if bad else ""
        body += [f'<h2 id="trend">Trend: {len(history.runs)} run{"s" * (len(history.runs) != 1)}{skipped}</h2>',
                 trend_chart(history)]
    families = rows_by(findings, lambda f: family_of(f["code"]))
    rules = rows_by(findings, lambda f: f["code"])
    body += ['<h2 id="by-family">By family</h2>',
             svg.stacked_bars("Findings by family", [(row.key, None, dict(row.counts)) for row in families],
                              COLUMNS),
             '<h2 id="by-rule">By rule</h2>',
             svg.stacked_bars("Findings by rule", [(row.key, rule_page(row.key), dict(row.counts)) for row in rules],
                              COLUMNS),
             _count_table("rule", rules, rule_page),
             '<h2 id="by-directory">By directory</h2>',
             _count_table("directory", rows_by(findings, directory_of), lambda key: None),
             '<h2 id="by-file">By file</h2>',
             _count_table("file", rows_by(findings, lambda f: f["filename"]), file_page)]
    return "\n".join(body)
