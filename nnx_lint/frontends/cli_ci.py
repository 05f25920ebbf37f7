"""The CI and migration options of ``nnx-lint check``, kept out of :mod:`nnx_lint.cli`.

``--baseline FILE`` / ``--write-baseline FILE`` (:mod:`nnx_lint.frontends.baseline`), ``--add-noqa``
(:mod:`nnx_lint.frontends.add_noqa`), ``--force-exclude``, and ``-`` with ``--stdin-filename``
(:mod:`nnx_lint.frontends.single_file`). The CLI calls :func:`prepare` before the run,
:func:`execute` for the run, :func:`finish` after it and :func:`report` after its output.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Type checkers take TYPE_CHECKING as true; a run never imports typing for annotations (start-up).
TYPE_CHECKING = False
if TYPE_CHECKING:  # imported where used: building the parser (`nnx-lint --version`) must not import the engine
    from nnx_lint.engine.config import Settings
    from nnx_lint.engine.runner import RunResult
    from nnx_lint.frontends.baseline import BaselineOutcome, Entry

STDIN_PATH = Path("-")


class UsageError(Exception):
    """An invalid combination of options or an unusable baseline; the message is one line."""


def add_arguments(check: argparse.ArgumentParser) -> None:
    """The options, on the ``check`` sub-parser."""
    check.add_argument("--baseline", type=Path, metavar="FILE",
                       help="report (and fail on) only findings not recorded in this baseline file")
    check.add_argument("--write-baseline", type=Path, metavar="FILE",
                       help="record every current finding in this baseline file and exit 0")
    check.add_argument("--add-noqa", action="store_true",
                       help="append `# noqa: NNXnnn` to the line of every current finding; exit 1 if some "
                            "could not get one (notebooks, say), else 0")
    check.add_argument("--force-exclude", action="store_true",
                       help="apply the excludes to paths named on the command line too (for pre-commit)")
    check.add_argument("--stdin-filename", type=Path, metavar="PATH",
                       help="with `-` as the path: the path of the source read from stdin (config, "
                            "per-file-ignores, excludes, imports and the reported path follow it)")
    # Ruff's names and meanings (docs/ruff-conventions.md lists the deliberate differences).
    check.add_argument("-q", "--quiet", action="store_true",
                       help="print the diagnostics and nothing else (no summary, no progress lines)")
    check.add_argument("-o", "--output-file", type=Path, metavar="FILE",
                       help="write the report to FILE instead of stdout (never through a symlink)")
    check.add_argument("--exclude", action="append", metavar="GLOBS",
                       help="exclude these globs (comma-separated), replacing the configured `exclude`")
    check.add_argument("--extend-exclude", action="append", metavar="GLOBS",
                       help="exclude these globs (comma-separated) as well")
    check.add_argument("--extend-ignore", action="append", metavar="CODES",
                       help="skip these codes or prefixes as well as the ignored ones")
    check.add_argument("--respect-gitignore", action=argparse.BooleanOptionalAction, default=None,
                       help="skip files and directories that .gitignore files ignore (default: on, or "
                            "`respect-gitignore` in [tool.nnx-lint])")
    check.add_argument("--show-settings", action="store_true",
                       help="print the settings resolved for the first file and exit")


class Prepared:
    """What this module keeps between the steps of one ``check``. (A plain class: a dataclass
    would cost start-up, where nothing compares or prints it.)"""

    def __init__(self) -> None:
        #: The baseline's entries (``--baseline``), read before the run.
        self.baseline: list[Entry] | None = None
        #: The source read from stdin, for the baseline's fingerprints.
        self.stdin_data: bytes | None = None
        #: How the run compared with the baseline.
        self.outcome: BaselineOutcome | None = None


def reads_stdin(args: argparse.Namespace) -> bool:
    """Whether the source comes from stdin (``-`` as the path)."""
    return STDIN_PATH in args.paths


def prepare(args: argparse.Namespace) -> Prepared:
    """Check the option combinations and read the baseline (before any linting)."""
    if reads_stdin(args) and len(args.paths) > 1:
        raise UsageError("`-` (stdin) cannot be combined with other paths")
    if args.stdin_filename is not None and not reads_stdin(args):
        raise UsageError("--stdin-filename names the source read from stdin: pass `-` as the path")
    if args.add_noqa and reads_stdin(args):
        raise UsageError("--add-noqa edits files in place and cannot be used with stdin")
    if args.write_baseline is not None and (args.baseline is not None or reads_stdin(args)):
        raise UsageError("--write-baseline records a whole run: use it without --baseline and without stdin")
    prepared = Prepared()
    if args.baseline is not None:
        from nnx_lint.frontends.baseline import BaselineError, read_baseline, upgrade_note

        try:
            prepared.baseline = read_baseline(args.baseline)
        except BaselineError as exc:
            raise UsageError(str(exc)) from None
        note = upgrade_note(args.baseline, prepared.baseline)
        if note:
            print(note, file=sys.stderr)
    return prepared


def config_start(args: argparse.Namespace) -> Path:
    """Where the configuration search starts: the stdin filename, or the first path."""
    if reads_stdin(args):
        return args.stdin_filename if args.stdin_filename is not None else Path.cwd()
    return args.paths[0]


def apply_overrides(args: argparse.Namespace, settings: Settings) -> None:
    """The command line's ``--exclude``, ``--extend-exclude``, ``--extend-ignore`` and
    ``--[no-]respect-gitignore`` over the configured settings (after ``--select`` / ``--ignore``)."""
    from nnx_lint.engine.config import split_codes

    if args.exclude is not None:
        settings.exclude = split_codes(args.exclude) or []  # as in Ruff: `extend-exclude` still applies
    if args.extend_exclude is not None:
        settings.extend_exclude = settings.extend_exclude + (split_codes(args.extend_exclude) or [])
    if args.extend_ignore is not None:
        settings.ignore = settings.ignore + (split_codes(args.extend_ignore) or [])
    if args.respect_gitignore is not None:
        settings.respect_gitignore = args.respect_gitignore


def show_settings(args: argparse.Namespace, settings: Settings) -> int:
    """``--show-settings``: the settings resolved for the first file the run would check
    (Ruff's ``--show-settings``), then exit 0; exit 2 if there is no such file."""
    import json
    import os

    from nnx_lint.engine.file_config import rules_for
    from nnx_lint.fixes.line_length import settings_indent_width, settings_line_length
    from nnx_lint.engine.runner import discover

    settings.force_exclude = args.force_exclude
    if reads_stdin(args):
        first = args.stdin_filename or STDIN_PATH
    else:
        first = next(iter(discover(args.paths, settings)), None)
    if first is None:
        raise UsageError("--show-settings: no file to lint under the given paths")

    def shown(path: Path | None) -> str:
        if path is None:
            return "none (the defaults)"
        # Relative to the cwd when below it, so the output can be pasted and compared.
        relative = os.path.relpath(os.path.abspath(path))
        return Path(relative).as_posix() if not relative.startswith("..") else str(path)

    rules = rules_for(settings, Path(first))
    width, indent = settings_line_length(settings), settings_indent_width(settings)
    indent_shown = str(indent.value) if indent.value else "the file's own"
    lines = [
        f"Resolved settings for: {shown(Path(first))}",
        f"Settings path: {shown(settings.source)}",
        "",
        f"root = {shown(settings.root)}",
        f"select = {json.dumps(settings.select) if settings.select is not None else '(the default rules)'}",
        f"extend-select = {json.dumps(settings.extend_select)}",
        f"ignore = {json.dumps(settings.ignore)}",
        f"exclude = {json.dumps(settings.exclude)}",
        f"extend-exclude = {json.dumps(settings.extend_exclude)}",
        f"respect-gitignore = {str(settings.respect_gitignore).lower()}",
        f"force-exclude = {str(args.force_exclude).lower()}",
        f"per-file-ignores = {json.dumps(settings.per_file_ignores)}",
        f"strict = {str(settings.strict).lower()}",
        f"src = {json.dumps([shown(root) for root in settings.source_roots])}",
        f"line-length = {width.value} ({width.source})",
        f"indent-width = {indent_shown} ({indent.source})",
        f"rules for this file = {', '.join(rule.code for rule in rules)}",
    ]
    from nnx_lint.base.escaping import printable

    # Globs and paths come from the analysed repository's pyproject.toml: one visible line each.
    print("\n".join(printable(line) for line in lines))
    return 0


def emit(args: argparse.Namespace, settings: Settings, output: str, summary_lines: tuple[str, ...] = ()) -> None:
    """Print the report, or write it to ``-o FILE``; ``-q`` drops ``summary_lines`` (the
    text format's summary and confirmation lines), as Ruff's ``-q`` prints diagnostics only."""
    if args.quiet and summary_lines:
        output = "\n".join(line for line in output.split("\n") if line not in summary_lines)
    if args.output_file is None:
        if output:
            print(output)
        return
    from nnx_lint.base.confined_writes import WriteRefused, WriteScope, write_confined

    # The user named the file: it may lie outside the project, but is never written through a
    # symlink, and a path inside the project must stay inside once resolved.
    try:
        write_confined(args.output_file, (output + "\n" if output else "").encode("utf-8"),
                       WriteScope.of(settings.root, [args.output_file]))
    except (WriteRefused, OSError) as exc:
        raise UsageError(f"-o/--output-file: {exc}") from None


def execute(args: argparse.Namespace, settings: Settings, prepared: Prepared, run_paths) -> RunResult:
    """The run: ``run_paths(paths, settings)`` for files, the single-file linter for stdin."""
    settings.force_exclude = args.force_exclude
    if not reads_stdin(args):
        return run_paths(args.paths, settings)
    from nnx_lint.frontends.single_file import lint_text, read_stdin

    prepared.stdin_data = read_stdin()
    from nnx_lint.engine.runner import RunResult

    result = RunResult(files_checked=1, files_analysed=1)
    result.diagnostics = lint_text(args.stdin_filename, prepared.stdin_data, settings)
    return result


def finish(args: argparse.Namespace, settings: Settings, result: RunResult, prepared: Prepared) -> int | None:
    """After the run: apply the baseline to ``result``; for ``--add-noqa`` and
    ``--write-baseline`` do the work and return the exit status (None: carry on)."""
    read = _reader(args, prepared)
    if prepared.baseline is not None:
        from nnx_lint.frontends.baseline import apply_baseline

        prepared.outcome = apply_baseline(result.diagnostics, prepared.baseline, settings.root,
                                          _scope(args, settings), read)
        result.diagnostics = prepared.outcome.new
    if args.write_baseline is not None:
        from nnx_lint.frontends.baseline import BaselineError, entries_for, write_baseline

        try:
            entries = [e for e, _ in entries_for(result.diagnostics, settings.root, read)]
            count = write_baseline(args.write_baseline, entries, write_scope(args, settings, args.write_baseline))
        except BaselineError as exc:
            raise UsageError(str(exc)) from None
        print(f"nnx-lint: wrote {count} finding{'s' * (count != 1)} to {args.write_baseline}", file=sys.stderr)
        return 0
    if args.add_noqa:
        from nnx_lint.frontends.add_noqa import add_noqa

        outcome = add_noqa(result.diagnostics, write_scope(args, settings))
        for skipped in outcome.skipped:
            print(f"nnx-lint: --add-noqa: left {skipped}", file=sys.stderr)
        files = len(outcome.files)
        print(f"Added {outcome.added} noqa directive{'s' * (outcome.added != 1)} to {files} "
              f"file{'s' * (files != 1)}.", file=sys.stderr)
        if outcome.skipped and not args.exit_zero:
            # Findings it could not suppress (notebooks, say) still fail the next run: say so now.
            left = len(outcome.skipped)
            print(f"nnx-lint: --add-noqa: {left} finding{'s' * (left != 1)} left unsuppressed", file=sys.stderr)
            return 1
        return 0
    return None


def report(args: argparse.Namespace, prepared: Prepared) -> None:
    """The baseline's progress lines: after the text output, or on stderr for the
    machine-readable formats (whose stdout stays exactly what consumers parse)."""
    if prepared.outcome is None or args.quiet:
        return  # -q: the diagnostics and nothing else
    lines = prepared.outcome.summary_lines(verbose=args.verbose)
    # With -o the report file holds the diagnostics only; the progress lines go to stderr.
    machine = args.output_format != "text" or getattr(args, "output_file", None) is not None
    print("\n".join(lines), file=sys.stderr if machine else sys.stdout)


def write_scope(args: argparse.Namespace, settings: Settings, *also: Path):
    """Where this run may write: the project root, and paths the user named outside it."""
    from nnx_lint.base.confined_writes import WriteScope

    return WriteScope.of(settings.root, [*args.paths, *also])


def _reader(args: argparse.Namespace, prepared: Prepared):
    from nnx_lint.engine.source_lines import read_from_disk

    if not reads_stdin(args):
        return read_from_disk
    # With stdin, the fingerprints come from the buffer's lines, not from the file on disk.
    return lambda path: prepared.stdin_data


def _scope(args: argparse.Namespace, settings: Settings):
    """Whether this run checked a baseline entry's file, with the entry's rule on."""
    from nnx_lint.engine.config import _relative_posix
    from nnx_lint.engine.file_config import rules_for
    from nnx_lint.engine.runner import discover

    files = [args.stdin_filename or Path("-")] if reads_stdin(args) else discover(args.paths, settings)
    checked = {_relative_posix(file, settings.root): file for file in files}

    def in_scope(entry) -> bool:
        file = checked.get(entry.file)
        return file is not None and any(rule.code == entry.code for rule in rules_for(settings, file))

    return in_scope
