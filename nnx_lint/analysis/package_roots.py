"""Where a project's importable packages live: the roots cross-file analysis searches.

A test in ``tests/`` that does ``from pkg.models import Policy`` needs ``Policy``'s
class to judge ``nnx.grad(loss)(model)``. With a ``src/`` layout, ``pkg`` lives under
``src/``, not at the project root, and without that root every cross-file fact about
the package is lost. The roots are, in order:

1. the ``src = [...]`` setting of ``[tool.nnx-lint]`` (as Ruff's ``src``), when given;
   otherwise the project root and its ``src/`` directory when it exists (Ruff's default);
2. the package directories the build configuration declares: setuptools
   ``package-dir`` and ``packages.find.where`` (``pyproject.toml`` or ``setup.cfg``),
   Poetry ``packages = [{include, from}]``, and Hatch's wheel ``packages``;
3. the packages installed from inside the project (a monorepo's ``libs/core/`` with its own
   ``pyproject.toml``, ``setup.cfg`` or ``setup.py``, up to :data:`NESTED_PACKAGE_DEPTH`
   directories down): each one's directory, its ``src/`` and its ``setup.cfg`` package
   directories, after the project's own, so a base class defined there (``from core.base
   import Base``) is known to the subclasses elsewhere. Not with a configured ``src``.

Build files are read as data; ``setup.py`` is never executed, so a package directory
declared only there is not found (configure ``src`` instead).
"""
from __future__ import annotations

import importlib.machinery
import json
import os
from pathlib import Path

# typing only for type checkers: this module is on the cached one-file check's start-up path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def source_roots(project_root: Path, configured: list[str] | None, pyproject: dict[str, Any]) -> list[Path]:
    """The directories under which the project's top-level packages are found.

    ``configured`` is ``[tool.nnx-lint] src`` (paths relative to ``project_root``);
    ``pyproject`` is the whole parsed ``pyproject.toml`` (``{}`` when there is none).
    Only existing directories are returned, resolved, in that order, without duplicates,
    and only those inside the project root once resolved: the configuration and the
    symlinks are the analysed repository's, and a committed ``src -> /`` (or ``src =
    ["/"]``) must not make a run read the whole file system.
    """
    if configured is not None:
        candidates = [project_root / entry for entry in configured]
    else:
        candidates = [project_root, project_root / "src"]
    candidates += [project_root / entry for entry in _declared_package_dirs(pyproject)]
    candidates += [project_root / entry for entry in _setup_cfg_package_dirs(project_root / "setup.cfg")]
    if configured is None:
        for package in _nested_packages(project_root):
            candidates += [package, package / "src"]
            candidates += [package / entry for entry in _setup_cfg_package_dirs(package / "setup.cfg")]
    roots: list[Path] = []
    try:
        inside = project_root.resolve()
    except (OSError, RuntimeError):
        return roots
    for candidate in candidates:
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError):  # a symlink loop: not a root
            continue
        if resolved.is_dir() and resolved not in roots and resolved.is_relative_to(inside):
            roots.append(resolved)
    return roots


#: How far below the project root a nested package's build file is looked for.
NESTED_PACKAGE_DEPTH = 3
#: At most this many nested packages become roots (a repository of hundreds of examples,
#: each with its own ``setup.py``, is not a monorepo of libraries).
MAX_NESTED_PACKAGES = 16
#: At most this many directories are listed looking for them.
_MAX_SCANNED = 2_000
_BUILD_FILES = ("pyproject.toml", "setup.cfg", "setup.py")
# Directories never searched for nested packages (kept in step with the run's default excludes).
_NOT_SEARCHED = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", ".env", "env", "__pycache__", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", ".tox", ".nox", ".nnx_lint_cache", "build", "dist", "node_modules", "site-packages",
})


