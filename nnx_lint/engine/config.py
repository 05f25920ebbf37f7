"""``[tool.nnx-lint]`` in the nearest ``pyproject.toml``; CLI flags override it.

Keys: ``select``, ``ignore``, ``extend-select``, ``extend-ignore`` (added to ``ignore``, as
in Ruff), ``exclude`` (globs), ``extend-exclude`` (more globs; the command line's
``--exclude`` replaces ``exclude`` but keeps these, as in Ruff), ``respect-gitignore``
(default true: directories are walked without what ``.gitignore`` files ignore),
``per-file-ignores`` (glob -> list of codes or prefixes; a glob starting with ``!`` applies
to the files it does *not* match, as in Ruff), ``src`` (the directories holding the
project's packages, see :mod:`nnx_lint.analysis.package_roots`), ``target-version`` (``"py311"``;
unset, the lower bound of ``[project] requires-python``, see :mod:`nnx_lint.base.syntax.target`),
``flax-version`` (the oldest flax the project runs on, which decides the pins ``--fix``
may add; see :mod:`nnx_lint.fixes.flax_target`), ``line-length`` (the width a pinned call
must fit, else it is wrapped; unset, Ruff's, black's, flake8's or pylint's, see
:mod:`nnx_lint.fixes.line_length`), and ``strict`` (audit mode: unproven diagnostics where the
analysis could not resolve a value a finding hangs on). Unknown keys and wrong types are a
:class:`ConfigError` (the CLI exits 2), never silently ignored; so is a file named
explicitly (``--config``, ``--nnx-config``) that has no ``[tool.nnx-lint]`` table, which
would otherwise run the defaults and drop the project's own settings.
"""
from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from nnx_lint.analysis.package_roots import source_roots
from nnx_lint.base.toml_data import TomlError, parse_toml

#: Directories never descended into.
DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".venv", "venv", ".env", "env", "__pycache__", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".tox", ".nox", ".nnx_lint_cache", "build", "dist",
    "node_modules", "site-packages", "*.egg-info",
)

#: Version-control directories: never the project's code, whatever else holds.
VCS_DIRECTORIES = frozenset({".git", ".hg", ".svn"})


def default_excluded(name: str) -> bool:
    """Whether a directory named ``name`` is one of :data:`DEFAULT_EXCLUDES` (environments,
    caches, build output: untracked by nature; the walk still enters one that holds files
    git tracks, see :mod:`nnx_lint.engine.discovery.tracked`)."""
    return any(fnmatch.fnmatch(name, pattern) for pattern in DEFAULT_EXCLUDES)


_KNOWN_KEYS = {"select", "ignore", "extend-select", "extend-ignore", "exclude", "extend-exclude",
               "respect-gitignore", "per-file-ignores", "src", "target-version", "flax-version", "rule-url-base",
               "line-length", "strict"}


#: The widest ``line-length`` accepted (Ruff's bound).
MAXIMUM_LINE_LENGTH = 320


class ConfigError(Exception):
    """The configuration is invalid; the message says where and why."""


