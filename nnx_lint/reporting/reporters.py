"""Output formats: ``text`` (Ruff-like), ``json`` (Ruff's keys plus symbol/kind/facts), ``github``,
``sarif``, ``markdown``; ``concise``, ``full``, ``junit``, ``gitlab`` and ``pylint`` in
:mod:`nnx_lint.reporting.formats`; and ``--statistics``."""
from __future__ import annotations

import json
from collections import Counter

from nnx_lint.base.diagnostic import UNPROVEN, Diagnostic, analysed_whole
from nnx_lint.engine.runner import RunResult

FORMATS = ("text", "json", "github", "sarif", "markdown", "concise", "full", "junit", "gitlab", "pylint")

#: The formats whose findings carry Ruff's ``[*]`` marker and end with the fixable hint.
FIXABLE_MARKED = ("text", "concise", "full")

_KIND_WORDS = {
    "raises": "raise in Tree Mode",
    "silent": "silently change meaning",
    "linter": "could not be analysed",
    "advisory": "advisory",
}


#: What each confirmation status is called wherever a person reads it (the tag after a
#: diagnostic, the "Confirmation:" summary, the Markdown summary).
_STATUS_WORDS = {
    "confirmed": "confirmed",
    "pattern-confirmed": "pattern confirmed",
    "not-confirmed": "not confirmed",
    "error": "confirmation error",
    "unavailable": "no reproduction",
}

_MARKS = {
    **{status: f"[{word}]" for status, word in _STATUS_WORDS.items()},
    "not-confirmed": "[NOT CONFIRMED: the reproduction behaved as in graph mode; this finding is suspect]",
}


def render(
    result: RunResult, output_format: str, verbose: bool = False, show_repro: bool = False, show_help: bool = False,
    url_base: str | None = None, unsafe: bool = False,
) -> str:
    """``result`` in ``output_format``; rule links under ``url_base`` (``rule-url-base``; None:
    the pages shipped in the package); ``unsafe``: unsafe fixes count as applicable (``[*]``)."""
    from nnx_lint.reporting import formats

    from nnx_lint.base.escaping import json_document

    if output_format == "json":
        return json_document(render_json(result.diagnostics, result.confirmations, result.fixes, url_base))
    if output_format == "github":
        return render_github(result.diagnostics)
    if output_format == "sarif":
        return json_document(render_sarif(result.diagnostics, result.confirmations, url_base))
    if output_format == "markdown":
        from nnx_lint.reporting.markdown_report import render_markdown

        return render_markdown(result.diagnostics, result.confirmations, result.files_checked, _STATUS_WORDS,
                               url_base)
    if output_format == "pylint":
        return formats.render_pylint(result.diagnostics)
    if output_format == "junit":
        return formats.render_junit(result.diagnostics)
    if output_format == "gitlab":
        return json_document(formats.render_gitlab(result.diagnostics))
    if output_format == "concise":
        return "\n".join(formats.render_concise(result.diagnostics, result.fixes or {}, unsafe)
                         + _closing(result, unsafe))
    if output_format == "full":
        return "\n".join(formats.render_full(result.diagnostics, result.fixes or {}, unsafe, url_base)
                         + _closing(result, unsafe))
    return render_text(result, verbose, show_repro, show_help, unsafe)


def _closing(result: RunResult, unsafe: bool) -> list[str]:
    """The summary, then Ruff's fixable hint when any finding has a fix ``--fix`` would apply, then
    why findings have no fix (:attr:`RunResult.fix_note`)."""
    return [summary(result), *fixable_hint(result.fixes or {}, unsafe), *([result.fix_note] if result.fix_note else [])]


