"""``nnx-lint``: the command line (in CI: the baseline check).

    nnx-lint check [PATH ...]     lint files and directories (default: .)
    nnx-lint rule NNX201          print a rule's documentation
    nnx-lint rules                list every rule
    nnx-lint gate [PATH] -- CMD   run the tests in graph mode and Tree Mode (nnx_lint/gate)
    nnx-lint server               the language server for editors, over stdio (nnx_lint/frontends/server)

Exit status: 0 clean, 1 findings, 2 usage, configuration or internal error.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable
from pathlib import Path

import nnx_lint
from nnx_lint.base.fast_exit import end_without_teardown

# Type checkers take TYPE_CHECKING as true; a run never imports typing for annotations (start-up).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

#: The subcommands and their one-line help. Only the chosen one's options are built (and its
#: modules imported): ``nnx-lint --version`` imports no engine, and ``check`` no gate.
COMMANDS = {
    "check": "lint files and directories",
    "rule": "print a rule's documentation",
    "rules": "list every rule",
    "server": "the language server for editors (LSP over stdio; needs the server extra)",
    "gate": "run the project's tests in graph mode and Tree Mode and join the breaks with the findings",
}


def build_parser(chosen: Iterable[str] = tuple(COMMANDS), listed: bool = True) -> argparse.ArgumentParser:
    """The command line's parser, with the options of the ``chosen`` subcommands (default: all);
    the others are listed with their help only, or (``listed`` false) left out: a command line
    whose first word names its subcommand never shows the list, and each subcommand's parser
    costs a share of start-up (argparse looks up its translations)."""
    wanted = set(chosen)
    parser = argparse.ArgumentParser(
        prog="nnx-lint",
        description="Find Flax NNX code that breaks or silently changes meaning under Tree Mode.",
        formatter_class=_help_formatter,
    )
    parser.add_argument("--version", action="version", version=f"nnx-lint {nnx_lint.__version__}")
    # Unlisted, the usage lines still name every command: the metavar argparse makes from them all.
    shown = {} if listed else {"metavar": "{" + ",".join(COMMANDS) + "}"}
    commands = parser.add_subparsers(dest="command", required=True, **shown)
    for name, help_text in COMMANDS.items():
        if name in wanted or listed:
            subparser = commands.add_parser(name, help=help_text, formatter_class=_help_formatter)
        if name in wanted:
            _ADD_ARGUMENTS[name](subparser)
    return parser


def _help_formatter(prog: str) -> argparse.HelpFormatter:
    """argparse's help formatter at the width argparse gives it, without its ``import shutil``: argparse
    makes a formatter for every option it adds, and shutil (for ``get_terminal_size``) imports bz2
    and lzma, a tenth of a bare interpreter's start-up."""
    return argparse.HelpFormatter(prog, width=_terminal_columns() - 2)


def _terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``: ``$COLUMNS``, else the width of the terminal on
    stdout, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


def _add_check_arguments(check: argparse.ArgumentParser) -> None:
    from nnx_lint.base.syntax.target import TARGET_VERSIONS
    from nnx_lint.frontends import cli_ci

    check.add_argument("paths", nargs="*", type=Path, default=[Path(".")], metavar="PATH")
    check.add_argument("--select", action="append", help="only these codes or prefixes (NNX2, NNX201)")
    check.add_argument("--ignore", action="append", help="skip these codes or prefixes")
    check.add_argument("--extend-select", action="append", help="add codes to the selection")
    check.add_argument("--output-format", default="text",
                       choices=("text", "json", "github", "sarif", "markdown", "concise", "full", "junit", "gitlab",
                                "pylint", "html"),
                       help="markdown: a migration summary for a pull-request comment or $GITHUB_STEP_SUMMARY; "
                            "html: the migration readiness report, a directory of pages (-o DIR)")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    check.add_argument("--statistics", action="store_true",
                       help="print counts per rule instead of the diagnostics (a migration overview)")
    check.add_argument("--group-by", choices=("rule", "file", "directory"), default=None,
                       help="what --statistics counts per (default: rule; implies --statistics)")
    check.add_argument("-j", "--jobs", type=int, default=0, help="worker processes (default: one per CPU)")
    check.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")
    check.add_argument("--cache-dir", type=Path, help="cache directory (default: one per project in the user cache directory)")
    check.add_argument("--config", type=Path, help="a pyproject.toml to read [tool.nnx-lint] from")
    check.add_argument("--isolated", action="store_true",
                       help="ignore every configuration file (as Ruff): the defaults, the cwd as the project root")
    check.add_argument("--target-version", choices=TARGET_VERSIONS, default=None,
                       help="the oldest Python the code supports: newer syntax is NNX002 (default: "
                            "`target-version`, else the lower bound of `requires-python`, else none)")
    check.add_argument("--strict", action="store_true", default=None,
                       help="audit mode: where a finding hangs on a value the analysis cannot resolve, report "
                            "an unproven diagnostic instead of staying silent (config: `strict = true`)")
    check.add_argument("-v", "--verbose", action="store_true", help="print tracebacks of failing rules")
    check.add_argument("--confirm", action="store_true",
                       help="back each diagnostic with a minimal reproduction run under Tree Mode (needs jax)")
    check.add_argument("--confirm-with", choices=("tree_runtime", "flax"), default=None,
                       help="the Tree Mode oracle for --confirm (default: tree_runtime; implies --confirm)")
    check.add_argument("--show-repro", action="store_true",
                       help="print each diagnostic's reproduction program (implies --confirm)")
    from nnx_lint.reporting import options as output_options

    output_options.add_arguments(check)
    cli_ci.add_arguments(check)
    check.add_argument("--fix", action="store_true",
                       help="apply safe fixes (keep graph mode at the finding) and report what remains (needs libcst)")
    check.add_argument("--unsafe-fixes", action="store_true",
                       help="with --fix / --diff, also apply unsafe fixes (tree-native rewrites)")
    check.add_argument("--diff", action="store_true",
                       help="print the fixes as a unified diff instead of writing them (exit 1 if any)")



