"""The pre-filter that keeps astroid away from files no rule can match, without ever
skipping one that a rule could.

Every rule needs a name that resolves to ``flax.nnx``, and a name can only resolve there
in two ways:

1. the file itself spells it: ``from flax import nnx``, ``import flax.nnx``,
   ``from flax.nnx import vmap``, ``from flax.experimental import nnx``;
2. the file imports a project module that spells it and re-exports it, or defines a class,
   function or transform from it (``from .common import nnx``, ``from mylib import
   StateAxes``, ``from models import Policy``). The analysis follows such imports one
   module deep, and only into modules whose own text names ``nnx``
   (:meth:`nnx_lint.project.Project.resolve_attribute`), so that is what the filter follows.

"Spells" is decided on the text Python would read, not on raw bytes, because raw bytes can
hide the name from a byte search:

- the source encoding is the file's own (PEP 263): ``# coding: unicode_escape`` turns
  ``\\x6e\\x6ex`` into ``nnx``, and UTF-7 spells it ``+AG4-nx``;
- identifiers are NFKC-normalised (PEP 3131): ``nnｘ`` with a full-width ``ｘ`` *is*
  ``nnx`` to Python;
- a notebook's cells are JSON strings, where ``\\u006e`` is ``n``.

The fast path stays a byte search: a file whose bytes contain ``nnx`` is analysed, and an
ASCII file in the default encoding can hide nothing. Bytes that do not decode in their
declared encoding (or a notebook that is not JSON) are skipped as before: Python cannot
run them, so nothing in them can break in Tree Mode.
"""
from __future__ import annotations

import io
import json
import re
import tokenize
import unicodedata
from collections.abc import Callable
from pathlib import Path

_NEEDLE = "nnx"

# `import a.b, c as d` and `from ..a.b import (x, y)`, after a line start or `;`. Over-matching
# (an import in a string or a comment) only makes the filter analyse more, never less.
_IMPORT = re.compile(r"(?:^|;)[ \t]*(?:import[ \t]+([\w. \t,]+)|from[ \t]+(\.*)([\w.]*)[ \t]+import\b[ \t(]*([\w. \t,]*))", re.M)


def mentions_nnx(data: bytes | str, *, notebook: bool = False) -> bool:
    """Whether the text Python (or Jupyter) would read from ``data`` could contain ``nnx``.

    ``notebook``: ``data`` is an ``.ipynb`` document, whose code cells are JSON strings.
    """
    if isinstance(data, bytes):
        if _NEEDLE.encode() in data:
            return True
        text = _decoded(data, notebook)
        if text is None:
            return False  # Python cannot decode it, so cannot run it
    else:
        if _NEEDLE in data:
            return True
        text = data
    return _normalised_mentions(text)


def _normalised_mentions(text: str) -> bool:
    if _NEEDLE in text:
        return True
    if text.isascii():
        return False  # NFKC leaves ASCII as it is
    return _NEEDLE in unicodedata.normalize("NFKC", text)


def _decoded(data: bytes, notebook: bool) -> str | None:
    """The text of ``data`` as Python would decode it; a notebook's cell sources joined."""
    if notebook:
        try:
            document = json.loads(data.decode("utf-8-sig"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return None
        return "\n".join(_strings_in(document))
    first = data.find(b"\n")
    second = data.find(b"\n", first + 1) if first >= 0 else -1
    if data.isascii() and b"coding" not in data[: second if second >= 0 else len(data)]:
        return data.decode("ascii")  # UTF-8 by default; only a cookie in the first two lines changes that
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None


def _strings_in(value) -> list[str]:
    """Every string in a JSON value (cell sources, but also anything a front-end could read)."""
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
    return found


def imported_modules(text: str, module_name: str, is_package: bool) -> set[str]:
    """Absolute names of every module ``text`` may import, parent packages included.

    ``from a.b import c`` may import ``a``, ``a.b`` and ``a.b.c`` (a submodule); relative
    imports are resolved against ``module_name`` (a package's own name when ``is_package``).
    Read from the text, so it over-approximates (see ``_IMPORT``).
    """
    text = text.replace("\\\r\n", " ").replace("\\\n", " ")  # backslash continuations
    package = module_name.split(".") if is_package else module_name.split(".")[:-1]
    names: set[str] = set()
    for match in _IMPORT.finditer(text):
        plain, dots, source, imported = match.groups()
        if plain is not None:
            targets = [part.split()[0] for part in plain.split(",") if part.split()]
        else:
            level = len(dots)
            base = package[: len(package) - (level - 1)] if level else []
            if level and level - 1 > len(package):
                continue
            root = ".".join(base + ([source] if source else []))
            targets = [root] if root else []
            targets += [f"{root}.{part.split()[0]}" if root else part.split()[0]
                        for part in imported.split(",") if part.split()]
        for target in targets:
            parts = [p for p in target.split(".") if p]
            names.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return names


def reaches_nnx(data: bytes | str, module_name: str, is_package: bool, module_mentions_nnx: Callable[[str], bool],
                *, notebook: bool = False) -> bool:
    """Whether a rule could match the file: it names ``nnx`` itself, or imports a project
    module that does (``module_mentions_nnx(name)``; see the module docstring)."""
    if mentions_nnx(data, notebook=notebook):
        return True
    text = data if isinstance(data, str) else _decoded(data, notebook)
    if text is None:
        return False
    return any(module_mentions_nnx(name) for name in sorted(imported_modules(text, module_name, is_package)))


class PreFilter:
    """The pre-filter of one run over files on disk: :func:`reaches_nnx`, with each
    project module's answer read once (bounded) and remembered."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = [Path(root) for root in roots]
        self._mentions: dict[str, bool] = {}

    def needs_analysis(self, file: Path, data: bytes) -> bool:
        """Whether a rule could match ``file`` (whose bytes are ``data``)."""
        from nnx_lint.package_roots import module_name_for

        notebook = file.suffix == ".ipynb"
        if mentions_nnx(data, notebook=notebook):
            return True
        module_name, file_root = module_name_for(file)  # only for the files without nnx
        roots = [file_root.resolve(), *(root for root in self.roots if root != file_root.resolve())]
        return reaches_nnx(data, module_name, file.name == "__init__.py",
                           lambda name: self._module_mentions_nnx(name, roots), notebook=notebook)

    def _module_mentions_nnx(self, module_name: str, roots: list[Path]) -> bool:
        from nnx_lint import bounds
        from nnx_lint.package_roots import find_module_file

        found = find_module_file(module_name, roots)
        if found is None:
            return False
        key = str(found)
        if key not in self._mentions:
            try:
                self._mentions[key] = mentions_nnx(bounds.read_bounded(found, bounds.LIMITS.source_bytes))
            except bounds.ParseFailure:
                self._mentions[key] = False  # unreadable: the analysis cannot read it either
        return self._mentions[key]
