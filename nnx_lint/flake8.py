"""The flake8 plugin: ``flake8 --select NNX,E9``.

It reuses flake8's file reading but not its ``ast`` tree: the engine builds its own
astroid tree, and only for files that pass the cheap text pre-filter. Which rules run on
a file is decided by ``[tool.nnx-lint]`` in its nearest ``pyproject.toml`` (or the file
named by ``--nnx-config``), exactly as ``nnx-lint check`` decides it: select, ignore,
extend-select, per-file-ignores and exclude. flake8's own ``--select``/``--ignore`` then
narrow further. ``# noqa`` is left to flake8; the file-level ``# nnx-lint: noqa`` is applied
here (flake8 does not know it). Unparsable or undecodable files are flake8's own E999/E902 (the
documented command, ``flake8 --select NNX,E9``, selects them: ``--select NNX`` alone would skip
such a file silently), so NNX001 never shows here, and NNX002 only for syntax newer than the
target version, in a file flake8 parsed (never with E999 on the same file); a rule crash
(NNX003) and a
file over the analysis budget (NNX004) do, as in the CLI.

flake8 runs every plugin on every file whatever ``--select`` says and filters afterwards,
so :meth:`NNXFlake8Plugin.parse_options` asks flake8's own decision engine which NNX codes
the options select: with none (``flake8 --select E9``) no analysis runs at all, and with
some (``--select NNX2``) only those rules run.

A configuration nnx-lint cannot use (invalid TOML, an unknown key, an unknown code, a
``--nnx-config`` file without ``[tool.nnx-lint]``) fails the run the way flake8 fails on
its own bad options: flake8's ``ExecutionError``, which it prints as "There was a critical
error during execution of Flake8:" and one ``nnx-lint: error: FILE ...`` line, exit status
1. The configurations of the paths on the command line are checked before any file is
read; one found deeper in the tree fails the run from the worker that reads it.

flake8 prints the file name and, with ``--show-source``, the source line of every finding
itself, raw. A committed ``a##[error]x.py`` or ``b##vso[...].py`` would then put a live
workflow command in the CI log (GitHub and Azure obey those anywhere in a line), so loading
the plugin wraps flake8's formatter to pass both through nnx-lint's escaping for plain text
(:func:`_escape_what_flake8_prints`): the same file, shown as the ``nnx-lint`` CLI shows it.
"""
from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nnx_lint
from nnx_lint.engine.config import ConfigError
from nnx_lint.engine.eager import load_lint_path
from nnx_lint.engine.walk import lint_source
from nnx_lint.base.escaping import line_start_path, printable
from nnx_lint.engine.file_config import isolated_by_environment, plugin_rules, settings_for_file
from nnx_lint.base.noqa import apply_file_exemption
from nnx_lint.analysis.project import module_name_for, shared_project
from nnx_lint.engine.registry import all_rules

try:  # flake8's own select/ignore logic, so the plugin agrees with flake8 on what is selected
    from flake8.style_guide import Decision, DecisionEngine
except ImportError:  # pragma: no cover - a flake8 without it: run every rule, flake8 filters
    Decision = DecisionEngine = None
try:  # what flake8 raises for its own unusable options, and reports in one clean message
    from flake8.exceptions import ExecutionError
except ImportError:  # pragma: no cover - flake8 has had it since 3.0
    ExecutionError = SystemExit

# Now, before any linted code's directory can be on sys.path (see nnx_lint.engine.eager).
load_lint_path()


def _escape_what_flake8_prints() -> None:
    """Make flake8's formatters print each finding's file name and source line escaped.

    ``BaseFormatter.handle`` is where every formatter that does not replace it gets the
    violation it prints; the wrapper gives it a copy whose ``filename`` went through
    :func:`~nnx_lint.base.escaping.line_start_path` and whose ``physical_line`` through
    :func:`~nnx_lint.base.escaping.printable`. Text that needs no escaping is unchanged, so
    ordinary runs print exactly what flake8 prints. Wrapped once per process."""
    try:
        from flake8.formatting.base import BaseFormatter
    except ImportError:  # pragma: no cover - flake8 has had it since 3.0
        return
    original = BaseFormatter.handle
    if getattr(original, "escapes_analysed_text", False):
        return

    def handle(self: Any, error: Any) -> None:
        physical = error.physical_line
        if physical is not None:
            body = physical.rstrip("\r\n")
            physical = printable(body) + physical[len(body):]
        original(self, error._replace(filename=line_start_path(error.filename), physical_line=physical))

    handle.escapes_analysed_text = True  # type: ignore[attr-defined]
    handle.__doc__ = original.__doc__
    BaseFormatter.handle = handle


_escape_what_flake8_prints()


