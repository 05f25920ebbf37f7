"""The flake8 plugin: ``flake8 --select NNX``.

It reuses flake8's file reading but not its ``ast`` tree: the engine builds its own
astroid tree, and only for files that pass the cheap text pre-filter. Off-by-default
codes (NNX9xx) are registered with flake8's default-ignore, so ``--select NNX`` leaves
them off and ``--extend-select NNX9`` turns them on. ``# noqa`` is left to flake8.
Unparsable or undecodable files are flake8's own E999/E902, so NNX0xx never shows here.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nnx_lint
from nnx_lint.eager import load_lint_path
from nnx_lint.engine import lint_source
from nnx_lint.escaping import printable
from nnx_lint.prefilter import mentions_nnx
from nnx_lint.project import module_name_for, shared_project
from nnx_lint.registry import all_rules

# Now, before any linted code's directory can be on sys.path (see nnx_lint.eager).
load_lint_path()


class NNXFlake8Plugin:
    """flake8 tree plugin adapter around :func:`nnx_lint.engine.lint_source`."""

    name = "nnx-lint"
    version = nnx_lint.__version__

    def __init__(self, tree: Any, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.lines = lines

    @classmethod
    def add_options(cls, option_manager: Any) -> None:
        off = sorted({rule.code[:4] for rule in all_rules() if not rule.default_enabled})
        option_manager.extend_default_ignore(off)

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        text = "".join(self.lines)
        if not mentions_nnx(text):
            return
        path = Path(self.filename)
        module_name, package_root = module_name_for(path) if path.exists() else (path.stem, Path.cwd())
        project = shared_project([Path.cwd()])
        project.start_file(self.filename, package_root)
        rules = [rule for rule in all_rules() if not rule.engine_reported]
        for diagnostic in lint_source(
            text, self.filename, rules, project=project, module_name=module_name, apply_suppressions=False
        ):
            # printable(): the message may quote analysed text, which must not reach the terminal raw.
            yield diagnostic.line, diagnostic.column - 1, f"{diagnostic.code} {printable(diagnostic.message)}", type(self)
