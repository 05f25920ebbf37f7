"""How long the diagnostics' messages are: what an editor's problem panel has to show.

    python bench/message_lengths.py [--list]

Lints every rule's INVALID cases (each with only its rule on, as tests/test_rule_cases.py
does) and every fixture under tests/fixtures (with its family on), and prints the median and
maximum message length and how many messages exceed 120 characters. ``--list`` prints each
INVALID-case message with its length and help. tests/test_messages.py holds the limit.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EDITOR_WIDTH = 120


def invalid_case_messages() -> list[tuple[str, str, str, str]]:
    """``(code, case id, message, help)`` of every diagnostic on the rules' INVALID cases."""
    from nnx_lint.engine.walk import lint_bytes
    from nnx_lint.engine.registry import all_rules

    rows = []
    for rule in all_rules():
        for case in rule.INVALID:
            # getattr: older checkouts had `python_below` (skip where the syntax is valid) and no target
            if getattr(case, "python_below", None) and sys.version_info >= case.python_below:
                continue
            target = getattr(case, "target_version", None)
            for d in lint_bytes(case.source.encode("utf-8"), "case.py", [rule],
                                **({"target_version": target} if target else {})):
                if d.code == rule.code:
                    # getattr: the script also measures checkouts from before `help` existed
                    rows.append((rule.code, case.id, d.message, getattr(d, "help", "")))
    return rows


def fixture_messages() -> list[str]:
    sys.path.insert(0, str(REPO / "tests"))
    from _support import fixture_files, lint_fixture

    return [d.message for path in fixture_files() for d in lint_fixture(path)]


def describe(name: str, messages: list[str]) -> str:
    lengths = [len(m) for m in messages]
    over = sum(length > EDITOR_WIDTH for length in lengths)
    return (f"{name}: {len(lengths)} diagnostics, median {statistics.median(lengths)}, max {max(lengths)}, "
            f"{over} over {EDITOR_WIDTH} characters")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print every INVALID-case message and its help")
    args = parser.parse_args()
    rows = invalid_case_messages()
    if args.list:
        for code, case_id, message, help_text in rows:
            print(f"{code} {case_id} [{len(message)}] {message}\n    help: {help_text}")
    print(describe("INVALID cases", [message for _, _, message, _ in rows]))
    print(describe("fixtures", fixture_messages()))


if __name__ == "__main__":
    main()
