"""``nnx-lint``: the command line and CI gate.

    nnx-lint check [PATH ...]     lint files and directories (default: .)
    nnx-lint rule NNX201          print a rule's documentation
    nnx-lint rules                list every rule
    nnx-lint gate [PATH] -- CMD   run the tests in graph mode and Tree Mode (nnx_lint/gate)

Exit status: 0 clean, 1 findings, 2 usage, configuration or internal error.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nnx_lint

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _split_codes(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    return [code.strip() for value in values for code in value.split(",") if code.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nnx-lint",
        description="Find Flax NNX code that breaks or silently changes meaning under Tree Mode.",
    )
    parser.add_argument("--version", action="version", version=f"nnx-lint {nnx_lint.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    check = commands.add_parser("check", help="lint files and directories")
    check.add_argument("paths", nargs="*", type=Path, default=[Path(".")], metavar="PATH")
    check.add_argument("--select", action="append", help="only these codes or prefixes (NNX2, NNX201)")
    check.add_argument("--ignore", action="append", help="skip these codes or prefixes")
    check.add_argument("--extend-select", action="append", help="add codes to the selection")
    check.add_argument("--output-format", choices=("text", "json", "github", "sarif"), default="text")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    check.add_argument("--statistics", action="store_true",
                       help="print counts per rule instead of the diagnostics (a migration overview)")
    check.add_argument("-j", "--jobs", type=int, default=0, help="worker processes (default: one per CPU)")
    check.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")
    check.add_argument("--cache-dir", type=Path, help="cache directory (default: .nnx_lint_cache at the project root)")
    check.add_argument("--config", type=Path, help="a pyproject.toml to read [tool.nnx-lint] from")
    check.add_argument("-v", "--verbose", action="store_true", help="print tracebacks of failing rules")
    check.add_argument("--confirm", action="store_true",
                       help="back each diagnostic with a minimal reproduction run under Tree Mode (needs jax)")
    check.add_argument("--confirm-with", choices=("tree_runtime", "flax"), default=None,
                       help="the Tree Mode oracle for --confirm (default: tree_runtime; implies --confirm)")
    check.add_argument("--show-repro", action="store_true",
                       help="print each diagnostic's reproduction program (implies --confirm)")

    rule = commands.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("code", help="a code (NNX201) or symbol (state-axes-prefix)")
    commands.add_parser("rules", help="list every rule")
    from nnx_lint.gate.command import add_gate_parser

    add_gate_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    from nnx_lint.gate.command import split_test_command

    argv, test_command = split_test_command(list(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(argv)
    try:
        if args.command == "gate":
            from nnx_lint.gate.command import run_gate_command

            return run_gate_command(args, test_command)
        if args.command == "check":
            return _check(args)
        if args.command == "rule":
            return _rule(args.code)
        return _rules()
    except KeyboardInterrupt:
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_CLEAN


def _check(args: argparse.Namespace) -> int:
    from nnx_lint.config import ConfigError, load_settings
    from nnx_lint.registry import UnknownSelector, select_rules
    from nnx_lint.reporters import render
    from nnx_lint.runner import run

    for path in args.paths:
        if not path.exists():
            print(f"nnx-lint: error: {path}: no such file or directory", file=sys.stderr)
            return EXIT_ERROR
    try:
        settings = load_settings(args.paths[0], args.config)
        if args.select is not None:
            # Like Ruff: a selection on the command line replaces the file's whole selection.
            settings.select = _split_codes(args.select)
            settings.extend_select = []
        if args.ignore is not None:
            settings.ignore = _split_codes(args.ignore) or []
        if args.extend_select is not None:
            settings.extend_select = settings.extend_select + (_split_codes(args.extend_select) or [])
        # Validate every selector now, so a typo is a usage error, not an empty run (only when
        # there are selectors: a default warm run then never imports the rules or astroid).
        if settings.select is not None or settings.ignore or settings.extend_select:
            select_rules(settings.select, settings.ignore, settings.extend_select)
        for codes in settings.per_file_ignores.values():
            select_rules(None, codes, ())
    except (ConfigError, UnknownSelector) as exc:
        print(f"nnx-lint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    cache_dir = None if args.no_cache else (args.cache_dir or settings.root / ".nnx_lint_cache")
    try:
        result = run(args.paths, settings, jobs=args.jobs, cache_dir=cache_dir)
    except Exception as exc:  # an internal error must say so and exit 2, not look like findings
        import traceback

        print(f"nnx-lint: internal error: {exc}", file=sys.stderr)
        if args.verbose:
            traceback.print_exc()
        return EXIT_ERROR
    if args.confirm or args.confirm_with or args.show_repro:
        from nnx_lint.confirmation import OracleUnavailable, confirm

        try:
            result.confirmations = confirm(result.diagnostics, args.confirm_with or "tree_runtime", cache_dir)
        except OracleUnavailable as exc:
            print(f"nnx-lint: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
    if args.statistics:
        from nnx_lint.reporters import render_statistics

        output = render_statistics(result, args.output_format)
    else:
        output = render(result, args.output_format, verbose=args.verbose, show_repro=args.show_repro)
    if output:
        print(output)
    if result.diagnostics and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _rule(name: str) -> int:
    from nnx_lint.docs import render_rule
    from nnx_lint.registry import rule_by_code, rule_by_symbol

    rule = rule_by_code(name.upper()) or rule_by_symbol(name)
    if rule is None:
        print(f"nnx-lint: error: no rule {name!r} (see `nnx-lint rules`)", file=sys.stderr)
        return EXIT_ERROR
    print(render_rule(rule))
    return EXIT_CLEAN


def _rules() -> int:
    from nnx_lint.registry import all_rules

    for rule in all_rules():
        summary = (rule.__doc__ or "").strip().splitlines()[0]
        default = "" if rule.default_enabled else " (off by default)"
        print(f"{rule.code}  {rule.symbol:28s} {rule.kind:8s} {summary}{default}")
    return EXIT_CLEAN


if __name__ == "__main__":
    sys.exit(main())
