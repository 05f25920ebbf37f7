"""The configuration that applies to one file, resolved the way ``nnx-lint check`` does.

One place answers "is this file excluded?" and "which rules run on it?" for every
front-end: the CLI's discovery and ``--force-exclude``, ``--stdin-filename``, and the
flake8 and pylint plugins (which see one file at a time and find its nearest
``pyproject.toml`` themselves).

Every front-end has an isolated mode that reads no repository configuration, for untrusted
pull requests: the CLI's and flake8's ``--isolated``, the pylint plugin's ``--nnx-isolated=y``,
and for all of them (the language server has no command line) :data:`ISOLATED_VARIABLE`
set to ``1`` in the environment, which the analysed repository cannot set.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from nnx_lint.engine.config import ConfigError, Settings, default_settings, find_pyproject, load_settings
from nnx_lint.engine.discovery.tracked import skipped_by_default

#: ``NNX_LINT_ISOLATED=1``: every front-end runs isolated (:func:`isolated_by_environment`).
ISOLATED_VARIABLE = "NNX_LINT_ISOLATED"


def isolated_by_environment() -> bool:
    """Whether :data:`ISOLATED_VARIABLE` asks for the isolated mode (``1``, ``true``, ``yes``)."""
    return os.environ.get(ISOLATED_VARIABLE, "").strip().lower() in ("1", "true", "yes", "y", "on")


def isolated_settings() -> Settings:
    """The settings of the isolated mode: the defaults, the cwd as the project root (read once
    per working directory: the plugins ask for every file)."""
    return _isolated(str(Path.cwd()))


@lru_cache(maxsize=4)
def _isolated(cwd: str) -> Settings:
    return default_settings()


def selectors_for(settings: Settings, path: Path) -> tuple:
    """The (select, ignore, extend-select) selectors in force for ``path``: the run's
    selection plus the file's ``per-file-ignores``. Hashable: a cache key and an
    :func:`rules_for_selectors` argument."""
    return (
        tuple(settings.select) if settings.select is not None else None,
        tuple(settings.ignore) + tuple(settings.ignores_for(path)),
        tuple(settings.extend_select),
    )


@lru_cache(maxsize=64)
def rules_for_selectors(selectors: tuple) -> tuple:
    """The rule classes the selectors choose (resolved once per distinct selector set)."""
    from nnx_lint.engine.registry import select_rules

    select, ignore, extend = selectors
    return select_rules(list(select) if select is not None else None, ignore, extend)


def rules_for(settings: Settings, path: Path) -> tuple:
    """The rule classes that run on ``path`` under ``settings``."""
    return rules_for_selectors(selectors_for(settings, path))


def plugin_rules(settings: Settings, path: Path, also: tuple[str, ...] = ()) -> list:
    """The rules a flake8 or pylint plugin runs on ``path``: none for an excluded file
    (the plugins cannot tell a file named on their command line from one found in a
    directory, so they always exclude, like ``--force-exclude``); otherwise the file's
    selection without the NNX0xx file failures, which flake8 (E902/E999) and pylint
    (E0001, F0010) report their own way; ``also`` names the NNX0xx codes the front-end
    can still report (flake8: a rule crash and the analysis budget)."""
    from nnx_lint.base.noqa import UNUSED_NOQA_CODE

    if is_path_excluded(settings, path):
        return []
    return [rule for rule in rules_for(settings, path)
            if not rule.engine_reported or rule.code == UNUSED_NOQA_CODE or rule.code in also]


def is_path_excluded(settings: Settings, path: Path) -> bool:
    """Whether ``path`` or one of its directories below the project root is excluded.

    This is what ``--force-exclude`` applies to paths named explicitly (as pre-commit
    passes them) and what the plugins apply to every file: the default excludes
    (``.git``, ``build``, virtualenvs, ...: only where git tracks nothing,
    :func:`nnx_lint.engine.discovery.tracked.skipped_by_default`) and the configured
    ``exclude`` globs, matched against the file and against each directory between it and
    the project root.
    """
    absolute = Path(os.path.abspath(path))
    root = Path(os.path.abspath(settings.root))
    if absolute == root or absolute in root.parents:
        return False  # the project itself (a checkout in a folder named `build`, say)
    is_dir = absolute.is_dir()
    if settings.is_excluded(absolute, is_dir=is_dir, defaults=False) or (is_dir and skipped_by_default(str(absolute))):
        return True
    for directory in absolute.parents:
        if directory == root or root not in directory.parents:
            break  # the project root and what lies above it are not the project's to exclude
        if settings.is_excluded(directory, is_dir=True, defaults=False) or skipped_by_default(str(directory)):
            return True
    return False


def settings_for_file(path: Path, config_file: Path | None = None, isolated: bool = False) -> Settings:
    """The settings of the nearest ``pyproject.toml`` of ``path`` (or of ``config_file``),
    read once per configuration file and modification time; with ``isolated`` (or
    :data:`ISOLATED_VARIABLE` in the environment) none: :func:`isolated_settings`.

    Raises :class:`nnx_lint.engine.config.ConfigError` for an invalid file or an unknown code
    (the plugins fail loudly, as the CLI exits 2), and for a ``config_file`` in isolated mode
    (which would read it: the CLI refuses ``--isolated --config`` the same way).
    """
    if isolated or isolated_by_environment():
        if config_file is not None:
            raise ConfigError(f"the isolated mode reads no configuration file: it cannot be used with {config_file}")
        return isolated_settings()
    source = config_file or find_pyproject(path)
    if source is None:
        return _settings(None, 0.0, str(Path.cwd()), False)
    try:
        modified = source.stat().st_mtime
    except OSError:
        modified = 0.0
    return _settings(str(source.resolve()), modified, "", config_file is not None)


@lru_cache(maxsize=32)
def _settings(source: str | None, modified: float, cwd: str, explicit: bool) -> Settings:
    from nnx_lint.engine.registry import UnknownSelector, select_rules

    if source is None:
        return Settings(root=Path(cwd))
    # Only a file the user named must have the table; a nearest pyproject.toml without one
    # still marks the project root.
    settings = load_settings(Path(source), Path(source) if explicit else None)
    # Validate the selectors now, so that a typo fails loudly in the plugins as in the CLI.
    try:
        select_rules(settings.select, settings.ignore, settings.extend_select)
        for codes in settings.per_file_ignores.values():
            select_rules(None, codes, ())
    except UnknownSelector as exc:
        raise ConfigError(f"{source} [tool.nnx-lint]: {exc}") from None
    return settings
