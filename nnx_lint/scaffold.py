"""Write the skeleton of a new rule: its module and its fixture (``python -m nnx_lint.scaffold``).

    python -m nnx_lint.scaffold NNX790 display-call api_semantics --api display --error ValueError

writes ``checkers/api_semantics/nnx790_display_call.py`` (a rule that flags calls of
``nnx.display`` outside graph mode, with its facts dataclass, one VALID and one INVALID case,
``no_reproduction_reason`` and ``no_fix_reason``) and ``tests/fixtures/api_semantics/NNX790_basic.py``
(CONTRIBUTING.md's example: a test runs it as written). The result passes the invariants, case,
fixture and parity tests as written (after ``python -m nnx_lint.docs``); the author then narrows
the detection, writes the real docstring, message and cases, and adds a reproduction builder.
Nothing is overwritten. ``--repo DIR`` writes below ``DIR`` instead of the checkout nnx-lint runs from.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from nnx_lint.engine.registry import all_rules, rule_by_code, rule_by_symbol, rules_directory

FIXTURES = Path("tests") / "fixtures"

MODULE = '''"""{code} ``{symbol}``: the rule, its examples."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from nnx_lint.api import Facts, Invalid, Rule, Valid, raises


@dataclass(frozen=True, kw_only=True)
class {facts_class}(Facts):
    """What ``{code}`` reports (the diagnostic's ``facts``, in this order)."""

    api: str


class {rule_class}(Rule):
    """`nnx.{api}(...)` raises `{error}` under Tree Mode.

    What it does:
        Flags calls of `nnx.{api}`, unless graph mode is kept there (explicit graph-mode
        flags, a graph-mode scope).

    Why is this bad?:
        Under Tree Mode, `nnx.{api}(...)` raises `{error}`.

    References:
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "{code}"
    facts_type = {facts_class}
    symbol = "{symbol}"
    kind = "raises"
    message = "`nnx.{{api}}(...)`: Tree Mode raises {error}"
    help = "Migrate this call to Tree Mode, or keep graph mode for it"
    no_reproduction_reason = "no reproduction builder has been written for this rule"
    no_fix_reason = "no fix has been written for this rule"
    VALID = [
        Valid(
            "look-alike",
            """
            def {api}():
                return None

            {api}()
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "direct-call",
            """
            from flax import nnx

            nnx.{api}()  # {code}
            """,
            tree_mode=raises("{error}"),
        ),
    ]

    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        if call is None or call.name != "{api}" or self.context.keeps_graph_mode(call):
            return
        self.report(node, api=call.name)
'''

#: Self-contained, as every fixture is (``tests/test_fixtures.py``): flax and the standard library only.
FIXTURE = '''from flax import nnx


def {api}():
    """A function of this project named like flax's: not flagged."""


nnx.{api}()  # {code}
{api}()
'''


def class_name(symbol: str) -> str:
    """``split-rngs-keyword`` -> ``SplitRngsKeyword``."""
    return "".join(part.capitalize() for part in symbol.split("-"))


def scaffold(code: str, symbol: str, family: str, api: str, error: str, repo: Path) -> list[Path]:
    """Write the rule module and its fixture under ``repo``; refuse clashes and bad names."""
    if not re.fullmatch(r"NNX[1-8]\d{2}", code):
        raise ValueError(f"{code!r}: a rule code is NNX followed by three digits (NNX1xx-NNX8xx)")
    if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)+", symbol):
        raise ValueError(f"{symbol!r}: a symbol is lower-case words joined by '-'")
    if not (api.isidentifier() and error.isidentifier()):
        raise ValueError("--api and --error are Python names (split_rngs, TypeError)")
    if rule_by_code(code) or rule_by_symbol(symbol):
        raise ValueError(f"{code} or {symbol} is taken")
    family_dir = repo / "checkers" / family
    if not (family_dir / "__init__.py").is_file():
        families = sorted(p.parent.name for p in (repo / "checkers").glob("*/__init__.py"))
        raise ValueError(f"{family!r} is not a family package of checkers/ ({', '.join(families)})")
    siblings = {rule.code[:4] for rule in all_rules() if rule.__module__.startswith(f"checkers.{family}.")}
    if siblings and code[:4] not in siblings:
        raise ValueError(f"{family} holds {', '.join(sorted(siblings))}xx codes, not {code}")
    module = family_dir / f"{code.lower()}_{symbol.replace('-', '_')}.py"
    fixture = repo / FIXTURES / family / f"{code}_basic.py"
    for path in (module, fixture):
        if path.exists():
            raise ValueError(f"{path} exists")
    values = {"code": code, "symbol": symbol, "api": api, "error": error,
              "rule_class": class_name(symbol), "facts_class": class_name(symbol) + "Facts"}
    module.write_text(MODULE.format(**values), encoding="utf-8")
    fixture.parent.mkdir(parents=True, exist_ok=True)
    fixture.write_text(FIXTURE.format(**values), encoding="utf-8")
    return [module, fixture]


def arguments() -> argparse.ArgumentParser:
    """The command line of ``python -m nnx_lint.scaffold``."""
    parser = argparse.ArgumentParser(prog="python -m nnx_lint.scaffold", description=__doc__.split("\n\n")[0])
    parser.add_argument("code", help="the new rule's code, e.g. NNX790")
    parser.add_argument("symbol", help="its symbol, e.g. display-call")
    parser.add_argument("family", help="its family package under checkers/, e.g. api_semantics")
    parser.add_argument("--api", required=True, help="the nnx function whose calls it flags (display)")
    parser.add_argument("--error", default="ValueError", help="the exception Tree Mode raises (ValueError)")
    parser.add_argument("--repo", type=Path, default=None,
                        help="the tree to write into (default: the checkout nnx-lint runs from)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = arguments().parse_args(argv)
    repo = args.repo if args.repo is not None else rules_directory().parent
    try:
        written = scaffold(args.code.upper(), args.symbol, args.family, args.api, args.error, repo)
    except ValueError as exc:
        print(f"nnx_lint.scaffold: error: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path.relative_to(repo)}")
    print("next: python -m nnx_lint.docs, then the tests (CONTRIBUTING.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
