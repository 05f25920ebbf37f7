"""Memo tables that live while one file is analysed.

The analysis asks the same questions about the same astroid nodes many times per file
(flax's examples: ~115,000 name lookups for ~17,000 distinct names), so module-level
helpers that have no per-file context to hang a cache on (:func:`nnx_lint.analysis.flow.lookup`,
:func:`nnx_lint.analysis.call_sites.calls_of`) memoise in a table from :func:`file_memo`.

A table keyed by nodes keeps their trees alive (a ``WeakKeyDictionary`` does not help: its
values point back into the same tree). So every table is registered here and emptied when
the engine finishes a file (:func:`forget_file_memos`): memory stays bounded by one file's
analysis, and the project modules the next file imports are simply asked again.
"""
from __future__ import annotations

_TABLES: list[dict] = []


def file_memo() -> dict:
    """A new memo table, emptied after every analysed file. Its answers must depend only on
    the (never modified) trees: a table holds no state of one rule or one file's context."""
    table: dict = {}
    _TABLES.append(table)
    return table


def forget_file_memos() -> None:
    """Empty every memo table (the engine calls this when a file's walk ends)."""
    for table in _TABLES:
        table.clear()