def _add_rule_arguments(rule: argparse.ArgumentParser) -> None:
    rule.add_argument("code", help="a code (NNX201) or symbol (state-axes-prefix)")


def _add_server_arguments(server: argparse.ArgumentParser) -> None:
    server.add_argument("--baseline", metavar="FILE",
                        help="publish only findings not in this baseline (relative to each file's project root)")


def _add_gate_arguments(gate: argparse.ArgumentParser) -> None:
    from nnx_lint.gate.command import add_gate_arguments

    add_gate_arguments(gate)


_ADD_ARGUMENTS = {"check": _add_check_arguments, "rule": _add_rule_arguments, "rules": lambda _parser: None,
                  "server": _add_server_arguments, "gate": _add_gate_arguments}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # The top level takes no option but --version and --help, so the first word names the command.
    command = argv[0] if argv and argv[0] in COMMANDS else None
    test_command = None
    if command == "gate":
        from nnx_lint.gate.command import run_merge_command, split_test_command

        if argv[:2] == ["gate", "merge"]:  # the shards' reports; a project directory named merge is ./merge
            return run_merge_command(argv[2:])
        argv, test_command = split_test_command(argv)
    args = build_parser((command,) if command else (), listed=command is None).parse_args(argv)
    from nnx_lint.engine.own_rules import ForeignRules, check_own_rules

    try:
        check_own_rules()  # before anything imports the rules: a checkout's checkers/ must not run
    except ForeignRules as exc:
        print(f"nnx-lint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    try:
        if args.command == "gate":
            from nnx_lint.gate.command import run_gate_command

            return run_gate_command(args, test_command)
        if args.command == "check":
            return _check(args)
        if args.command == "rule":
            return _rule(args.code)
        if args.command == "server":
            from nnx_lint.frontends.server import run as run_server

            return run_server(args.baseline)
        return _rules()
    except KeyboardInterrupt:
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_CLEAN


def _apply_fixes(args: argparse.Namespace, settings, cache_dir=None) -> int | None:
    """``--fix`` / ``--diff`` (Ruff's model): fix files in place, then lint what remains
    (None: carry on with the run); print the diff, or fix stdin to stdout (an exit status)."""
    from nnx_lint.fixes import cli as fixes_cli
    from nnx_lint.frontends import cli_ci

    if not fixes_cli.libcst_available():
        fixes_cli.print_missing()
        return EXIT_ERROR
    if cli_ci.reads_stdin(args):
        from nnx_lint.frontends.single_file import read_stdin

        output, fixed = fixes_cli.fix_stdin(read_stdin(), args.stdin_filename, settings,
                                            unsafe=args.unsafe_fixes, diff=args.diff)
        sys.stdout.write(output)
        sys.stdout.flush()  # the fixed source (or diff) before the summary, as in Ruff
        print(fixes_cli.summary(fixed, args.diff), file=sys.stderr)
        return EXIT_FINDINGS if args.diff and fixed else EXIT_CLEAN
    progress = _terminal_progress(args, "fixed" if not args.diff else "diffed")
    try:
        fixed, changed, diffs, crashed = fixes_cli.run_fixes(args.paths, settings, unsafe=args.unsafe_fixes,
                                                             diff=args.diff, jobs=args.jobs, progress=progress)
    finally:
        if progress is not None:
            progress.clear()
    if args.diff:
        # As in Ruff: the diff first, then what it would fix (flushed, so a terminal that shows
        # both streams shows them in this order too).
        sys.stdout.write("".join(diffs))
        sys.stdout.flush()
    print(fixes_cli.summary(fixed, args.diff), file=sys.stderr)
    if args.diff and not fixed:
        _why_no_fixes(args, settings, cache_dir)
    if args.show_fixes:
        from nnx_lint.reporting.options import fix_enumeration

        for line in fix_enumeration(fixed, applied=not args.diff):
            print(line, file=sys.stderr)
    if args.diff:
        # A file whose fixes could not be computed may need some: never "nothing to fix".
        return EXIT_FINDINGS if changed or crashed else EXIT_CLEAN
    return None


def _check(args: argparse.Namespace) -> int:
    from nnx_lint.frontends import cli_ci
    from nnx_lint.engine.config import ConfigError, default_settings, load_settings, split_codes
    from nnx_lint.engine.file_config import isolated_by_environment
    from nnx_lint.base.syntax.target import parse_target_version
    from nnx_lint.base.escaping import printable

    try:
        prepared = cli_ci.prepare(args)
    except cli_ci.UsageError as exc:
        print(f"nnx-lint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    for path in args.paths:
        if not path.exists() and path != cli_ci.STDIN_PATH:
            print(f"nnx-lint: error: {path}: no such file or directory", file=sys.stderr)
            return EXIT_ERROR
    if not args.no_cache:
        _keep_toml_parses(args.cache_dir)
    args.isolated = args.isolated or isolated_by_environment()  # NNX_LINT_ISOLATED=1, as in every front-end
    if args.isolated and args.config is not None:
        print("nnx-lint: error: --isolated ignores every configuration file: it cannot be used with --config",
              file=sys.stderr)
        return EXIT_ERROR
    try:
        settings = default_settings() if args.isolated else load_settings(cli_ci.config_start(args), args.config)
        if args.select is not None:
            # Like Ruff: a selection on the command line starts the resolution afresh, so the
            # file's select, extend-select and ignore are all dropped (a committed `ignore =
            # ["NNX"]` cannot silence a CI run that selects on the command line).
            settings.select = split_codes(args.select)
            settings.extend_select = []
            settings.ignore = []
        if args.ignore is not None:
            settings.ignore = split_codes(args.ignore) or []
        if args.extend_select is not None:
            settings.extend_select = settings.extend_select + (split_codes(args.extend_select) or [])
        if args.target_version is not None:
            settings.target_version = parse_target_version(args.target_version)
        if args.strict:
            settings.strict = True
        cli_ci.apply_overrides(args, settings)  # --exclude, --extend-exclude, --extend-ignore, gitignore
        # Validate every selector now, so a typo is a usage error, not an empty run (only when
        # there are selectors: a default warm run then never imports the rules or astroid).
        if settings.select is not None or settings.ignore or settings.extend_select or settings.per_file_ignores:
            _check_selectors(settings)
    except ConfigError as exc:
        # The message may quote the analysed repository's pyproject.toml: one escaped line,
        # never a workflow command (the Actions runner reads stderr too).
        print(f"nnx-lint: error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    if args.show_settings:
        try:
            return cli_ci.show_settings(args, settings)
        except cli_ci.UsageError as exc:
            print(f"nnx-lint: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
    if args.output_format == "html" or args.gate_report is not None:
        from nnx_lint.frontends.html_report import ReportError, prepare

        try:
            args.gate_tests = prepare(args)  # read once, before the run: a bad report costs no lint
        except ReportError as exc:
            print(f"nnx-lint: error: {printable(str(exc))}", file=sys.stderr)
            return EXIT_ERROR
    if args.no_cache:
        cache_dir = None
    else:
        from nnx_lint.base.cache_store import default_cache_dir

        cache_dir = args.cache_dir or default_cache_dir(settings.root)
    if args.fix or args.diff:
        fixed = _apply_fixes(args, settings, cache_dir)
        if fixed is not None:
            return fixed  # --diff, and fixes of stdin: the output is the diff or the fixed source
    marks = _fix_marks(args, settings, cache_dir)
    try:
        return _run_and_report(args, settings, prepared, cache_dir, marks)
    finally:
        if marks is not None:
            marks.close()


def _keep_toml_parses(cache_dir: Path | None) -> None:
    """Keep the parses of the configuration's TOML files in the cache (``--cache-dir``, else the
    user cache), so that a run on an unchanged project imports no TOML parser
    (:mod:`nnx_lint.base.toml_data`)."""
    from nnx_lint.base.cache_store import user_cache_root
    from nnx_lint.base.toml_data import use_memo

    use_memo((cache_dir if cache_dir is not None else user_cache_root()) / "toml")


def _check_selectors(settings) -> None:
    """Raise :class:`~nnx_lint.engine.config.ConfigError` for a selector that names no rule."""
    from nnx_lint.engine.config import ConfigError
    from nnx_lint.engine.registry import UnknownSelector, check_selectors

    try:
        if settings.select is not None or settings.ignore or settings.extend_select:
            check_selectors(settings.select, settings.ignore, settings.extend_select)
        for codes in settings.per_file_ignores.values():
            check_selectors(codes)
    except UnknownSelector as exc:
        raise ConfigError(str(exc)) from None


def _why_no_fixes(args: argparse.Namespace, settings, cache_dir) -> None:
    """After ``--diff`` found nothing to fix: why, when the findings say (a lint run, from the cache
    when it is warm), on the line after "No fixes available."."""
    from nnx_lint.engine.runner import run
    from nnx_lint.fixes.missing import why_no_fixes

    result = run(args.paths, settings, jobs=args.jobs, cache_dir=cache_dir)
    note = why_no_fixes(result.diagnostics, {}, settings, args.unsafe_fixes, libcst=True)
    if note:
        print(note, file=sys.stderr)


def _terminal_progress(args: argparse.Namespace, action: str):
    """The status line of a run on a terminal (:mod:`nnx_lint.frontends.progress`), or None:
    stderr is not a terminal, ``-q`` was given, or the source comes from stdin."""
    from nnx_lint.frontends import cli_ci

    if args.quiet or cli_ci.reads_stdin(args) or not sys.stderr.isatty():
        return None  # a pipe or a log: the module is not even imported
    from nnx_lint.frontends.progress import FileProgress

    return FileProgress(action)


def _fix_marks(args: argparse.Namespace, settings, cache_dir):
    """The fixes to show (the JSON ``fix`` objects, the text formats' ``[*]``, as Ruff does):
    a :class:`~nnx_lint.fixes.marks.FixMarks`, or None when the output shows none (or libcst is
    not installed)."""
    if args.output_format not in ("json", "text", "concise", "full", "html") or args.statistics or args.group_by:
        return None
    from nnx_lint.fixes.cli import libcst_available

    if not libcst_available():
        return None
    from nnx_lint.fixes.marks import FixMarks

    return FixMarks(args.unsafe_fixes, settings, cache_dir, jobs=args.jobs)


def _run_and_report(args: argparse.Namespace, settings, prepared, cache_dir, marks) -> int:
    """The run, then its report, for :func:`_check`."""
    from nnx_lint.frontends import cli_ci

    from nnx_lint.base.escaping import printable
    from nnx_lint.engine.runner import run
    from nnx_lint.fixes.flax_target import explain_blocked_pins
    from nnx_lint.reporting.reporters import render

    def file_done(path: str, digest: str, diagnostics: list) -> None:
        # Each file's findings as the report shows them, to ask for their fixes during the run.
        marks.file_done(path, digest, explain_blocked_pins(diagnostics, settings))

    on_file = file_done if marks is not None else None
    progress = _terminal_progress(args, "checked")
    try:
        try:
            result = cli_ci.execute(args, settings, prepared, lambda paths, settings: run(
                paths, settings, jobs=args.jobs, cache_dir=cache_dir, on_file=on_file, progress=progress))
        finally:
            if progress is not None:
                progress.clear()  # before anything else is written
        finished = cli_ci.finish(args, settings, result, prepared)
    except cli_ci.UsageError as exc:
        print(f"nnx-lint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # an internal error must say so and exit 2, not look like findings
        import traceback

        print(f"nnx-lint: internal error: {printable(str(exc))}", file=sys.stderr)
        if args.verbose:
            traceback.print_exc()
        return EXIT_ERROR
    if finished is not None:
        return finished
    if args.confirm or args.confirm_with or args.show_repro:
        from nnx_lint.confirmation.oracle import OracleUnavailable, confirm

        try:
            result.confirmations = confirm(result.diagnostics, args.confirm_with or "tree_runtime", cache_dir)
        except OracleUnavailable as exc:
            print(f"nnx-lint: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
    result.diagnostics = explain_blocked_pins(result.diagnostics, settings)
    if marks is not None and result.diagnostics:
        result.fixes = marks.attach(result.diagnostics, result.digests)
    if args.output_format in ("text", "concise", "full") and not (args.statistics or args.group_by):
        from nnx_lint.fixes.missing import why_no_fixes

        # These formats show fixes only with libcst (_fix_marks): without it, marks is None.
        result.fix_note = why_no_fixes(result.diagnostics, result.fixes or {}, settings, args.unsafe_fixes,
                                       libcst=marks is not None)
    if args.history is not None or args.output_format == "html":
        reported = _report_html_and_history(args, settings, result, prepared)
        if reported is not None:
            return reported
    if args.statistics or args.group_by:
        from nnx_lint.reporting.reporters import render_statistics

        output = render_statistics(result, args.output_format, args.group_by or "rule")
    elif args.output_format == "html":
        output = ""  # written above
    else:
        output = render(result, args.output_format, verbose=args.verbose, show_repro=args.show_repro,
                        show_help=args.show_help, url_base=args.rule_url_base or settings.rule_url_base,
                        unsafe=args.unsafe_fixes)
    try:
        # -o FILE and -q (Ruff's): -q drops the summary lines of the text-like formats (whole
        # lines only, so a machine-readable format, which never has such a line, is untouched).
        from nnx_lint.reporting.reporters import summary

        dropped = ("Confirmation: ", "[*] ", "No fixes available", "No fix for ")
        quiet_drops = (summary(result),) + tuple(line for line in output.split("\n") if line.startswith(dropped))
        if args.output_format != "html":
            cli_ci.emit(args, settings, output, quiet_drops)
    except cli_ci.UsageError as exc:
        print(f"nnx-lint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.show_fixes and not (args.fix or args.diff):
        from nnx_lint.reporting.options import available_fixes, fix_enumeration

        for line in fix_enumeration(available_fixes(result.fixes or {}, result.diagnostics, args.unsafe_fixes),
                                    applied=False):
            print(line, file=sys.stderr)
    cli_ci.report(args, prepared)
    if result.diagnostics and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _report_html_and_history(args: argparse.Namespace, settings, result, prepared) -> int | None:
    """``--history`` and ``--output-format html`` (:mod:`nnx_lint.frontends.html_report`), from the
    JSON output's objects of this run; an exit status on a usage error (None: carry on)."""
    from nnx_lint.frontends.html_report import ReportError, record_history, write_html
    from nnx_lint.reporting.reporters import json_objects

    findings = json_objects(result.diagnostics, result.confirmations, result.fixes,
                            args.rule_url_base or settings.rule_url_base)
    from nnx_lint.reporting.html.history import now

    stamp, outcome = now(), prepared.outcome
    try:
        history = record_history(args, settings, findings, outcome.remaining if outcome is not None else None, stamp)
        if args.output_format == "html":
            write_html(args, settings, result, findings, history, stamp, getattr(args, "gate_tests", None))
    except ReportError as exc:
        from nnx_lint.base.escaping import printable

        print(f"nnx-lint: error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    return None


def _rule(name: str) -> int:
    from nnx_lint.reporting.docs import render_rule
    from nnx_lint.engine.registry import rule_by_code, rule_by_symbol

    rule = rule_by_code(name.upper()) or rule_by_symbol(name)
    if rule is None:
        print(f"nnx-lint: error: no rule {name!r} (see `nnx-lint rules`)", file=sys.stderr)
        return EXIT_ERROR
    print(render_rule(rule))
    return EXIT_CLEAN


def _rules() -> int:
    from nnx_lint.engine.registry import all_rules

    rules = all_rules()
    # Columns as wide as their longest entry; the summary is last and never cut.
    symbol_width = max(len(rule.symbol) for rule in rules)
    kind_width = max(len(rule.kind) for rule in rules)
    for rule in rules:
        default = "" if rule.default_enabled else " (off by default)"
        print(f"{rule.code}  {rule.symbol:<{symbol_width}}  {rule.kind:<{kind_width}}  {rule.summary()}{default}")
    return EXIT_CLEAN


def run() -> NoReturn:
    """The ``nnx-lint`` console script and ``python -m nnx_lint.cli``: :func:`main`, then exit.

    A ``check`` has written everything (reports, caches, baselines) by the time :func:`main`
    returns, and its workers are closed; freeing the heap of trees it built, object by object,
    would take a tenth of a second of a cold run of the flax repository, so it exits without the
    interpreter's teardown. The other commands (the gate's processes, the server) exit normally.
    """
    code = main()
    if sys.argv[1:2] == ["check"]:
        end_without_teardown(code)
    sys.exit(code)


if __name__ == "__main__":
    run()