@dataclass
class Settings:
    """Effective settings for one run."""

    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    #: ``extend-exclude``: kept apart from ``exclude``, which ``--exclude`` replaces.
    extend_exclude: list[str] = field(default_factory=list)
    #: Skip what ``.gitignore`` files ignore when walking directories (:mod:`nnx_lint.engine.discovery`).
    respect_gitignore: bool = True
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    #: Directory holding the pyproject.toml the settings came from (globs are relative to it).
    root: Path = field(default_factory=Path.cwd)
    source: Path | None = None
    #: Where the project's top-level packages live (cross-file analysis searches these).
    source_roots: list[Path] = field(default_factory=list)
    #: The oldest Python the project supports, ``(3, 11)``: newer syntax is NNX002. None: no limit.
    target_version: tuple[int, int] | None = None
    #: ``flax-version``: the oldest flax the project runs on (None: read from its requirements).
    flax_version: str | None = None
    #: Where rule pages are published (``rule-url-base``); None: the pages shipped in the package.
    rule_url_base: str | None = None
    #: ``line-length``: the width pinned calls must fit (None: the project's other tools decide).
    line_length: int | None = None
    #: ``strict``: audit mode. Where a finding hangs on a value the analysis could not resolve,
    #: report an unproven diagnostic instead of staying silent (:func:`nnx_lint.base.diagnostic.shown`).
    strict: bool = False

    def analysis_roots(self) -> list[Path]:
        """Every root cross-file analysis searches: the package roots, the project root, the cwd.

        All three front-ends use this, so they resolve the same imports.
        """
        return list(dict.fromkeys([*self.source_roots, self.root.resolve(), Path.cwd().resolve()]))
    #: ``--force-exclude``: excludes apply to paths named on the command line too.
    force_exclude: bool = False

    def is_excluded(self, path: Path, is_dir: bool = False, defaults: bool = True) -> bool:
        """Whether ``path`` (a file or directory) matches a default (unless ``defaults`` is
        false) or configured exclude.

        The default excludes name directories only (:func:`default_excluded`).
        """
        name = path.name
        if defaults and is_dir and default_excluded(name):
            return True
        if not self.exclude and not self.extend_exclude:
            return False
        relative = _relative_posix(path, self.root)
        for pattern in [*self.exclude, *self.extend_exclude]:
            pattern = pattern.rstrip("/")
            if fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch(relative, pattern):
                return True
            if relative == pattern or relative.startswith(pattern + "/"):
                return True
        return False

    def ignores_for(self, path: Path) -> list[str]:
        """Codes/prefixes ignored for this file by ``per-file-ignores``.

        As in Ruff, a pattern matches the path relative to the project root or the file
        name, and a pattern starting with ``!`` is negated: its codes are ignored in every
        file it does *not* match (``"!src/*" = ["NNX9"]``: advisories only inside ``src``).
        """
        relative = _relative_posix(path, self.root)
        found: list[str] = []
        for pattern, codes in self.per_file_ignores.items():
            negated = pattern.startswith("!")
            glob = pattern[1:] if negated else pattern
            matches = fnmatch.fnmatch(relative, glob) or fnmatch.fnmatch(path.name, glob)
            if matches != negated:
                found.extend(codes)
        return found


def split_codes(values: list[str] | None) -> list[str] | None:
    """Rule selectors from repeatable, comma-separated options (``--select NNX1,NNX201``)."""
    if values is None:
        return None
    return [code.strip() for value in values for code in value.split(",") if code.strip()]


