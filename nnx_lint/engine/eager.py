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
from pathlib import Path

import nnx_lint
from nnx_lint.base.toml_data import TOML_PARSER
from nnx_lint.engine.registry import all_rules

#: The packages whose modules run while a file is linted: the layers under the front-ends and
#: their features (``core-layers`` in ``pyproject.toml``), and the rules' surface.
LINT_PATH_PACKAGES = ("base", "flax_table", "analysis", "engine")
LINT_PATH_MODULES = ("api",)

#: Modules and packages of those that only the command line uses: its run over a project
#: (file discovery, worker processes) and its result cache. Every other module is on the lint path
#: (``base.cache_store`` is: the callers' index in other files is kept in a signed file).
NOT_ON_THE_LINT_PATH = frozenset({"engine.runner", "engine.cache", "engine.workers", "engine.discovery"})

#: Standard-library modules that lint-time code imports inside functions (a test keeps this
#: list complete) or may import on its first file (the text pre-filter, noqa tokenizing).
STDLIB_IMPORTED_LATE = ("ast", "configparser", "copy", "hashlib", "json", "secrets", "tempfile", "textwrap",
                        "tokenize", "traceback", TOML_PARSER)


def lint_path_modules() -> list[str]:
    """The dotted names of nnx-lint's own modules that run while a file is linted."""
    found = [f"nnx_lint.{name}" for name in LINT_PATH_MODULES]
    for package in LINT_PATH_PACKAGES:
        found.append(f"nnx_lint.{package}")
        found += _submodules(f"nnx_lint.{package}", [str(Path(nnx_lint.__file__).parent / package)])
    return found


def _submodules(package: str, path: list[str]) -> list[str]:
    """The modules under ``package`` (recursively), read from its directory without importing it."""
    found = []
    for info in pkgutil.iter_modules(path, prefix=f"{package}."):
        if info.name.removeprefix("nnx_lint.") in NOT_ON_THE_LINT_PATH:
            continue
        found.append(info.name)
        if info.ispkg:
            found += _submodules(info.name, [str(Path(path[0]) / info.name.rpartition(".")[2])])
    return found


def load_lint_path() -> None:
    """Import every module a lint can reach: stdlib helpers, nnx-lint's services, ``checkers`` and each rule."""
    for name in STDLIB_IMPORTED_LATE:
        importlib.import_module(name)
    for name in lint_path_modules():
        importlib.import_module(name)
    all_rules()
