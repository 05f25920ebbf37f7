"""The pylint plugin: ``pylint --load-plugins=nnx_lint.pylint``.

Registers one checker per NNX family, all named ``nnx`` (so ``--disable=nnx`` turns
every one off). Message ids map one-to-one to NNX codes in pylint's range for external
checkers: ``NNX201`` -> ``E9201`` (``E`` for ``raises``, ``W`` for ``silent``, ``C`` for
advisories); symbols are the rule symbols, so ``# pylint: disable=state-axes-prefix``
works. The engine runs once per module on the tree pylint already built, and
``# noqa`` comments are honoured too, so pylint reports exactly what the CLI reports.
Which rules run on a module is decided by ``[tool.nnx-lint]`` in its nearest
``pyproject.toml`` (or the file named by ``--nnx-config``), as ``nnx-lint check`` decides
it; in the isolated mode, for untrusted code, none is read: with ``--nnx-isolated=y``, with
``NNX_LINT_ISOLATED=1``, or when pylint itself reads no configuration file
(``--rcfile=/dev/null``) and ``--nnx-config`` names no trusted table; pylint's own ``--disable``/``--enable`` then narrow further, so every message is
enabled by default in pylint and the file's selection is what turns advisories on.
Syntax errors are pylint's own ``syntax-error`` (E0001), so NNX002 never shows here.

A configuration nnx-lint cannot use (invalid TOML, an unknown key or code, a
``--nnx-config`` file without ``[tool.nnx-lint]``) is one ``nnx-config-error`` (E9000)
message naming the file and the key, on line 1 of the first module it applies to; the
modules under it are not analysed. pylint's F0002 crash report on every module, which the
VS Code extension shows in every file, never comes from it.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pylint.checkers import BaseChecker
from pylint.constants import WarningScope
from pylint.interfaces import INFERENCE_FAILURE, UNDEFINED

from nnx_lint.engine.config import ConfigError
from nnx_lint.base.diagnostic import UNPROVEN, Diagnostic, analysed_whole, shown
from nnx_lint.engine.eager import load_lint_path
from nnx_lint.base import bounds
from nnx_lint.engine.walk import _linter_diagnostic, lint_module, newer_than_target
from nnx_lint.base.escaping import printable
from nnx_lint.engine.file_config import plugin_rules, settings_for_file
from nnx_lint.base.noqa import apply_noqa
from nnx_lint.analysis.prefilter import mentions_nnx
from nnx_lint.analysis.project import module_name_for, shared_project
from nnx_lint.engine.registry import all_rules
from nnx_lint.analysis.rule import Rule
from nnx_lint.engine.unused_noqa import unused_noqa

if TYPE_CHECKING:
    from astroid import nodes
    from pylint.lint import PyLinter

# Now, while the linted code's directory is not yet on sys.path (see nnx_lint.engine.eager).
load_lint_path()

_CATEGORY = {"raises": "E", "silent": "W", "linter": "E", "advisory": "C"}


def pylint_message_id(rule: type[Rule]) -> str:
    """``NNX201`` -> ``E9201``: checker id ``92`` (9 + family), message ``01``."""
    return f"{_CATEGORY[rule.kind]}9{rule.code[3:]}"


#: The message for a configuration nnx-lint cannot use, on the first family checker
#: (checker id ``90``: no rule has the code NNX000).
CONFIG_ERROR_ID = "E9000"
CONFIG_ERROR_SYMBOL = "nnx-config-error"

# The engine's results for the module pylint is visiting, shared by the family checkers.
_RESULTS: dict[int, list[Diagnostic]] = {}
# A configuration error to report on the module pylint is visiting (its id -> the message).
_CONFIG_ERRORS: dict[int, str] = {}
# The configuration errors already reported in this process: each is reported once.
_REPORTED_CONFIG_ERRORS: set[str] = set()


def _diagnostics_for(linter: PyLinter, module: nodes.Module) -> list[Diagnostic]:
    key = id(module)
    if key not in _RESULTS:
        _RESULTS.clear()  # one module at a time: keep memory flat on large runs
        _CONFIG_ERRORS.clear()
        try:
            _RESULTS[key] = _lint(linter, module)
        except ConfigError as exc:
            _RESULTS[key] = []
            message = printable(str(exc))  # it may quote the analysed repository's pyproject.toml
            if message not in _REPORTED_CONFIG_ERRORS:
                _REPORTED_CONFIG_ERRORS.add(message)
                _CONFIG_ERRORS[key] = message
    return _RESULTS[key]


def _lint(linter: PyLinter, module: nodes.Module) -> list[Diagnostic]:
    path = module.file or module.name
    config = linter.config.nnx_config if hasattr(linter.config, "nnx_config") else None
    # Isolated: asked for (`--nnx-isolated=y`, NNX_LINT_ISOLATED=1 in settings_for_file), or pylint
    # itself reads no configuration file (`--rcfile=/dev/null`) and no trusted table is named.
    isolated = bool(getattr(linter.config, "nnx_isolated", False)) or (config is None and _no_rcfile())
    settings = settings_for_file(Path(path), Path(config) if config else None, isolated)
    # NNX002 here is only syntax newer than the target version: pylint parsed the file.
    rules = [r for r in plugin_rules(settings, Path(path), also=("NNX002",))
             if linter.is_message_enabled(pylint_message_id(r))]
    if not rules:
        return []  # excluded, or no NNX message enabled: no analysis at all
    source = module.file_bytes
    try:
        if source is None and module.file:
            source = bounds.read_bounded(module.file, bounds.LIMITS.source_bytes)
        if isinstance(source, bytes):
            bounds.check_bytes(source, bounds.LIMITS.source_bytes)
            text = source.decode(module.file_encoding or "utf-8", errors="replace")
        else:
            text = source or ""
        # pylint built the tree already; the budget still decides, as in the other front-ends.
        bounds.check_source(text)
    except bounds.ParseFailure as failure:
        return [_linter_diagnostic(failure.code, failure.message, path, failure.line, failure.column)]
    package_root = module_name_for(Path(path))[1] if module.file else Path.cwd()
    project = shared_project(settings.analysis_roots())  # the CLI's roots
    project.start_file(path, package_root)
    if not mentions_nnx(text):
        return []
    diagnostics = lint_module(module, path, rules, project)
    if any(rule.code == "NNX002" for rule in rules):
        diagnostics = newer_than_target(text, path, settings.target_version) + diagnostics
    if analysed_whole(diagnostics):  # on a file not analysed whole every noqa would look unused
        diagnostics += unused_noqa(diagnostics, text, rules, path)
    strict = settings.strict or bool(getattr(linter.config, "nnx_strict", False))
    return shown(apply_noqa(diagnostics, text), strict)


def _no_rcfile(arguments: list[str] | None = None) -> bool:
    """Whether pylint's command line makes it read no configuration file: the last ``--rcfile``
    names the null device (pylint takes ``--rcfile`` out of its options before plugins see them,
    so it is read where pylint read it, as the flake8 plugin reads ``--isolated``).

    >>> _no_rcfile(["--rcfile=/dev/null", "m.py"]), _no_rcfile(["--rcfile", "pylintrc"]), _no_rcfile([])
    (True, False, False)
    """
    arguments = sys.argv[1:] if arguments is None else arguments
    rcfile = None
    for index, argument in enumerate(arguments):
        if argument.startswith("--rcfile="):
            rcfile = argument.partition("=")[2]
        elif argument == "--rcfile" and index + 1 < len(arguments):
            rcfile = arguments[index + 1]
    return rcfile is not None and os.path.realpath(rcfile) == os.path.realpath(os.devnull)


class _FamilyChecker(BaseChecker):
    """Reports one NNX family's diagnostics (pylint wants one checker id per checker)."""

    name = "nnx"
    family: str = ""

    def visit_module(self, node: nodes.Module) -> None:
        diagnostics = _diagnostics_for(self.linter, node)
        if CONFIG_ERROR_ID in self.msgs and id(node) in _CONFIG_ERRORS:
            self.add_message(CONFIG_ERROR_SYMBOL, line=1, col_offset=0, args=(_CONFIG_ERRORS[id(node)],))
        for diagnostic in diagnostics:
            if diagnostic.code.startswith(self.family):
                self.add_message(
                    diagnostic.symbol,
                    line=diagnostic.line,
                    col_offset=diagnostic.column - 1,
                    end_lineno=diagnostic.end_line,
                    end_col_offset=diagnostic.end_column - 1,
                    args=(diagnostic.code, printable(diagnostic.message)),  # analysed text, escaped
                    # An unproven finding (audit mode) hangs on a value the analysis could not resolve.
                    confidence=INFERENCE_FAILURE if diagnostic.proof == UNPROVEN else UNDEFINED,
                )


