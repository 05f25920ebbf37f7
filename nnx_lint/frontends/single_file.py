"""Lint one (path, bytes) pair as if it were the file at ``path``: ``nnx-lint check -``.

Editors and ``--fix`` pipelines hand nnx-lint a buffer, not a file on disk. The path
(``--stdin-filename``) is used as the CLI would use the file's own path: for the
configuration (the nearest pyproject.toml), ``per-file-ignores``, ``exclude`` (with
``--force-exclude``), cross-file resolution relative to it, notebook handling (a
``.ipynb`` name), and the reported path. Nothing is cached and nothing is written.
"""
from __future__ import annotations

import sys
from pathlib import Path

from nnx_lint.engine.config import Settings
from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.engine.file_config import is_path_excluded, rules_for

#: The reported path when no ``--stdin-filename`` is given (Ruff's convention).
STDIN_DISPLAY = "-"


def lint_text(path: Path | None, data: bytes, settings: Settings) -> list[Diagnostic]:
    """The diagnostics ``nnx-lint check`` would report for ``path`` if it held ``data``.

    ``path`` None means an anonymous buffer (reported as ``-``, module ``stdin``).
    An excluded path gives nothing when ``settings.force_exclude`` is set.
    """
    from nnx_lint.engine.walk import lint_bytes
    from nnx_lint.analysis.project import forget_shared_projects, module_name_for, shared_project
    from nnx_lint.engine.runner import _display_path

    if path is not None and settings.force_exclude and is_path_excluded(settings, path):
        return []
    forget_shared_projects()  # the project's files may have changed since the last call
    where = path if path is not None else Path.cwd() / "stdin.py"
    display = _display_path(path) if path is not None else STDIN_DISPLAY
    module_name, package_root = module_name_for(where)
    project = shared_project(settings.analysis_roots())  # the roots a `check` run uses
    project.start_file(str(where), package_root)
    rules = rules_for(settings, where)
    return lint_bytes(data, display, rules, project=project, module_name=module_name,
                      target_version=settings.target_version, strict=settings.strict)


def read_stdin() -> bytes:
    """Standard input, as bytes (the engine decodes them as it decodes a file): at most one
    byte over the largest file nnx-lint analyses, so the engine reports an endless stream
    as over the limit (NNX004) instead of reading it until memory runs out."""
    from nnx_lint.base import bounds

    return sys.stdin.buffer.read(bounds.LIMITS.notebook_bytes + 1)