def fixable_hint(fixes: dict, unsafe: bool) -> list[str]:
    """``[*] N fixable with the `--fix` option.`` and, as in Ruff, how many more
    ``--unsafe-fixes`` would enable (nothing when no fix applies)."""
    applicable = sum(1 for fix in fixes.values() if fix.fixes_finding(unsafe))
    hidden = sum(1 for fix in fixes.values() if not fix.applies(unsafe) and fix.applies(True))
    if not applicable and not hidden:
        return []
    if not applicable:
        return [f"No fixes available ({hidden} hidden fix{'es' * (hidden != 1)} can be enabled with the "
                "`--unsafe-fixes` option)."]
    more = (f" ({hidden} hidden fix{'es' * (hidden != 1)} can be enabled with the `--unsafe-fixes` option)"
            if hidden else "")
    return [f"[*] {applicable} fixable with the `--fix` option{more}."]


def render_text(result: RunResult, verbose: bool = False, show_repro: bool = False, show_help: bool = False,
                unsafe: bool = False) -> str:
    """``path:line:col: CODE [*] message`` per diagnostic (``path:cell N:line:col`` in notebooks;
    ``[*]`` when ``--fix`` would fix it) and a summary, then the fixable hint; ``show_help`` adds
    each diagnostic's help on an indented ``help:`` line,
    then come the confirmation's ``evidence:``, each related location on an indented ``also at
    path:line:col: message`` line, and the reproduction.
    Text from the analysed code — file names, the names quoted in messages and help,
    evidence — is passed through :func:`~nnx_lint.base.escaping.printable`, so each field is one
    visible line and no control character reaches the terminal."""
    from nnx_lint.base.escaping import line_start_path, printable, printable_lines
    from nnx_lint.base.related import position
    from nnx_lint.reporting.formats import fix_marker, headline

    lines = []
    for index, d in enumerate(result.diagnostics):
        line = headline(d, fix_marker(index, result.fixes or {}, unsafe))
        verdict = result.confirmations.get(index)
        if verdict is not None:
            line += f" {_MARKS[verdict.status]}"
        if show_help and d.help:
            line += f"\n    help: {printable(d.help)}"
        if verdict is not None and (verdict.status != "unavailable" or verbose):
            line += f"\n    evidence: {printable(verdict.evidence)}"
        for other in d.related:
            line += f"\n    also at {printable(position(other))}: {printable(other.message)}"
        if verdict is not None:
            if show_repro and verdict.program:
                line += "\n" + _repro_block(d, verdict.program)
        lines.append(line)
    if verbose:
        for d in result.diagnostics:
            if "traceback" in d.facts:
                lines.append(f"{line_start_path(d.path)}: traceback of {printable(str(d.facts.get('rule')))}:\n"
                             f"{printable_lines(str(d.facts['traceback']))}")
    lines += _closing(result, unsafe)
    if result.confirmations:
        counts = Counter(v.status for v in result.confirmations.values())
        lines.append("Confirmation: " + ", ".join(f"{counts[s]} {_STATUS_WORDS[s]}" for s in _MARKS if counts[s]) + ".")
    return "\n".join(lines)


def _repro_block(d: Diagnostic, program: str) -> str:
    """A reproduction program, verbatim between header and footer lines, so it can be
    copied into a file and run. The program is generated (never analysed text as code),
    but its string literals may quote analysed text: control characters are escaped."""
    from nnx_lint.base.escaping import printable, printable_lines

    cell = f"cell {d.cell}:" if d.cell is not None else ""
    header = f"--- reproduction for {d.code} at {printable(d.path)}:{cell}{d.line} ---"
    return f"{header}\n{printable_lines(program.rstrip())}\n--- end of reproduction ---"


def _agreeing(words: str, count: int) -> str:
    """The summary's words for one kind, their verb agreeing with ``count``: "1 raises in Tree Mode",
    "2 raise in Tree Mode", "1 silently changes meaning"."""
    if count != 1:
        return words
    return {"raise in Tree Mode": "raises in Tree Mode",
            "silently change meaning": "silently changes meaning"}.get(words, words)