#: pylint options, registered once (on the first family checker: every checker is `nnx`).
_OPTIONS = (
    (
        "nnx-config",
        {"default": None, "type": "string", "metavar": "<pyproject.toml>",
         "help": "read [tool.nnx-lint] from this pyproject.toml instead of each module's nearest one"},
    ),
    (
        "nnx-isolated",
        {"default": False, "type": "yn", "metavar": "<y or n>",
         "help": "read no [tool.nnx-lint] at all, as `nnx-lint check --isolated` (for untrusted code; also "
                 "implied by --rcfile=/dev/null without --nnx-config)"},
    ),
    (
        "nnx-strict",
        {"default": False, "type": "yn", "metavar": "<y or n>",
         "help": "audit mode: report unproven NNX diagnostics (confidence INFERENCE_FAILURE) where the "
                 "analysis cannot resolve a value a finding hangs on"},
    ),
)


def _family_checkers() -> list[type[_FamilyChecker]]:
    families: dict[str, list[type[Rule]]] = {}
    for rule in all_rules():
        families.setdefault(rule.code[:4], []).append(rule)
    checkers = []
    for index, (family, rules) in enumerate(sorted(families.items())):
        msgs = {
            pylint_message_id(rule): (
                "%s %s",
                rule.symbol,
                (rule.__doc__ or rule.symbol).strip().splitlines()[0],
                # Line-scoped: positions come from the engine, not from a pylint node.
                # On by default: the [tool.nnx-lint] selection decides (advisories are off there).
                {"default_enabled": True, "scope": WarningScope.LINE},
            )
            for rule in rules
        }
        options = _OPTIONS if index == 0 else ()
        if index == 0:
            msgs[CONFIG_ERROR_ID] = (
                "%s", CONFIG_ERROR_SYMBOL,
                "The [tool.nnx-lint] configuration that applies to the module cannot be used "
                "(invalid TOML, an unknown key or code): nnx-lint analysed nothing under it.",
                {"default_enabled": True, "scope": WarningScope.LINE},
            )
        checkers.append(
            type(f"NNX{family[3]}Checker", (_FamilyChecker,), {"family": family, "msgs": msgs, "options": options})
        )
    return checkers


