"""The pre-filter that keeps astroid away from files no rule can match.

Every rule needs a name that resolves to ``flax.nnx``, and every spelling of such a name in a
file has ``nnx`` in its text: ``from flax import nnx``, ``import flax.nnx``, ``from flax.nnx
import vmap``, ``flax.nnx.vmap``, ``from flax.experimental import nnx``, and re-exports
through project modules (``from .common import nnx``). A file without ``nnx`` is skipped.

"Has ``nnx`` in its text" is decided on the text Python would read, not on raw bytes,
because raw bytes can hide the name from a byte search:

- the source encoding is the file's own (PEP 263): ``# coding: unicode_escape`` turns
  ``\\x6e\\x6ex`` into ``nnx``, and UTF-7 spells it ``+AG4-nx``;
- identifiers are NFKC-normalised (PEP 3131): ``nnｘ`` with a full-width ``ｘ`` *is*
  ``nnx`` to Python;
- a notebook's cells are JSON strings, where ``\\u006e`` is ``n``.

The fast path stays a byte search: a file whose bytes contain ``nnx`` is analysed, and an
ASCII file in the default encoding can hide nothing. Bytes that do not decode in their
declared encoding (or a notebook that is not JSON) are skipped: Python cannot run them, so
nothing in them can break in Tree Mode.

The one horizon left is the analysis's own: a file that never spells ``nnx`` and reaches
it only through a name imported from a project module (``from mylib import Axes`` where
``mylib`` re-exports ``nnx.StateAxes``; a subclass of a project Module) is skipped. Closing
it was measured (see ``docs/security.md``): it analyses 1.4 to 2.8x as many files of real
projects, found nothing new in five of them, and doubles the pre-filter's own cost, so it
is a documented limit rather than a silent one.
"""
from __future__ import annotations

import io
import json
import tokenize
import unicodedata

_NEEDLE = "nnx"



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