def _nested_packages(project_root: Path) -> list[Path]:
    """Directories below ``project_root`` (not itself) holding a build file, breadth first,
    sorted, without following symlinked directories."""
    found: list[Path] = []
    level, scanned = [project_root], 0
    for _ in range(NESTED_PACKAGE_DEPTH):
        following: list[Path] = []
        for directory in level:
            scanned += 1
            if scanned > _MAX_SCANNED:
                return found  # a run started in a huge tree (a home directory): what was found so far
            try:
                with os.scandir(directory) as entries:
                    children = sorted(entry.path for entry in entries
                                      if entry.is_dir(follow_symlinks=False) and entry.name not in _NOT_SEARCHED
                                      and not entry.name.startswith(".") and not entry.name.endswith(".egg-info"))
            except OSError:
                continue
            for child in children:
                path = Path(child)
                if any((path / name).is_file() for name in _BUILD_FILES):
                    found.append(path)
                    if len(found) > MAX_NESTED_PACKAGES:
                        return []
                following.append(path)
        level = following
    return found


def _table(data: Any, *keys: str) -> dict[str, Any]:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def _declared_package_dirs(pyproject: dict[str, Any]) -> list[str]:
    """Package directories from setuptools, Poetry and Hatch settings in ``pyproject.toml``.

    >>> _declared_package_dirs({"tool": {"setuptools": {"package-dir": {"": "lib"}}}})
    ['lib']
    >>> _declared_package_dirs({"tool": {"poetry": {"packages": [{"include": "pkg", "from": "src"}]}}})
    ['src']
    >>> _declared_package_dirs({"tool": {"hatch": {"build": {"targets": {"wheel": {"packages": ["src/pkg"]}}}}}})
    ['src']
    """
    found: list[str] = []
    setuptools = _table(pyproject, "tool", "setuptools")
    package_dir = setuptools.get("package-dir")
    if isinstance(package_dir, dict):
        # {"": "src"} roots every package there; {"pkg": "lib/pkg"} puts one package's parent in play.
        for package, directory in package_dir.items():
            if isinstance(directory, str) and isinstance(package, str):
                found.append(directory if not package else str(Path(directory).parent))
    found += _strings(_table(setuptools, "packages", "find").get("where"))
    for entry in _table(pyproject, "tool", "poetry").get("packages") or []:
        if isinstance(entry, dict) and isinstance(entry.get("from"), str):
            found.append(entry["from"])
    for package in _strings(_table(pyproject, "tool", "hatch", "build", "targets", "wheel").get("packages")):
        found.append(str(Path(package).parent))
    return found


def _setup_cfg_package_dirs(path: Path) -> list[str]:
    """``[options] package_dir`` (``=src`` or ``pkg = lib/pkg`` lines) and ``[options.packages.find] where``."""
    if not path.is_file():
        return []
    import configparser  # only where a setup.cfg is read (start-up: the plugins load it up front)

    from nnx_lint.base import bounds

    parser = configparser.ConfigParser(interpolation=None)
    try:
        data = bounds.read_bounded(path, bounds.LIMITS.source_bytes)
        if len(data) > bounds.LIMITS.source_bytes:
            return []  # a build file of megabytes is not one to take package directories from
        parser.read_string(data.decode("utf-8", errors="replace"))
    except (bounds.ParseFailure, configparser.Error):
        return []
    found: list[str] = []
    for line in parser.get("options", "package_dir", fallback="").splitlines():
        package, separator, directory = line.partition("=")
        if separator and directory.strip():
            found.append(directory.strip() if not package.strip() else str(Path(directory.strip()).parent))
    where = parser.get("options.packages.find", "where", fallback="").split()
    return found + where


#: How many directories without ``__init__.py`` a file's package may have between it and a
#: regular package above (``tunix/sft/`` inside ``tunix/``): namespace portions, as Python imports them.
MAX_NAMESPACE_GAP = 2


