"""Where a project's importable packages live: the roots cross-file analysis searches.

A test in ``tests/`` that does ``from pkg.models import Policy`` needs ``Policy``'s
class to judge ``nnx.grad(loss)(model)``. With a ``src/`` layout, ``pkg`` lives under
``src/``, not at the project root, and without that root every cross-file fact about
the package is lost. The roots are, in order:

1. the ``src = [...]`` setting of ``[tool.nnx-lint]`` (as Ruff's ``src``), when given;
   otherwise the project root and its ``src/`` directory when it exists (Ruff's default);
2. the package directories the build configuration declares: setuptools
   ``package-dir`` and ``packages.find.where`` (``pyproject.toml`` or ``setup.cfg``),
   Poetry ``packages = [{include, from}]``, and Hatch's wheel ``packages``.

Build files are read as data; ``setup.py`` is never executed, so a package directory
declared only there is not found (configure ``src`` instead).
"""
from __future__ import annotations

import configparser
from pathlib import Path
from typing import Any


def source_roots(project_root: Path, configured: list[str] | None, pyproject: dict[str, Any]) -> list[Path]:
    """The directories under which the project's top-level packages are found.

    ``configured`` is ``[tool.nnx-lint] src`` (paths relative to ``project_root``);
    ``pyproject`` is the whole parsed ``pyproject.toml`` (``{}`` when there is none).
    Only existing directories are returned, resolved, in that order, without duplicates.
    """
    if configured is not None:
        candidates = [project_root / entry for entry in configured]
    else:
        candidates = [project_root, project_root / "src"]
    candidates += [project_root / entry for entry in _declared_package_dirs(pyproject)]
    candidates += [project_root / entry for entry in _setup_cfg_package_dirs(project_root / "setup.cfg")]
    roots: list[Path] = []
    for candidate in candidates:
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError):  # a symlink loop: not a root
            continue
        if resolved.is_dir() and resolved not in roots:
            roots.append(resolved)
    return roots


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
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, configparser.Error):
        return []
    found: list[str] = []
    for line in parser.get("options", "package_dir", fallback="").splitlines():
        package, separator, directory = line.partition("=")
        if separator and directory.strip():
            found.append(directory.strip() if not package.strip() else str(Path(directory.strip()).parent))
    where = parser.get("options.packages.find", "where", fallback="").split()
    return found + where


def module_name_for(path: Path) -> tuple[str, Path]:
    """The dotted module name of ``path`` and the root directory it is relative to.

    Walks up through packages (directories with ``__init__.py``).
    """
    path = path.resolve()
    parts = [path.stem] if path.stem != "__init__" else []
    directory = path.parent
    while (directory / "__init__.py").exists() and directory.parent != directory:
        parts.insert(0, directory.name)
        directory = directory.parent
    return ".".join(parts) or path.stem, directory


def find_module_file(module_name: str, roots: list[Path]) -> Path | None:
    """The source file ``import module_name`` finds under ``roots`` (in order), resolved;
    None for a name outside the project or a package nnx-lint never reads (flax, jax, ...).

    The one place that maps a module name to a project file: the project's module loader
    and the pre-filter both ask it. Only the file system is consulted, nothing is imported.
    """
    from nnx_lint.nnx_api import EXTERNAL_PACKAGES

    if not module_name or not all(part.isidentifier() for part in module_name.split(".")):
        return None
    if module_name.split(".")[0] in EXTERNAL_PACKAGES:
        return None  # flax's own checkout is never read as "the project"
    relative = Path(*module_name.split("."))
    for root in roots:
        for candidate in (root / relative.with_suffix(".py"), root / relative / "__init__.py"):
            if candidate.is_file():
                return candidate.resolve()
    return None