def summary(result: RunResult) -> str:
    count = len(result.diagnostics)
    checked = f"{result.files_checked} file{'s' * (result.files_checked != 1)} checked"
    if not count:
        return f"All checks passed! ({checked})"
    # Syntax newer than the target version is an NNX0xx on a file that was analysed: counted apart.
    # Unproven findings (audit mode) are counted apart from what is known to break.
    kinds = Counter(UNPROVEN if d.proof == UNPROVEN else "newer-syntax" if d.kind == "linter" and analysed_whole([d])
                    else d.kind for d in result.diagnostics)
    parts = [f"{kinds[k]} {_agreeing(words, kinds[k])}"
             for k, words in {**_KIND_WORDS, "newer-syntax": "newer than the target version",
                              UNPROVEN: "unproven"}.items()
             if kinds[k]]
    files = len({d.path for d in result.diagnostics})
    return (
        f"Found {count} diagnostic{'s' * (count != 1)} in {files} file{'s' * (files != 1)} "
        f"({', '.join(parts)}; {checked})."
    )


def _facts_in_key_order(d: Diagnostic) -> dict:
    """The facts shown (the traceback aside), every mapping in key order: a cached finding's facts come
    back from the signed cache in key order, and one finding prints the same bytes cold and warm."""
    def ordered(value):
        if isinstance(value, dict):
            return {key: ordered(value[key]) for key in sorted(value, key=str)}
        if isinstance(value, list):
            return [ordered(item) for item in value]
        return value

    return {key: ordered(d.facts[key]) for key in sorted(d.facts, key=str) if key != "traceback"}


def to_json_object(d: Diagnostic, confirmation=None, fix=None) -> dict:
    """Ruff's JSON keys, plus ``symbol``, ``kind``, ``help``, ``facts`` (and ``confirmation``).

    ``help`` is the fix advice (null when there is none), apart from the short ``message``;
    ``fix`` is Ruff's fix object (applicability, message, edits) or null; ``related`` lists
    the other lines the finding involves (:func:`related_json`).
    """
    facts = _facts_in_key_order(d)
    extra = {"confirmation": confirmation.to_dict()} if confirmation is not None else {}
    return {
        "code": d.code,
        "symbol": d.symbol,
        "message": d.message,
        "filename": d.path,
        "location": {"row": d.line, "column": d.column},
        "end_location": {"row": d.end_line, "column": d.end_column},
        "url": d.url,
        "kind": d.kind,
        "help": d.help or None,
        "facts": facts,
        "fix": fix.to_json() if fix is not None else None,
        "noqa_row": d.line,
        "cell": d.cell,
        "related": [related_json(r) for r in d.related],
        # Only on unproven findings (audit mode): the value the analysis could not resolve.
        **({"proof": d.proof} if d.proof == UNPROVEN else {}),
        **extra,
    }


def related_json(related) -> dict:
    """A related location in the JSON output: ``filename``, ``location`` and ``end_location``
    as for the diagnostic, ``message``, and ``cell`` (null outside notebooks)."""
    return {
        "filename": related.path,
        "location": {"row": related.line, "column": related.column},
        "end_location": {"row": related.end_line, "column": related.end_column},
        "message": related.message,
        "cell": related.cell,
    }


def json_objects(diagnostics: list[Diagnostic], confirmations: dict | None = None, fixes: dict | None = None,
                 url_base: str | None = None) -> list[dict]:
    """The JSON output's objects (:func:`to_json_object`), with ``url`` under ``url_base`` when one
    is configured: what ``--output-format json`` prints, and what the HTML report and the
    ``--history`` line count."""
    from nnx_lint.base.links import rule_url

    confirmations, fixes = confirmations or {}, fixes or {}
    found = [to_json_object(d, confirmations.get(i), fixes.get(i)) for i, d in enumerate(diagnostics)]
    for item in found:
        # Ruff's key, null without a configured rule-url-base: never a file:// path of this machine.
        item["url"] = rule_url(item["code"], url_base) if url_base else None
    return found


def render_json(diagnostics: list[Diagnostic], confirmations: dict | None = None, fixes: dict | None = None,
                url_base: str | None = None) -> str:
    """A JSON array of :func:`json_objects`."""
    return json.dumps(json_objects(diagnostics, confirmations, fixes, url_base), indent=2)


