"""``--output-format markdown``: a migration summary for a pull-request comment or
``$GITHUB_STEP_SUMMARY``.

It gives the counts by family and kind, by directory, the confirmation verdicts (when
``--confirm`` ran), the suggested order of work (see :mod:`nnx_lint.reporting.overview`), and a
table of the findings. Every piece of analysed text (file names, messages, evidence)
goes through :func:`~nnx_lint.base.escaping.markdown_cell`, so it can neither break the
table nor inject HTML, links or mentions into the comment.
"""
from __future__ import annotations

from collections import Counter

from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.base.escaping import markdown_cell
from nnx_lint.reporting.overview import STAGES, family_of, family_title, groups, stage_of

#: Column headings for the kinds, in the order of the order of work.
_KIND_HEADINGS = {"linter": "not analysed", "raises": "raises", "silent": "silent", "advisory": "advisory"}

#: Findings listed in the table at most (a pull-request comment holds 65536 characters);
#: the counts above the table always cover every finding.
MAX_FINDINGS = 100


def render_markdown(diagnostics: list[Diagnostic], confirmations: dict, files_checked: int,
                    status_words: dict[str, str], url_base: str | None = None) -> str:
    """The whole summary; ``status_words`` names the confirmation statuses (the text
    reporter's words, so both say the same). Codes link to ``url_base`` (``rule-url-base``)
    when one is configured; otherwise they name ``nnx-lint rule CODE``, since a comment's
    reader cannot open a file on the machine that ran the check."""
    if not diagnostics:
        return f"## nnx-lint\n\nNo findings ({_plural(files_checked, 'file')} checked)."
    files = len({d.path for d in diagnostics})
    kinds = [kind for kind in _KIND_HEADINGS if any(d.kind == kind for d in diagnostics)]
    parts = [
        f"## nnx-lint: {_plural(len(diagnostics), 'finding')} in {_plural(files, 'file')} "
        f"({files_checked} checked)",
        _by_family(diagnostics, kinds),
        _by_directory(diagnostics, kinds),
    ]
    if confirmations:
        parts.append(_confirmation(confirmations, status_words))
    parts.append(_order_of_work(diagnostics))
    parts.append(_findings(diagnostics, confirmations, status_words, url_base))
    return "\n\n".join(parts)


def render_markdown_statistics(diagnostics: list[Diagnostic], grouping: str) -> str:
    """``--statistics --output-format markdown``: one table of the counts per group."""
    kinds = [kind for kind in _KIND_HEADINGS if any(d.kind == kind for d in diagnostics)]
    rows = [[markdown_cell(g.key), *(str(g.kinds[k]) for k in kinds), str(g.count)]
            for g in groups(diagnostics, grouping)]
    return _table([grouping, *(_KIND_HEADINGS[k] for k in kinds), "total"], rows)


def _by_family(diagnostics: list[Diagnostic], kinds: list[str]) -> str:
    by_family: dict[str, Counter] = {}
    for d in diagnostics:
        by_family.setdefault(family_of(d.code), Counter())[d.kind] += 1
    rows = [
        [family, markdown_cell(family_title(family)), *(str(counts[k]) for k in kinds), str(sum(counts.values()))]
        for family, counts in sorted(by_family.items())
    ]
    totals = Counter(d.kind for d in diagnostics)
    rows.append(["**total**", "", *(f"**{totals[k]}**" for k in kinds), f"**{len(diagnostics)}**"])
    return "### By family and kind\n\n" + _table(["family", "what", *(_KIND_HEADINGS[k] for k in kinds), "total"], rows)


def _by_directory(diagnostics: list[Diagnostic], kinds: list[str]) -> str:
    rows = [
        [markdown_cell(g.key), *(str(g.kinds[k]) for k in kinds), str(g.count)]
        for g in groups(diagnostics, "directory")
    ]
    return "### By directory\n\n" + _table(["directory", *(_KIND_HEADINGS[k] for k in kinds), "total"], rows)


def _confirmation(confirmations: dict, status_words: dict[str, str]) -> str:
    counts = Counter(verdict.status for verdict in confirmations.values())
    rows = [[word, str(counts[status])] for status, word in status_words.items() if counts[status]]
    return "### Confirmation (`--confirm`)\n\n" + _table(["verdict", "findings"], rows)


def _order_of_work(diagnostics: list[Diagnostic]) -> str:
    lines = ["### Suggested order of work", ""]
    step = 0
    for stage in STAGES:
        found = [d for d in diagnostics if stage_of(d) is stage]
        if not found:
            continue
        step += 1
        files = len({d.path for d in found})
        lines.append(f"{step}. **{stage.title}**: {_plural(len(found), 'finding')} in {_plural(files, 'file')}"
                     f" — {stage.why}.")
    return "\n".join(lines)


def _findings(diagnostics: list[Diagnostic], confirmations: dict, status_words: dict[str, str],
              url_base: str | None = None) -> str:
    from nnx_lint.base.links import rule_url

    order = sorted(range(len(diagnostics)), key=lambda i: (STAGES.index(stage_of(diagnostics[i])),
                                                           diagnostics[i].sort_key()))
    rows = []
    for index in order[:MAX_FINDINGS]:
        d = diagnostics[index]
        cell = f"cell {d.cell}:" if d.cell is not None else ""
        row = [markdown_cell(f"{d.path}:{cell}{d.line}:{d.column}"), (f"[{d.code}]({rule_url(d.code, url_base)})" if url_base else f"nnx-lint rule {d.code}"), d.kind,
               markdown_cell(d.message) + _also_at(d)]
        if confirmations:
            verdict = confirmations.get(index)
            row.append(status_words[verdict.status] if verdict is not None else "")
        rows.append(row)
    headings = ["location", "code", "kind", "message"] + (["confirmation"] if confirmations else [])
    more = len(diagnostics) - MAX_FINDINGS
    note = f"\n\n{more} more findings are not listed (see the text or JSON output)." if more > 0 else ""
    return "### Findings\n\n" + _table(headings, rows) + note


def _also_at(d: Diagnostic) -> str:
    """The related locations, on their own lines of the message cell (``<br>`` is the one
    line break a table cell can hold; the text itself is escaped)."""
    from nnx_lint.base.related import position

    return "".join(f"<br>also at {markdown_cell(position(r))}: {markdown_cell(r.message)}" for r in d.related)


def _table(headings: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headings) + " |", "|" + "---|" * len(headings)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' * (count != 1)}"