def register(linter: PyLinter) -> None:
    """pylint's plugin entry point."""
    for checker in _family_checkers():
        linter.register_checker(checker(linter))
    _escape_what_pylint_prints()


def _escape_what_pylint_prints() -> None:
    """Make pylint's text reporters print file and module names escaped.

    pylint prints each message's path, module (``************* Module a##[error]x``) and object
    itself, raw: a committed ``a##[error]x.py`` would put a workflow command that GitHub and
    Azure obey anywhere in a line into the CI log. The text reporters' ``handle_message``
    gets a copy with those fields through nnx-lint's escaping for plain text; text that needs
    no escaping is unchanged. Wrapped once per process."""
    import copy

    from pylint.reporters.text import ColorizedTextReporter, TextReporter

    from nnx_lint.base.escaping import line_start_path

    for reporter in (TextReporter, ColorizedTextReporter):
        original = reporter.__dict__["handle_message"]
        if getattr(original, "escapes_analysed_text", False):
            continue

        def handle_message(self, msg, original=original):  # noqa: ANN001 - pylint's signature
            shown = copy.copy(msg)  # the colorized reporter edits what it gets; the caller's stays as it was
            shown.path, shown.abspath = line_start_path(msg.path), printable(msg.abspath)
            shown.module, shown.obj = printable(msg.module), printable(msg.obj)
            original(self, shown)

        handle_message.escapes_analysed_text = True  # type: ignore[attr-defined]
        reporter.handle_message = handle_message