#: Workflow-command level per kind: what raises (or could not be analysed) fails the
#: review, a silent change warns, an advisory is a notice.
_GITHUB_LEVELS = {"raises": "error", "silent": "warning", "linter": "error", "advisory": "notice"}


def render_github(diagnostics: list[Diagnostic]) -> str:
    """GitHub Actions workflow commands: annotations on the pull request's diff.

    One command per line: the file name and title are escaped as properties and the
    message as data (``@actions/core``'s rules), so no analysed text can end the command
    or start another. Other control characters (which the runner has no escape for) are
    written as Python escapes, except in the file name's line breaks, which the property
    escaping carries losslessly. Notebooks point at the line of the ``.ipynb`` text that
    holds the code.
    """
    from nnx_lint.base.escaping import printable, workflow_data, workflow_property
    from nnx_lint.base.notebooks import file_span

    from nnx_lint.base.related import position

    lines = []
    for d in diagnostics:
        line, column, end_line, end_column = file_span(d)
        properties = {
            "title": printable(f"{d.code} {d.symbol}"), "file": printable(d.path, keep="\r\n"),
            "line": line, "col": column, "endLine": end_line, "endColumn": end_column,
        }
        rendered = ",".join(f"{key}={workflow_property(str(value))}" for key, value in properties.items())
        # An annotation has one location: the related ones are lines of its message (each
        # escaped on its own, so only these line breaks reach the annotation).
        message = "\n".join([printable(f"{d.code} {d.message}")]
                             + [printable(f"also at {position(r)}: {r.message}") for r in d.related])
        lines.append(f"::{_GITHUB_LEVELS[d.kind]} {rendered}::{workflow_data(message)}")
    return "\n".join(lines)


_SARIF_LEVELS = {"raises": "error", "silent": "error", "linter": "warning", "advisory": "note"}


def render_sarif(diagnostics: list[Diagnostic], confirmations: dict | None = None, url_base: str | None = None) -> str:
    """SARIF 2.1.0, for code-scanning dashboards (GitHub, GitLab, Azure DevOps)."""
    import nnx_lint
    from nnx_lint.base.notebooks import file_span
    from nnx_lint.engine.registry import rule_by_code
    from nnx_lint.base.links import rule_url

    confirmations = confirmations or {}
    codes = sorted({d.code for d in diagnostics})
    rules = []
    for code in codes:
        rule = rule_by_code(code)
        summary = rule.summary() if rule else code
        rules.append({
            "id": code,
            "name": rule.symbol if rule else code,
            "shortDescription": {"text": summary},
            # A rule link only where the team publishes the pages: a file:// path of the machine that
            # ran the lint is a dead link in code scanning, and exposes the runner's paths.
            **({"helpUri": rule_url(code, url_base)} if url_base else {}),
            **_sarif_rule_help(code),
            "properties": {"kind": rule.kind if rule else "linter"},
        })
    results = []
    for index, d in enumerate(diagnostics):
        line, column, end_line, end_column = file_span(d)
        properties = {"kind": d.kind, "facts": _facts_in_key_order(d)}
        if d.help:
            # SARIF has no per-result help (only the rule's); message.markdown must render the
            # message itself, so the advice formatted from this result's facts goes in its property bag.
            properties["help"] = d.help
        if index in confirmations:
            properties["confirmation"] = confirmations[index].to_dict()
        related = {"relatedLocations": _sarif_related(d.related)} if d.related else {}
        results.append({
            "ruleId": d.code,
            "ruleIndex": codes.index(d.code),
            # An unproven finding (audit mode) is a note: a place to look, not a known break.
            "level": "note" if d.proof == UNPROVEN else _SARIF_LEVELS[d.kind],
            "message": {"text": d.message},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": _sarif_uri(d.path)},
                    "region": {"startLine": line, "startColumn": column,
                               "endLine": end_line, "endColumn": end_column},
                }
            }],
            **related,
            "properties": properties,
        })
    document = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "nnx-lint", "version": nnx_lint.__version__, "rules": rules}},
            "results": results,
        }],
    }
    return json.dumps(document, indent=2)