def module_name_for(path: Path) -> tuple[str, Path]:
    """The dotted module name of ``path`` and the root directory it is relative to.

    Walks up through packages (directories with ``__init__.py``), and through a namespace
    portion inside a regular package: google/tunix's ``tunix/sft/`` has no ``__init__.py``
    but ``tunix/`` has, so ``tunix/sft/peft_trainer.py`` is ``tunix.sft.peft_trainer``, the
    name its callers import (Python finds it the same way).
    """
    path = path.resolve()
    parts = [path.stem] if path.stem != "__init__" else []
    directory = path.parent
    while True:
        while (directory / "__init__.py").exists() and directory.parent != directory:
            parts.insert(0, directory.name)
            directory = directory.parent
        gap = _namespace_gap(directory)
        if not gap:
            break
        parts[0:0] = [portion.name for portion in gap]
        directory = gap[0].parent
    return ".".join(parts) or path.stem, directory


def _namespace_gap(directory: Path) -> list[Path]:
    """``directory`` and the directories above it without ``__init__.py`` (at most
    :data:`MAX_NAMESPACE_GAP`, outermost first) when a regular package lies just above them;
    empty otherwise."""
    gap: list[Path] = []
    while len(gap) < MAX_NAMESPACE_GAP and directory.parent != directory and directory.name.isidentifier():
        gap.insert(0, directory)
        if (directory.parent / "__init__.py").exists():
            return gap
        directory = directory.parent
    return []


def is_searchable(module_name: str) -> bool:
    """Whether ``module_name`` could be a project module: a dotted identifier outside the
    packages nnx-lint never reads (flax's own checkout is never read as "the project")."""
    from nnx_lint.flax_table.nnx_api import EXTERNAL_PACKAGES

    return (bool(module_name) and all(part.isidentifier() for part in module_name.split("."))
            and module_name.split(".")[0] not in EXTERNAL_PACKAGES)


#: The cache key of a module search: "which file does ``import name`` find from this root?"
MODULE_SEARCH_KEY = "nnx-lint:module:"


def module_search_key(first_root: Path | None, module_name: str) -> str:
    """The dependency key that stands for a module search (see :func:`module_search_result`).

    A module that was looked for and *not* found is a dependency too: when it appears, an
    analysis that ran without it is stale.
    """
    return MODULE_SEARCH_KEY + json.dumps([str(first_root) if first_root else "", module_name])


def module_search_result(key: str, run_roots: list[Path] | list[str], listing: DirectoryListing | None = None) -> str:
    """The value of a :func:`module_search_key` dependency now: the file found, or ``""``.
    A run checking many such keys passes one ``listing``, so each directory is read once."""
    first_root, module_name = json.loads(key[len(MODULE_SEARCH_KEY):])
    # Strings, not Paths: a warm run asks this thousands of times.
    roots = ([first_root] if first_root else []) + [root for root in map(str, run_roots) if root != first_root]
    found = find_module_file(module_name, roots, listing)
    return str(found) if found else ""


class DirectoryListing:
    """Directory contents, each directory read once: a warm run checks thousands of module
    searches (most for names that are not the project's), and a set lookup per path part
    is far cheaper than a ``stat`` per candidate. Valid for one run: files change between runs."""

    def __init__(self) -> None:
        self._names: dict[str, frozenset[str]] = {}

    def names(self, directory: str) -> frozenset[str]:
        """The entries of ``directory`` (none when it cannot be read)."""
        found = self._names.get(directory)
        if found is None:
            try:
                found = frozenset(os.listdir(directory))
            except OSError:
                found = frozenset()
            self._names[directory] = found
        return found

    def has(self, directory: str, name: str) -> bool:
        """Whether ``directory`` has an entry ``name`` (what FileFinder's directory cache answers)."""
        return name in self.names(directory)


class _NoListing:
    """The file system asked directly: every entry may exist, ``os.path.isfile`` decides."""

    @staticmethod
    def has(directory: str, name: str) -> bool:
        return True