def _relative_posix(path: Path, root: Path) -> str:
    relative = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    if relative.startswith(".."):
        return path.as_posix()
    return PurePosixPath(*Path(relative).parts).as_posix()


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` that has ``[tool.nnx-lint]``.

    Falls back to the nearest ``pyproject.toml`` of any kind (it marks the project root).
    """
    from nnx_lint.base.bounds import LIMITS, ParseFailure, read_bounded

    start = Path(os.path.realpath(start))  # unlike Path.resolve, never raises on a symlink loop
    directory = start if start.is_dir() else start.parent
    nearest = None
    for candidate_dir in (directory, *directory.parents):
        candidate = candidate_dir / "pyproject.toml"
        if candidate.is_file():
            nearest = nearest or candidate
            try:
                if b"nnx-lint" in read_bounded(candidate, LIMITS.source_bytes):
                    return candidate
            except ParseFailure:
                continue
    return nearest


def _string_list(table: dict, key: str, where: str) -> list[str]:
    """``table[key]`` as a list of strings. A lone string is an error, as in Ruff: ``select = "NNX3"``
    is a list of one selector or a typo, and the configuration should say which."""
    value = table[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings, got {value!r}")
    return value


def _selector_list(table: dict, key: str, where: str) -> list[str]:
    """``table[key]`` as rule selectors (:func:`_string_list`), each one some rule's code or prefix: an
    unknown one names this file and key. The rules are not imported (their module names are read)."""
    from nnx_lint.engine.registry import UnknownSelector, check_selectors

    value = _string_list(table, key, where)
    try:
        check_selectors(value)
    except UnknownSelector as exc:
        raise ConfigError(f"{where}: `{key}`: {exc}") from None
    return value


def _flax_version(value: object, where: str) -> str:
    """``flax-version``: a flax release such as ``"0.12.6"``."""
    from nnx_lint.flax_table.nnx_api import version_key

    if not isinstance(value, str) or version_key(value) is None:
        raise ConfigError(f"{where}: `flax-version` must be a flax release such as \"0.12.6\", got {value!r}")
    return value.strip().split("+", 1)[0]


def _line_length(value: object, where: str) -> int:
    """``line-length``: a whole number of characters, as Ruff accepts it (1 to 320)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAXIMUM_LINE_LENGTH:
        raise ConfigError(f"{where}: `line-length` must be a whole number from 1 to {MAXIMUM_LINE_LENGTH}, "
                          f"got {value!r}")
    return value


def _read_toml(path: Path) -> dict:
    """The parsed TOML file; every way it can be unusable is a one-line ConfigError."""
    from nnx_lint.base.bounds import LIMITS, ParseFailure, read_bounded

    try:
        data = read_bounded(path, LIMITS.source_bytes)
    except ParseFailure as exc:
        raise ConfigError(f"{path}: {exc.message}") from None
    if len(data) > LIMITS.source_bytes:
        raise ConfigError(f"{path}: over {LIMITS.source_bytes // 2**20} MiB, not read")
    try:
        return parse_toml(data.decode("utf-8"), path)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
    except TomlError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def default_settings() -> Settings:
    """The settings without any configuration file (``--isolated``, or no pyproject.toml):
    every default rule, no excludes, the cwd as the project root."""
    return Settings(root=Path.cwd(), source_roots=source_roots(Path.cwd(), None, {}))


def load_settings(start: Path, config_file: Path | None = None) -> Settings:
    """Read ``[tool.nnx-lint]`` from ``config_file`` (which must have the table) or from the
    nearest pyproject.toml (which marks the project root even without one)."""
    path = config_file or find_pyproject(start)
    if path is None:
        return default_settings()
    data = _read_toml(path)
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: `tool` must be a table, got {type(tool).__name__}")
    if config_file is not None and "nnx-lint" not in tool:
        # Named explicitly, a file without the table would silently run the defaults instead
        # of the project's settings (and from another root, without its excludes).
        raise ConfigError(f"{path}: no [tool.nnx-lint] table; the configuration file must be a "
                          "pyproject.toml with one")
    table = tool.get("nnx-lint", {})
    where = f"{path} [tool.nnx-lint]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table, got {type(table).__name__}")
    unknown = set(table) - _KNOWN_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(_KNOWN_KEYS))}")
    settings = Settings(root=path.parent, source=path)
    if "select" in table:
        settings.select = _selector_list(table, "select", where)
    for key, attribute, read in (("ignore", "ignore", _selector_list),
                                 ("extend-select", "extend_select", _selector_list),
                                 ("exclude", "exclude", _string_list),
                                 ("extend-exclude", "extend_exclude", _string_list)):
        if key in table:
            setattr(settings, attribute, read(table, key, where))
    if "extend-ignore" in table:
        settings.ignore = settings.ignore + _selector_list(table, "extend-ignore", where)
    if "respect-gitignore" in table:
        if not isinstance(table["respect-gitignore"], bool):
            raise ConfigError(f"{where}: `respect-gitignore` must be true or false, got {table['respect-gitignore']!r}")
        settings.respect_gitignore = table["respect-gitignore"]
    if "per-file-ignores" in table:
        per_file = table["per-file-ignores"]
        if not isinstance(per_file, dict):
            raise ConfigError(f"{where}: `per-file-ignores` must be a table of glob = [codes]")
        settings.per_file_ignores = {glob: _selector_list(per_file, glob, f"{where} per-file-ignores") for glob in per_file}
    if "flax-version" in table:
        settings.flax_version = _flax_version(table["flax-version"], where)
    if "strict" in table:
        if not isinstance(table["strict"], bool):
            raise ConfigError(f"{where}: `strict` must be true or false, got {table['strict']!r}")
        settings.strict = table["strict"]
    if "rule-url-base" in table:
        if not isinstance(table["rule-url-base"], str) or not table["rule-url-base"]:
            raise ConfigError(f"{where}: `rule-url-base` must be a non-empty string (a URL prefix, or a template with {{code}})")
        settings.rule_url_base = table["rule-url-base"]
    if "line-length" in table:
        settings.line_length = _line_length(table["line-length"], where)
    configured_src = _string_list(table, "src", where) if "src" in table else None
    settings.source_roots = source_roots(path.parent, configured_src, data)
    settings.target_version = _target_version(table, data, where)
    return settings


def _target_version(table: dict, data: dict, where: str) -> tuple[int, int] | None:
    """``target-version``, else the lower bound of ``[project] requires-python`` (as Ruff)."""
    from nnx_lint.base.syntax.target import TARGET_VERSIONS, parse_target_version, requires_python_lower_bound

    if "target-version" in table:
        value = table["target-version"]
        version = parse_target_version(value) if isinstance(value, str) else None
        if version is None:
            raise ConfigError(f"{where}: `target-version` must be one of {', '.join(TARGET_VERSIONS)}, got {value!r}")
        return version
    project = data.get("project")
    requires = project.get("requires-python") if isinstance(project, dict) else None
    return requires_python_lower_bound(requires) if isinstance(requires, str) else None
