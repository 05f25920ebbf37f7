"""The project's line length, which a pinned call must fit (else it is wrapped, as black would),
and its indent width, by which the wrapped arguments are indented.

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

The indent width is read as Ruff's formatter reads it: ``indent-width`` in ``.ruff.toml``,
``ruff.toml``, then ``[tool.ruff]`` of ``pyproject.toml``; then pyink's ``pyink-indentation``
(``[tool.pyink]``, what Google projects such as flax use); else each file's own indentation
(:func:`file_indent`), so a wrapped pin looks like the code around it.
"""
from __future__ import annotations

import io
import tokenize
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


@dataclass(frozen=True)
class IndentWidth:
    """An indent width (None: each file's own) and where it was read."""

    value: int | None
    source: str


#: Ruff's bounds for ``indent-width``.
MAXIMUM_INDENT_WIDTH = 16


def valid_indent_width(value: object) -> int | None:
    """``value`` as an indent width (1 to 16, as Ruff accepts it), or None when it is not one."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 1 <= value <= MAXIMUM_INDENT_WIDTH else None


def project_indent_width(root: Path) -> IndentWidth:
    """The indent width the project at ``root`` configures for its formatter (see the module docstring)."""
    for name in (".ruff.toml", "ruff.toml"):
        found = valid_indent_width(_toml(root / name).get("indent-width"))
        if found is not None:
            return IndentWidth(found, name)
    pyproject = _toml(root / "pyproject.toml")
    tool = pyproject.get("tool") if isinstance(pyproject.get("tool"), dict) else {}
    for table, key in (("ruff", "indent-width"), ("pyink", "pyink-indentation")):
        section = tool.get(table)
        found = valid_indent_width(section.get(key)) if isinstance(section, dict) else None
        if found is not None:
            return IndentWidth(found, f"pyproject.toml [tool.{table}]")
    return IndentWidth(None, "not configured")


def settings_indent_width(settings) -> IndentWidth:
    """The indent width for a run's :class:`~nnx_lint.engine.config.Settings`."""
    return project_indent_width(settings.root)


def file_indent(text: str) -> str:
    """One level of ``text``'s own indentation: its first indented block's (four spaces when it
    has none, or cannot be tokenized)."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.INDENT:
                # The first INDENT opens a block at column 0: all of it is one level.
                return token.string if token.string.strip(" \t") == "" and token.string else "    "
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return "    "


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
    import configparser  # here: most projects have no such file, and a cached check reads none

    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(read_bounded(path, LIMITS.source_bytes).decode("utf-8"))
    except (ParseFailure, UnicodeDecodeError, configparser.Error):
        return None
    for section in sections:
        if parser.has_option(section, key):
            return valid(parser.get(section, key).split("#")[0])
    return None
