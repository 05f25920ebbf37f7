"""The flake8 plugin: ``flake8 --select NNX``.

It reuses flake8's file reading but not its ``ast`` tree: the engine builds its own
astroid tree, and only for files that pass the cheap text pre-filter. Off-by-default
codes (NNX9xx) are registered with flake8's default-ignore, so ``--select NNX`` leaves
them off and ``--extend-select NNX9`` turns them on. ``# noqa`` is left to flake8.
Unparsable or undecodable files are flake8's own E999/E902, so NNX001/NNX002 never show
here; a rule crash (NNX003) and a file over the analysis budget (NNX004) do, as in the CLI.

flake8 runs every plugin on every file whatever ``--select`` says and filters afterwards,
so :meth:`NNXFlake8Plugin.parse_options` asks flake8's own decision engine which NNX codes
the options select: with none (``flake8 --select E9``) no analysis runs at all, and with
some (``--select NNX2``) only those rules run.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nnx_lint


class NNXFlake8Plugin:
    """flake8 tree plugin adapter around :func:`nnx_lint.engine.lint_source`."""

    name = "nnx-lint"
    version = nnx_lint.__version__
    #: Codes flake8's options select, set by :meth:`parse_options` (None: not told, run all).
    selected_codes: frozenset[str] | None = None

    def __init__(self, tree: Any, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.lines = lines

    @classmethod
    def add_options(cls, option_manager: Any) -> None:
        from nnx_lint.registry import all_rules

        off = sorted({rule.code[:4] for rule in all_rules() if not rule.default_enabled})
        option_manager.extend_default_ignore(off)

    @classmethod
    def parse_options(cls, options: Any) -> None:
        """flake8 hands over its parsed options: remember which NNX codes they select."""
        cls.selected_codes = _selected_codes(options)

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        rules = _rules_to_run(self.selected_codes)
        if not rules:
            return  # no NNX code selected (`flake8 --select E9`): no analysis at all
        text = "".join(self.lines)
        from nnx_lint.engine import lint_source
        from nnx_lint.prefilter import mentions_nnx

        if not mentions_nnx(text):
            return
        from nnx_lint.project import module_name_for, shared_project

        path = Path(self.filename)
        module_name, package_root = module_name_for(path) if path.exists() else (path.stem, Path.cwd())
        project = shared_project([Path.cwd()])
        project.start_file(self.filename, package_root)
        for diagnostic in lint_source(
            text, self.filename, rules, project=project, module_name=module_name, apply_suppressions=False
        ):
            yield diagnostic.line, diagnostic.column - 1, f"{diagnostic.code} {diagnostic.message}", type(self)


#: Engine-reported codes that can occur on a file flake8 could parse.
_ENGINE_CODES_IN_FLAKE8 = ("NNX003", "NNX004")


def _selected_codes(options: Any) -> frozenset[str] | None:
    """The NNX codes flake8 would report under ``options`` (None if it cannot tell)."""
    from nnx_lint.registry import all_rules

    try:
        from flake8.style_guide import Decision, DecisionEngine

        engine = DecisionEngine(options)
        return frozenset(r.code for r in all_rules() if engine.decision_for(r.code) is Decision.Selected)
    except Exception:  # another flake8 version: run every rule and let flake8 filter
        return None


def _rules_to_run(selected: frozenset[str] | None) -> list:
    from nnx_lint.registry import all_rules

    return [
        rule for rule in all_rules()
        if (not rule.engine_reported or rule.code in _ENGINE_CODES_IN_FLAKE8)
        and (selected is None or rule.code in selected)
    ]