#: The suffixes CPython's FileFinder tries, in its order (``_get_supported_file_loaders``:
#: extension modules, then source, then bytecode). Only a ``.py`` file is read; a name that
#: Python would take from an extension or a ``.pyc`` is opaque, never replaced by another file.
_SUFFIXES = (*importlib.machinery.EXTENSION_SUFFIXES, *importlib.machinery.SOURCE_SUFFIXES,
             *importlib.machinery.BYTECODE_SUFFIXES)


def _find_on_path(name: str, search_path: list[str], listing) -> tuple[str, object]:
    """What ``import`` finds for the last part ``name`` of a module name on ``search_path``
    (``sys.path`` for a top-level name, the parent's ``__path__`` otherwise), as CPython 3.10-3.13
    does it: ``PathFinder`` asks each entry's ``FileFinder.find_spec`` in order, and the first
    entry with a regular package or a module wins; a directory without ``__init__`` is a
    namespace portion, kept while the search goes on, and only when no entry has a package or
    a module do the portions make a namespace package.

    ``FileFinder.find_spec`` (Lib/importlib/_bootstrap_external.py) checks, in one entry:
    first the directory ``name`` with ``__init__`` and a suffix (a regular package), then
    ``name`` with a suffix (a module), and only then the directory alone (a namespace portion).
    So with ``models/__init__.py`` beside ``models.py`` Python imports the package, and with a
    bare ``models/`` beside ``models.py`` it imports the module.

    Returns ``("package", (init file, directory))``, ``("module", file)``, ``("namespace",
    portions)`` or ``("missing", None)``.
    """
    portions: list[str] = []
    for entry in search_path:
        base = os.path.join(entry, name)
        if listing.has(entry, name):
            for suffix in _SUFFIXES:
                init = os.path.join(base, "__init__" + suffix)
                if os.path.isfile(init):
                    return "package", (init, base)
            if os.path.isdir(base):
                portions.append(base)
        for suffix in _SUFFIXES:
            module = base + suffix
            if listing.has(entry, name + suffix) and os.path.isfile(module):
                return "module", module
    return ("namespace", portions) if portions else ("missing", None)


def find_module_file(module_name: str, roots: list[Path] | list[str], listing: DirectoryListing | None = None) -> Path | None:
    """The source file ``import module_name`` finds with ``roots`` (in order) as ``sys.path``,
    resolved (:func:`imported_file`); None for a name outside the project or a package
    nnx-lint never reads (flax, jax, ...).

    The one place that maps a module name to a project file: the project's module loader
    and the cache's dependency check both ask it, in every front-end. ``listing`` answers
    from directory listings read once.
    """
    if not is_searchable(module_name):
        return None
    return imported_file(module_name, roots, listing)


def imported_file(module_name: str, search_path: list[Path] | list[str], listing: DirectoryListing | None = None) -> Path | None:
    """The source file Python imports for the dotted ``module_name`` with ``search_path`` as
    ``sys.path``, resolved; None when it finds none, a namespace package (no file to read), or
    a module it would take from an extension or bytecode.

    It follows the import system part by part (:func:`_find_on_path`): ``a.b`` is looked for
    only in what ``import a`` found, a regular package's directory or a namespace package's
    portions, and not at all when ``a`` is a module. Only the file system is consulted,
    nothing is imported.
    """
    parts = module_name.split(".")
    if not all(part.isidentifier() for part in parts):
        return None
    probe = listing if listing is not None else _NoListing()
    entries = [os.fspath(entry) for entry in search_path]
    for index, part in enumerate(parts):
        kind, found = _find_on_path(part, entries, probe)
        last = index == len(parts) - 1
        if kind == "package":
            init, directory = found
            if last:
                return Path(os.path.realpath(init)) if init.endswith(".py") else None
            entries = [directory]
        elif kind == "module":
            # A module is not a package: `import models.sub` fails when `models` is `models.py`.
            return Path(os.path.realpath(found)) if last and found.endswith(".py") else None
        elif kind == "namespace" and not last:
            entries = found
        else:
            return None  # not found, or a namespace package (no file to read)
    return None
