"""NNX009: ``# noqa: NNX...`` codes that are unknown or suppressed nothing (Ruff's RUF100).

Computed by the engine after the walk, from the diagnostics *before* suppression, so it
works the same whether the front-end applies ``# noqa`` itself (CLI, pylint) or leaves
it to the host (flake8). Only ``NNX`` codes are judged: other tools' codes and bare
``# noqa`` are left alone. A code is *unused* only if it selects at least one rule that
ran on this file and none of that rule's diagnostics on the line: a rule that is not
enabled in this run might well fire in another configuration. ``# noqa: NNX009`` on a
line keeps the check off that line.
"""
from __future__ import annotations

from collections.abc import Iterable

from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.base.lines import physical_lines
from nnx_lint.base.noqa import UNUSED_NOQA_CODE, suppressing_line, suppressions

_PREFIX = "NNX"


def _run_of(table: dict, line: int) -> list[int]:
    """The lines around ``line`` that its noqa comment covers (the same codes, contiguous)."""
    codes = table[line]
    covered = [line]
    for step in (-1, 1):
        other = line + step
        while table.get(other, False) is codes:
            covered.append(other)
            other += step
    return covered


def unused_noqa(
    diagnostics: Iterable[Diagnostic], text: str, rules: Iterable[type], path: str
) -> list[Diagnostic]:
    """NNX009 diagnostics for the source ``text`` given the run's ``rules`` and their (unsuppressed)
    ``diagnostics``; empty unless NNX009 is among ``rules``."""
    enabled = {rule.code for rule in rules}
    if UNUSED_NOQA_CODE not in enabled:
        return []
    from nnx_lint.engine.registry import all_rules, rule_by_code

    known = [rule.code for rule in all_rules()]
    table = suppressions(text)
    lines = physical_lines(text)
    used: dict[int, set[str]] = {}
    for diagnostic in diagnostics:
        line = suppressing_line(diagnostic, table)
        if line is not None and table[line] is not None:
            used.setdefault(line, set()).update(c for c in table[line] if diagnostic.code.startswith(c))
    rule = rule_by_code(UNUSED_NOQA_CODE)
    found = []
    for line, codes in sorted(table.items()):
        if codes is None or any(UNUSED_NOQA_CODE.startswith(code) for code in codes):
            continue
        if "noqa" not in lines[line - 1].lower():
            continue  # covered by a comment on another line of its token run: judged there
        for covered in _run_of(table, line):  # a comment covers its whole run (a string, `\` lines)
            used.setdefault(line, set()).update(used.get(covered, ()))
        # `nnx201` is ours too: codes match as written, so it suppresses nothing and is unknown.
        ours = sorted(code for code in codes if code.upper().startswith(_PREFIX))
        unknown = [code for code in ours if not any(k.startswith(code) for k in known)]
        unused = [
            code for code in ours
            if code not in unknown and code not in used.get(line, ())
            and any(e.startswith(code) for e in enabled)
        ]
        if not unknown and not unused:
            continue
        parts = []
        if unused:
            parts.append("unused: " + ", ".join(unused))
        if unknown:
            parts.append("unknown: " + ", ".join(unknown))
            cased = [code.upper() for code in unknown
                     if code != code.upper() and any(k.startswith(code.upper()) for k in known)]
            if cased:
                parts.append("codes are case-sensitive: " + ", ".join(cased))
        text = lines[line - 1]
        column = text.lower().find("noqa")
        column = text.rfind("#", 0, column) + 1 if column > 0 else 1
        facts = {"unused": unused, "unknown": unknown, "detail": "; ".join(parts)}
        message, help_text = rule.render(facts)  # the one place messages and help are formatted
        found.append(
            Diagnostic(
                UNUSED_NOQA_CODE, rule.symbol, message, path,
                line, max(column, 1), line, len(text) + 1, rule.kind, facts, help_text,
            )
        )
    return found