class NNXFlake8Plugin:
    """flake8 tree plugin adapter around :func:`nnx_lint.engine.walk.lint_source`."""

    name = "nnx-lint"
    version = nnx_lint.__version__
    #: Codes flake8's options select, set by :meth:`parse_options` (None: not told, run all).
    selected_codes: frozenset[str] | None = None

    #: ``--nnx-config``: the pyproject.toml to read instead of each file's nearest one.
    config_file: Path | None = None
    #: flake8's own ``--isolated``: no configuration file at all, [tool.nnx-lint] included.
    isolated: bool = False
    #: flake8's ``--disable-noqa``: the file-level ``# nnx-lint: noqa`` is not applied either.
    disable_noqa: bool = False
    #: ``--nnx-strict`` (or ``nnx-strict = true`` in flake8's configuration): audit mode, as
    #: ``strict = true`` in [tool.nnx-lint] and the CLI's ``--strict``.
    strict: bool = False

    def __init__(self, tree: Any, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.lines = lines

    @classmethod
    def add_options(cls, option_manager: Any) -> None:
        option_manager.add_option(
            "--nnx-config", parse_from_config=True, default=None, metavar="PYPROJECT",
            help="read [tool.nnx-lint] from this pyproject.toml instead of each file's nearest one",
        )
        option_manager.add_option(
            "--nnx-strict", parse_from_config=True, action="store_true", default=False,
            help="audit mode: report unproven NNX diagnostics where the analysis cannot resolve a value",
        )

    @classmethod
    def parse_options(cls, options: Any) -> None:
        """flake8 hands over its parsed options: the configuration file to read, and which
        NNX codes they select."""
        cls.config_file = Path(options.nnx_config) if getattr(options, "nnx_config", None) else None
        # flake8 consumes `--isolated` in its preliminary parse and never passes it on to the
        # plugins' options: read it from the command line, where flake8 itself read it.
        cls.isolated = (bool(getattr(options, "isolated", False)) or "--isolated" in sys.argv[1:]
                        or isolated_by_environment())
        if cls.isolated and cls.config_file is not None:
            raise ExecutionError("nnx-lint: error: --isolated reads no configuration file: "
                                 "it cannot be used with --nnx-config")
        cls.selected_codes = _selected_codes(options)
        cls.disable_noqa = bool(getattr(options, "disable_noqa", False))
        cls.strict = bool(getattr(options, "nnx_strict", False))
        if cls.selected_codes is not None and not cls.selected_codes:
            return  # no NNX code selected: nnx-lint reads no configuration
        # Check the configurations of the named paths now, in flake8's main process, so that
        # a bad one stops the run before any worker starts.
        for target in [] if cls.isolated else getattr(options, "filenames", None) or ["."]:
            _settings_or_fail(Path(target), cls.config_file)

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        if self.selected_codes is not None and not self.selected_codes:
            return  # no NNX code selected (`flake8 --select E9`): no analysis at all
        text = "".join(self.lines)  # lint_source's pre-filter decides on it (nnx_lint.analysis.prefilter)
        path = Path(self.filename)
        settings = _settings_or_fail(path, self.config_file, self.isolated)
        rules = [rule for rule in plugin_rules(settings, path, also=_ENGINE_CODES_IN_FLAKE8)
                 if self.selected_codes is None or rule.code in self.selected_codes]
        if not rules:
            return  # excluded, or nothing selected
        module_name, package_root = module_name_for(path) if path.exists() else (path.stem, Path.cwd())
        project = shared_project(settings.analysis_roots())  # the CLI's roots
        project.start_file(self.filename, package_root)
        found = lint_source(
            text, self.filename, rules, project=project, module_name=module_name, apply_suppressions=False,
            target_version=settings.target_version, strict=settings.strict or self.strict,
        )
        # flake8 applies the line comments, but knows only its own file-level `# flake8: noqa`.
        for diagnostic in found if self.disable_noqa else apply_file_exemption(found, text):
            # printable(): the message may quote analysed text, which must not reach the terminal raw.
            yield diagnostic.line, diagnostic.column - 1, f"{diagnostic.code} {printable(diagnostic.message)}", type(self)


def _settings_or_fail(path: Path, config_file: Path | None, isolated: bool = False):
    """The settings for ``path``; an unusable configuration fails the flake8 run with one line."""
    try:
        return settings_for_file(path, config_file, isolated)
    except ConfigError as exc:
        # The message may quote the analysed repository's pyproject.toml: escaped, as in the CLI.
        raise ExecutionError(f"nnx-lint: error: {printable(str(exc))}") from None


#: Engine-reported codes that can occur on a file flake8 could parse (NNX002: syntax newer than
#: the target version, which the running Python parses).
_ENGINE_CODES_IN_FLAKE8 = ("NNX002", "NNX003", "NNX004")


def _selected_codes(options: Any) -> frozenset[str] | None:
    """The NNX codes flake8 would report under ``options`` (None if it cannot tell)."""
    if DecisionEngine is None:
        return None
    try:
        engine = DecisionEngine(options)
        return frozenset(r.code for r in all_rules() if engine.decision_for(r.code) is Decision.Selected)
    except Exception:  # another flake8 version: run every rule and let flake8 filter
        return None
