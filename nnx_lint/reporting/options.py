"""The output options of ``nnx-lint check`` that follow Ruff: ``--show-help``, ``--show-fixes``
(Ruff's meaning: the fixes by rule), ``--rule-url-base``; and what they print."""
from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path


def add_arguments(check: argparse.ArgumentParser) -> None:
    """Add the options to the ``check`` parser."""
    check.add_argument("--show-help", action="store_true",
                       help="text format: print how to fix each diagnostic on an indented `help:` line")
    check.add_argument("--show-fixes", action="store_true",
                       help="as in Ruff: list the fixes applied (with --fix) or available, by rule")
    check.add_argument("--rule-url-base", metavar="URL", default=None,
                       help="where the rule pages are published (a prefix for CODE.md, or a template with "
                            "{code}); default: the pages shipped in the package, as file:// URIs")
    check.add_argument("--history", type=Path, metavar="FILE",
                       help="append this run's counts (commit, time, by kind and family) to FILE, one JSON line "
                            "per run; --output-format html plots them")
    check.add_argument("--gate-report", type=Path, metavar="FILE",
                       help="--output-format html: add a page of the tests that break in Tree Mode, from this "
                            "`nnx-lint gate --output-format json` report, linked to the findings that explain them")


def fix_enumeration(by_code: Counter, applied: bool) -> list[str]:
    """Ruff's ``--show-fixes`` list: ``Fixed 2 errors:`` (or ``Fixable with --fix, 2 errors:``)
    then ``    1 × NNX201 (state-axes-prefix)`` per rule."""
    from nnx_lint.engine.registry import rule_by_code

    total = sum(by_code.values())
    if not total:
        return []
    head = "Fixed" if applied else "Would fix with `--fix`:"
    lines = [f"{head} {total} error{'s' * (total != 1)}:" if applied else f"{head} {total} error{'s' * (total != 1)}"]
    for code, count in sorted(by_code.items()):
        rule = rule_by_code(code)
        lines.append(f"    {count} × {code} ({rule.symbol if rule else code})")
    return lines


def available_fixes(fixes: dict, diagnostics: list, unsafe: bool) -> Counter:
    """The findings ``--fix`` would fix now, by code."""
    return Counter(diagnostics[index].code for index, fix in fixes.items() if fix.fixes_finding(unsafe))
