"""The project's line length, which a pinned call must fit (else it is wrapped, as black would).

A pin appends ``graph=True, graph_updates=True`` to a call, so a line that fitted may no
longer. The limit is the one the project already enforces, read from the project root with
the precedence a team would expect (the first found wins):

1. ``line-length`` in ``[tool.nnx-lint]`` (read and validated by :mod:`nnx_lint.engine.config`);
2. Ruff: ``line-length`` in ``.ruff.toml``, ``ruff.toml``, then ``[tool.ruff]`` of
   ``pyproject.toml`` (Ruff's own order of precedence between its files);
3. black or pyink: ``line-length`` in ``[tool.black]`` / ``[tool.pyink]``;
4. flake8: ``max-line-length`` in ``[flake8]`` of ``.flake8``, ``setup.cfg``, ``tox.ini``;
5. pylint: ``max-line-length`` in ``[tool.pylint.format]`` (or ``[tool.pylint.FORMAT]``),
   then ``[FORMAT]`` of ``.pylintrc`` / ``pylintrc``;
6. :data:`DEFAULT` (88, black's and Ruff's default).

Another tool's value that is not a whole number in ``1..``:data:`MAXIMUM` is passed over
(that tool reports its own configuration errors). No libcst: the command line shows the
value with ``--show-settings``.
"""
from __future__ import annotations

import configparser
from dataclasses import dataclass
from pathlib import Path

from nnx_lint.engine.config import MAXIMUM_LINE_LENGTH

#: Black's and Ruff's default.
DEFAULT = 88
#: Ruff's upper bound for ``line-length``.
MAXIMUM = MAXIMUM_LINE_LENGTH


@dataclass(frozen=True)
class LineLength:
    """A line length and where it was read (``"ruff.toml"``, ``"pyproject.toml [tool.black]"``)."""

    value: int
    source: str


def valid(value: object) -> int | None:
    """``value`` as a line length, or None when it is not one (``True`` is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, int):
        if not isinstance(value, str) or not value.strip().isdigit():
            return None
        value = int(value.strip())
    return value if 1 <= value <= MAXIMUM else None


def project_line_length(root: Path, configured: int | None = None, configured_in: Path | None = None) -> LineLength:
    """The line length of the project at ``root``; ``configured`` is ``[tool.nnx-lint] line-length``
    (already validated), read from ``configured_in``."""
    if configured is not None:
        return LineLength(configured, f"{(configured_in or root / 'pyproject.toml').name} [tool.nnx-lint]")
    pyproject = _toml(root / "pyproject.toml")
    tool = pyproject.get("tool") if isinstance(pyproject.get("tool"), dict) else {}
    for name in (".ruff.toml", "ruff.toml"):
        found = valid(_toml(root / name).get("line-length"))
        if found is not None:
            return LineLength(found, name)
    for table in ("ruff", "black", "pyink"):
        section = tool.get(table)
        found = valid(section.get("line-length")) if isinstance(section, dict) else None
        if found is not None:
            return LineLength(found, f"pyproject.toml [tool.{table}]")
    for name in (".flake8", "setup.cfg", "tox.ini"):
        found = _ini(root / name, ("flake8",), "max-line-length")
        if found is not None:
            return LineLength(found, f"{name} [flake8]")
    pylint = tool.get("pylint")
    if isinstance(pylint, dict):
        for table in ("format", "FORMAT"):
            section = pylint.get(table)
            found = valid(section.get("max-line-length")) if isinstance(section, dict) else None
            if found is not None:
                return LineLength(found, f"pyproject.toml [tool.pylint.{table}]")
    for name in (".pylintrc", "pylintrc"):
        found = _ini(root / name, ("FORMAT", "format"), "max-line-length")
        if found is not None:
            return LineLength(found, f"{name} [FORMAT]")
    return LineLength(DEFAULT, "default")


def settings_line_length(settings) -> LineLength:
    """The line length for a run's :class:`~nnx_lint.engine.config.Settings`."""
    return project_line_length(settings.root, settings.line_length, settings.source)


def _toml(path: Path) -> dict:
    """The parsed TOML file, or ``{}`` when it is missing or unusable (another tool's file)."""
    from nnx_lint.engine.config import ConfigError, _read_toml

    if not path.is_file():
        return {}
    try:
        return _read_toml(path)
    except ConfigError:
        return {}


def _ini(path: Path, sections: tuple[str, ...], key: str) -> int | None:
    """``key`` of the first of ``sections`` in an INI file, as a line length (None: absent or unusable)."""
    from nnx_lint.base.bounds import LIMITS, ParseFailure, read_bounded

    if not path.is_file():
        return None
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(read_bounded(path, LIMITS.source_bytes).decode("utf-8"))
    except (ParseFailure, UnicodeDecodeError, configparser.Error):
        return None
    for section in sections:
        if parser.has_option(section, key):
            return valid(parser.get(section, key).split("#")[0])
    return None
