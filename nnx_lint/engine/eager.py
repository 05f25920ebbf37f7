"""Load, up front, everything the pylint and flake8 plugins run while linting.

pylint puts the linted file's directory first on ``sys.path`` while it checks a file, and
``python -m flake8`` has the working directory there. A module that nnx-lint imported only
when the first file was linted would then be looked up there first: a ``hashlib.py`` or a
``checkers/`` package committed next to the linted code would run. So the plugins call
:func:`load_lint_path` when they are loaded, before any linted directory is on the path,
and a lint afterwards only finds modules in ``sys.modules``. Importing a submodule of an
already-loaded package (``nnx_lint.x``, ``astroid.x``) is safe anyway: it is looked up
in the package's own directory, never on ``sys.path``.
"""
from __future__ import annotations

import importlib
import pkgutil

import nnx_lint
from nnx_lint.engine.registry import all_rules

#: Modules of nnx-lint that only the command line uses: the front-ends and what runs after
#: the lint (result cache, reporters, confirmation). Every other module is on the lint path.
NOT_ON_THE_LINT_PATH = frozenset({
    "cli", "pylint", "flake8", "runner", "reporters", "docs", "confirmation", "sandbox", "cache", "cache_store",
    "scaffold",
})

#: Standard-library modules that lint-time code imports inside functions (a test keeps this
#: list complete) or may import on its first file (the text pre-filter, noqa tokenizing).
STDLIB_IMPORTED_LATE = ("ast", "copy", "hashlib", "json", "textwrap", "tokenize", "traceback")


def lint_path_modules() -> list[str]:
    """The dotted names of nnx-lint's own modules that run while a file is linted."""
    return [
        info.name for info in pkgutil.iter_modules(nnx_lint.__path__, prefix="nnx_lint.")
        if info.name.rpartition(".")[2] not in NOT_ON_THE_LINT_PATH
    ]


def load_lint_path() -> None:
    """Import every module a lint can reach: stdlib helpers, nnx-lint's services, ``checkers`` and each rule."""
    for name in STDLIB_IMPORTED_LATE:
        importlib.import_module(name)
    for name in lint_path_modules():
        importlib.import_module(name)
    all_rules()
