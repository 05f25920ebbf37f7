"""Output formats: ``text`` (Ruff-like), ``json`` (Ruff's keys plus symbol/kind/facts), ``github``."""
from __future__ import annotations

import json
from collections import Counter

from nnx_lint.diagnostic import Diagnostic
from nnx_lint.runner import RunResult

FORMATS = ("text", "json", "github", "sarif")

_KIND_WORDS = {
    "raises": "raise in Tree Mode",
    "silent": "silently change meaning",
    "linter": "could not be analysed",
    "advisory": "advisory",
}


_MARKS = {
    "confirmed": "[confirmed]",
    "not-confirmed": "[NOT CONFIRMED: the reproduction behaved as in graph mode; this finding is suspect]",
    "error": "[confirmation error]",
    "unavailable": "[no reproduction]",
}


def render(result: RunResult, output_format: str, verbose: bool = False, show_repro: bool = False) -> str:
    if output_format == "json":
        return render_json(result.diagnostics, result.confirmations, result.fixes)
    if output_format == "github":
        return render_github(result.diagnostics)
    if output_format == "sarif":
        return render_sarif(result.diagnostics, result.confirmations)
    return render_text(result, verbose, show_repro)


def render_text(result: RunResult, verbose: bool = False, show_repro: bool = False) -> str:
    lines = []
    for index, d in enumerate(result.diagnostics):
        where = f"cell {d.facts['cell']}:" if "cell" in d.facts else ""
        line = f"{d.path}:{where}{d.line}:{d.column}: {d.code} {d.message}"
        verdict = result.confirmations.get(index)
        if verdict is not None:
            line += f" {_MARKS[verdict.status]}"
            if verdict.status != "unavailable" or verbose:
                line += f"\n    evidence: {verdict.evidence}"
            if show_repro and verdict.program:
                line += "\n" + "\n".join("    | " + l for l in verdict.program.rstrip().splitlines())
        lines.append(line)
    if verbose:
        for d in result.diagnostics:
            if "traceback" in d.facts:
                lines.append(f"{d.path}: traceback of {d.facts.get('rule')}:\n{d.facts['traceback']}")
    lines.append(summary(result))
    if result.confirmations:
        counts = Counter(v.status for v in result.confirmations.values())
        lines.append("Confirmation: " + ", ".join(f"{counts[s]} {s}" for s in _MARKS if counts[s]) + ".")
    return "\n".join(lines)


def summary(result: RunResult) -> str:
    count = len(result.diagnostics)
    checked = f"{result.files_checked} file{'s' * (result.files_checked != 1)} checked"
    if not count:
        return f"All checks passed! ({checked})"
    kinds = Counter(d.kind for d in result.diagnostics)
    parts = [f"{kinds[k]} {_KIND_WORDS[k]}" for k in _KIND_WORDS if kinds[k]]
    files = len({d.path for d in result.diagnostics})
    return (
        f"Found {count} diagnostic{'s' * (count != 1)} in {files} file{'s' * (files != 1)} "
        f"({', '.join(parts)}; {checked})."
    )


def to_json_object(d: Diagnostic, confirmation=None, fix=None) -> dict:
    """Ruff's JSON keys, plus ``symbol``, ``kind``, ``facts`` (and ``confirmation``)."""
    facts = {k: v for k, v in d.facts.items() if k != "traceback"}
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
        "facts": facts,
        "fix": fix.to_json() if fix is not None else None,
        "noqa_row": d.line,
        "cell": d.facts.get("cell"),
        **extra,
    }


def render_json(diagnostics: list[Diagnostic], confirmations: dict | None = None, fixes: dict | None = None) -> str:
    confirmations, fixes = confirmations or {}, fixes or {}
    return json.dumps([to_json_object(d, confirmations.get(i), fixes.get(i)) for i, d in enumerate(diagnostics)],
                      indent=2)


def render_github(diagnostics: list[Diagnostic]) -> str:
    """GitHub Actions workflow commands: annotations on the pull request's diff."""
    lines = []
    for d in diagnostics:
        level = "error" if d.kind in ("raises", "silent", "linter") else "notice"
        message = d.message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        lines.append(
            f"::{level} title=nnx-lint ({d.code}),file={d.path},line={d.line},col={d.column},"
            f"endLine={d.end_line},endColumn={d.end_column}::{d.code} {message}"
        )
    return "\n".join(lines)


_SARIF_LEVELS = {"raises": "error", "silent": "error", "linter": "warning", "advisory": "note"}


def render_sarif(diagnostics: list[Diagnostic], confirmations: dict | None = None) -> str:
    """SARIF 2.1.0, for code-scanning dashboards (GitHub, GitLab, Azure DevOps)."""
    import nnx_lint
    from nnx_lint.registry import rule_by_code

    confirmations = confirmations or {}
    codes = sorted({d.code for d in diagnostics})
    rules = []
    for code in codes:
        rule = rule_by_code(code)
        summary = (rule.__doc__ or "").strip().splitlines()[0] if rule else code
        rules.append({
            "id": code,
            "name": rule.symbol if rule else code,
            "shortDescription": {"text": summary},
            "helpUri": nnx_lint.DOCS_URL.format(code=code),
            "properties": {"kind": rule.kind if rule else "linter"},
        })
    results = []
    for index, d in enumerate(diagnostics):
        properties = {"kind": d.kind, "facts": {k: v for k, v in d.facts.items() if k != "traceback"}}
        if index in confirmations:
            properties["confirmation"] = confirmations[index].to_dict()
        results.append({
            "ruleId": d.code,
            "ruleIndex": codes.index(d.code),
            "level": _SARIF_LEVELS[d.kind],
            "message": {"text": d.message},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": d.path.replace("\\", "/")},
                    "region": {"startLine": d.line, "startColumn": d.column,
                               "endLine": d.end_line, "endColumn": d.end_column},
                }
            }],
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


def render_statistics(result: RunResult, output_format: str = "text") -> str:
    """Counts per rule, most frequent first (like ``ruff --statistics``), with each rule's kind."""
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
