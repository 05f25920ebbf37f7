"""The CI and migration options of ``nnx-lint check``, kept out of :mod:`nnx_lint.cli`.

``--baseline FILE`` / ``--write-baseline FILE`` (:mod:`nnx_lint.baseline`), ``--add-noqa``
(:mod:`nnx_lint.add_noqa`), ``--force-exclude``, and ``-`` with ``--stdin-filename``
(:mod:`nnx_lint.single_file`). The CLI calls :func:`prepare` before the run,
:func:`execute` for the run, :func:`finish` after it and :func:`report` after its output.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nnx_lint.config import Settings
from nnx_lint.runner import RunResult

if TYPE_CHECKING:
    from nnx_lint.baseline import BaselineOutcome, Entry

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
                       help="append `# noqa: NNXnnn` to the line of every current finding and exit 0")
    check.add_argument("--force-exclude", action="store_true",
                       help="apply the excludes to paths named on the command line too (for pre-commit)")
    check.add_argument("--stdin-filename", type=Path, metavar="PATH",
                       help="with `-` as the path: the path of the source read from stdin (config, "
                            "per-file-ignores, excludes, imports and the reported path follow it)")


@dataclass
class Prepared:
    """What this module keeps between the steps of one ``check``."""

    #: The baseline's entries (``--baseline``), read before the run.
    baseline: list[Entry] | None = None
    #: The source read from stdin, for the baseline's fingerprints.
    stdin_data: bytes | None = None
    #: How the run compared with the baseline.
    outcome: BaselineOutcome | None = None


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
        from nnx_lint.baseline import BaselineError, read_baseline, upgrade_note

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


def execute(args: argparse.Namespace, settings: Settings, prepared: Prepared, run_paths) -> RunResult:
    """The run: ``run_paths(paths, settings)`` for files, the single-file linter for stdin."""
    settings.force_exclude = args.force_exclude
    if not reads_stdin(args):
        return run_paths(args.paths, settings)
    from nnx_lint.single_file import lint_text, read_stdin

    prepared.stdin_data = read_stdin()
    result = RunResult(files_checked=1, files_analysed=1)
    result.diagnostics = lint_text(args.stdin_filename, prepared.stdin_data, settings)
    return result


def finish(args: argparse.Namespace, settings: Settings, result: RunResult, prepared: Prepared) -> int | None:
    """After the run: apply the baseline to ``result``; for ``--add-noqa`` and
    ``--write-baseline`` do the work and return the exit status (None: carry on)."""
    read = _reader(args, prepared)
    if prepared.baseline is not None:
        from nnx_lint.baseline import apply_baseline

        prepared.outcome = apply_baseline(result.diagnostics, prepared.baseline, settings.root,
                                          _scope(args, settings), read)
        result.diagnostics = prepared.outcome.new
    if args.write_baseline is not None:
        from nnx_lint.baseline import BaselineError, entries_for, write_baseline

        try:
            entries = [e for e, _ in entries_for(result.diagnostics, settings.root, read)]
            count = write_baseline(args.write_baseline, entries, write_scope(args, settings, args.write_baseline))
        except BaselineError as exc:
            raise UsageError(str(exc)) from None
        print(f"nnx-lint: wrote {count} finding{'s' * (count != 1)} to {args.write_baseline}", file=sys.stderr)
        return 0
    if args.add_noqa:
        from nnx_lint.add_noqa import add_noqa

        outcome = add_noqa(result.diagnostics, write_scope(args, settings))
        for skipped in outcome.skipped:
            print(f"nnx-lint: --add-noqa: left {skipped}", file=sys.stderr)
        files = len(outcome.files)
        print(f"Added {outcome.added} noqa directive{'s' * (outcome.added != 1)} to {files} "
              f"file{'s' * (files != 1)}.", file=sys.stderr)
        return 0
    return None


def report(args: argparse.Namespace, prepared: Prepared) -> None:
    """The baseline's progress lines: after the text output, or on stderr for the
    machine-readable formats (whose stdout stays exactly what consumers parse)."""
    if prepared.outcome is None:
        return
    lines = prepared.outcome.summary_lines(verbose=args.verbose)
    machine = args.output_format != "text"
    print("\n".join(lines), file=sys.stderr if machine else sys.stdout)


def write_scope(args: argparse.Namespace, settings: Settings, *also: Path):
    """Where this run may write: the project root, and paths the user named outside it."""
    from nnx_lint.confined_writes import WriteScope

    return WriteScope.of(settings.root, [*args.paths, *also])


def _reader(args: argparse.Namespace, prepared: Prepared):
    from nnx_lint.source_lines import read_from_disk

    if not reads_stdin(args):
        return read_from_disk
    # With stdin, the fingerprints come from the buffer's lines, not from the file on disk.
    return lambda path: prepared.stdin_data


def _scope(args: argparse.Namespace, settings: Settings):
    """Whether this run checked a baseline entry's file, with the entry's rule on."""
    from nnx_lint.config import _relative_posix
    from nnx_lint.file_config import rules_for
    from nnx_lint.runner import discover

    files = [args.stdin_filename or Path("-")] if reads_stdin(args) else discover(args.paths, settings)
    checked = {_relative_posix(file, settings.root): file for file in files}

    def in_scope(entry) -> bool:
        file = checked.get(entry.file)
        return file is not None and any(rule.code == entry.code for rule in rules_for(settings, file))

    return in_scope
