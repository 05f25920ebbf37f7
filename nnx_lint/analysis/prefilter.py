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
ASCII file in the default encoding can hide nothing.

The pre-filter skips the rules, never the diagnosis of the file itself (:func:`must_analyse`):
a file that does not decode in its declared encoding, a notebook that is not one, or text that
does not parse is analysed whatever it mentions, so it gets the same NNX001 or NNX002 as a
file that names ``nnx`` (a binary ``.py`` or a malformed notebook used to pass silently). The
check is one ``compile`` of the files the byte search skips (never run), the first
time their bytes are seen (a warm run keeps its verdict with the file's stamp).

The one horizon left is the analysis's own: a file that never spells ``nnx`` and reaches
it only through a name imported from a project module (``from mylib import Axes`` where
``mylib`` re-exports ``nnx.StateAxes``; a subclass of a project Module) is skipped. Closing
it was measured (see ``docs/security.md``): it analyses 1.4 to 2.8x as many files of real
projects, found nothing new in five of them, and doubles the pre-filter's own cost, so it
is a documented limit rather than a silent one.
"""
from __future__ import annotations

import ast
import io
import json
import sys
import tokenize
import unicodedata
import warnings

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


def must_analyse(data: bytes, *, notebook: bool = False) -> bool:
    """Whether a file's bytes go to the analysis: it could mention ``nnx`` (:func:`mentions_nnx`),
    or Python (or Jupyter) cannot decode or parse it, which the analysis reports (NNX001, NNX002)."""
    return mentions_nnx(data, notebook=notebook) or not _readable_python(data, notebook)


def _readable_python(data: bytes, notebook: bool) -> bool:
    """Whether ``data`` decodes, and its code parses, as the analysis would read them."""
    if notebook:
        from nnx_lint.base.notebooks import NotebookError, notebook_source

        try:
            text = notebook_source(data)[0]
        except (NotebookError, UnicodeDecodeError, ValueError, RecursionError):
            return False
    else:
        text = _decoded(data, notebook=False)
        if text is None:
            return False
    return parses(text)


def parses(text: str) -> bool:
    """Whether ``text`` parses as the analysis reads it: with the running Python's parser, and
    syntax newer than it spelled in the older syntax with the same positions
    (:mod:`nnx_lint.base.syntax.constructs`, as :func:`nnx_lint.analysis.parsing.build` does)."""
    if _compiles(text):
        return True
    from nnx_lint.base.syntax.constructs import find_newer_syntax, lowered

    running = sys.version_info[:2]
    newer = find_newer_syntax(text)
    return any(construct.added_in > running for construct in newer) and _compiles(lowered(text, newer, running))


def _compiles(text: str) -> bool:
    """Whether ``compile`` accepts ``text``. Compiled to a code object that is thrown away, never
    run: cheaper than building the ``ast`` tree (``PyCF_ONLY_AST`` converts every node to a Python
    object; 3.2 s against 4.3 s of CPU for jax's 617 files, 0.2x their ``ast.parse``). The compiler also rejects what
    the parser accepts (``return`` outside a function): such a file is only analysed, where the
    parser of the analysis decides, so the verdict is the same, at the cost of that analysis.
    Top-level ``await`` (a notebook's) is allowed."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the file's own SyntaxWarnings are not nnx-lint's to print
            compile(text, "<nnx-lint>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True


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
