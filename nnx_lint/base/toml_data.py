"""TOML files read as data, each text parsed once: the TOML parser is imported only for a text
whose parse is not already known.

Importing ``tomllib`` costs about a fifth of a bare interpreter's start-up (it compiles its
regular expressions and imports ``datetime``), and a check that the result cache answers reads
the same ``pyproject.toml`` on every call (the settings, the line length and the flax floor all
read it): pre-commit and editors pay that import for a parse that never changes. So:

* **In a process** each text is parsed once; every call returns a fresh copy, so a caller
  that changes what it got changes nothing for the next one.
* **Across runs**, when the command line turns it on (:func:`use_memo`), the parse of each
  TOML file is kept in one signed file of the user cache
  (:class:`~nnx_lint.base.cache_store.SignedFile`), beside the SHA-256 of the text it came from,
  the file's path and the parser's Python. A kept parse is used only for that very text, path
  and parser: an edit, another file at the path or another Python parses afresh. A text
  whose values JSON cannot hold exactly (dates and times) is never kept. Without
  :func:`use_memo` (the plugins, the language server, ``check --no-cache``) nothing is read
  from or written to disk.

The parse is exactly the parser's: JSON keeps the tables' key order, and only strings,
booleans, integers, floats, arrays and tables are kept.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
from pathlib import Path

#: The TOML parser: the standard library's from Python 3.11, ``tomli`` (the same code) before.
#: Imported on the first text to parse; the plugins load it up front (:mod:`nnx_lint.engine.eager`).
TOML_PARSER = "tomllib" if sys.version_info >= (3, 11) else "tomli"
#: What a kept parse must have been made with: the parser module on this exact Python.
_PARSER_IDENTITY = f"{TOML_PARSER} {sys.implementation.name} {sys.version.split()[0]}"
_KIND = "toml"

_memo_directory: Path | None = None
#: The parses of this process, as JSON text, by the SHA-256 of the TOML text.
_parsed: dict[str, str] = {}


class TomlError(ValueError):
    """The text is not TOML: the message is the parser's (or says it nests too deeply)."""


def use_memo(directory: Path | None) -> None:
    """Keep the parses of TOML files in ``directory`` across runs (None: only within this process)."""
    global _memo_directory
    _memo_directory = directory


def parse_toml(text: str, origin: str | os.PathLike | None = None) -> dict:
    """``tomllib.loads(text)``; ``origin`` is the file the text was read from (it names the kept
    parse, see :func:`use_memo`). Raises :class:`TomlError` where the parser raises.

    >>> parse_toml('name = "nnx"\\n[tool.nnx-lint]\\nselect = ["NNX1"]\\n')
    {'name': 'nnx', 'tool': {'nnx-lint': {'select': ['NNX1']}}}
    """
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    known = _parsed.get(digest)
    if known is None and _memo_directory is not None and origin is not None:
        known = _load(_memo_directory, origin, digest)
        if known is not None:
            _parsed[digest] = known
    if known is not None:
        return json.loads(known)
    data = _parse(text)
    kept = _json_text(data)
    if kept is not None:
        _parsed[digest] = kept
        if _memo_directory is not None and origin is not None:
            _memo_file(_memo_directory, origin).save(
                {"path": _absolute(origin), "text": digest, "parser": _PARSER_IDENTITY, "parse": kept})
    return data


def _parse(text: str) -> dict:
    parser = importlib.import_module(TOML_PARSER)
    try:
        return parser.loads(text)
    except parser.TOMLDecodeError as exc:
        raise TomlError(str(exc)) from None
    except RecursionError:
        raise TomlError("nested too deeply") from None


def _json_text(data: dict) -> str | None:
    """``data`` as JSON text that reads back equal, in the same order; None when JSON cannot
    hold one of its values exactly (a date or time)."""
    return json.dumps(data, ensure_ascii=False) if _json_exact(data) else None


def _json_exact(value: object) -> bool:
    kind = type(value)
    if kind is dict:
        return all(type(key) is str and _json_exact(item) for key, item in value.items())
    if kind is list:
        return all(_json_exact(item) for item in value)
    return kind in (str, bool, int, float)


def _absolute(origin: str | os.PathLike) -> str:
    return os.path.abspath(os.fspath(origin))


def _memo_file(directory: Path, origin: str | os.PathLike):
    from nnx_lint.base.cache_store import SignedFile

    name = hashlib.sha256(_absolute(origin).encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return SignedFile(directory, f"{name}.json", _KIND)


def _load(directory: Path, origin: str | os.PathLike, digest: str) -> str | None:
    """The kept parse of this text of ``origin``, as JSON text; None when there is none for it."""
    payload = _memo_file(directory, origin).load()
    if not isinstance(payload, dict):
        return None
    # The signature covers the payload, not the file's name: the payload names its text and path.
    if (payload.get("text") != digest or payload.get("path") != _absolute(origin)
            or payload.get("parser") != _PARSER_IDENTITY or not isinstance(payload.get("parse"), str)):
        return None
    try:
        parsed = json.loads(payload["parse"])
    except ValueError:
        return None
    return payload["parse"] if isinstance(parsed, dict) else None