def _sarif_uri(path: str) -> str:
    """A URI reference: a file name's spaces, '%', '#', line breaks are percent-encoded."""
    from urllib.parse import quote

    return quote(path.replace("\\", "/"), safe="/")


def _sarif_related(related) -> list[dict]:
    """``relatedLocations`` (SARIF 2.1.0 §3.27.22): each a location with an ``id`` unique in
    its result, a physical location (a notebook's in its JSON text, as for the result) and
    what happens there."""
    found = []
    for number, other in enumerate(related):
        line, column, end_line, end_column = other.file_span()
        found.append({
            "id": number,
            "physicalLocation": {
                "artifactLocation": {"uri": _sarif_uri(other.path)},
                "region": {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column},
            },
            "message": {"text": other.message},
        })
    return found


def _sarif_rule_help(code: str) -> dict:
    """The rule's ``help`` (SARIF reportingDescriptor §3.49.13): its whole page, which GitHub
    code scanning shows beside the alert. The page shipped in the package is read as it is;
    its relative links (the catalogue) lead nowhere outside the package, so they keep only
    their text."""
    import re

    from nnx_lint.base.links import shipped_page

    try:
        page = shipped_page(code).read_text(encoding="utf-8")
    except OSError:
        return {}
    page = re.sub(r"\[([^\]]*)\]\((?![a-z][a-z0-9+.-]*:)[^)]*\)", r"\1", page.strip())
    return {"help": {"text": page, "markdown": page}}


def render_statistics(result: RunResult, output_format: str = "text", group_by: str = "rule") -> str:
    """Counts per rule, most frequent first (like ``ruff --statistics``), with each rule's kind;
    or, with ``group_by`` ``file`` or ``directory``, counts per file or directory."""
    if output_format == "markdown":
        from nnx_lint.reporting.markdown_report import render_markdown_statistics

        return render_markdown_statistics(result.diagnostics, group_by)
    if group_by != "rule":
        return _render_group_statistics(result, output_format, group_by)
    counts = Counter(d.code for d in result.diagnostics)
    first = {}
    for d in result.diagnostics:
        first.setdefault(d.code, d)
    rows = [
        {"code": code, "count": count, "symbol": first[code].symbol, "kind": first[code].kind,
         "files": len({d.path for d in result.diagnostics if d.code == code})}
        for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]
    if output_format == "json":
        return json.dumps(rows, indent=2)
    width = max((len(str(r["count"])) for r in rows), default=1)
    lines = [f"{r['count']:>{width}}  {r['code']}  {r['kind']:8s} {r['symbol']} ({r['files']} file{'s' * (r['files'] != 1)})" for r in rows]
    lines.append(summary(result))
    return "\n".join(lines)


def _render_group_statistics(result: RunResult, output_format: str, group_by: str) -> str:
    """Counts per file or directory, most findings first, by kind and by code."""
    from nnx_lint.base.escaping import printable
    from nnx_lint.reporting.overview import groups

    found = groups(result.diagnostics, group_by)
    if output_format == "json":
        from nnx_lint.base.escaping import json_document

        return json_document(json.dumps([group.to_dict(group_by) for group in found], indent=2))
    width = max((len(str(g.count)) for g in found), default=1)
    key_width = max((len(printable(g.key)) for g in found), default=1)
    lines = []
    for group in found:
        kinds = ", ".join(f"{group.kinds[kind]} {kind}" for kind in _KIND_WORDS if group.kinds[kind])
        codes = ", ".join(f"{code} ({count})" for code, count in sorted(group.codes.items()))
        lines.append(f"{group.count:>{width}}  {printable(group.key):<{key_width}}  {kinds}: {codes}")
    lines.append(summary(result))
    return "\n".join(lines)
