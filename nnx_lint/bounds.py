"""Per-file bounds: what nnx-lint reads, how large a tree it builds, how long it analyses.

The code nnx-lint reads is untrusted (it gates pull requests), so no single file may
cost unbounded time or memory, and a file it cannot or will not analyse is reported for
itself while every other file is still linted:

- **Reading.** Only regular files are opened (FIFOs, devices, sockets and directories
  are refused from ``os.stat``, and checked again with ``os.fstat`` on the descriptor,
  which is opened non-blocking so that a FIFO swapped in between cannot hang the run);
  at most ``cap + 1`` bytes are read, so a file's size is never learnt by reading it
  whole. Failures are NNX001 (``unreadable-file``).
- **Size.** Source over :attr:`Limits.source_bytes` (4 MiB) is not analysed. A notebook
  may be larger on disk (:attr:`Limits.notebook_bytes`, 16 MiB: outputs such as images
  dominate real ones), but the code extracted from it is held to the source limit.
- **Tree size.** astroid needs about 1 KB per node, so before building a tree the
  source's size is estimated in *units* (lexemes plus lines; a unit stands for at most
  about one node): over :attr:`Limits.source_units` it is not built. The largest file of
  google/flax has 75 000 units; the default allows 400 000 (about 400 MB of tree).
- **Time.** The engine's walk stops after :attr:`Limits.analysis_seconds`; the file
  then gets only its NNX004 diagnostic. It is the one machine-dependent bound, a
  backstop for analyses that are slower than linear (like any result, it is cached by
  the file's content).

Exceeded bounds are NNX004 (``analysis-skipped``).
"""
from __future__ import annotations

import errno
import os
import re
import stat
import time
from dataclasses import dataclass

_MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """The bounds applied to every file (see the module docstring)."""

    source_bytes: int = 4 * _MiB
    notebook_bytes: int = 16 * _MiB
    source_units: int = 400_000
    analysis_seconds: float = 60.0


#: The limits in force. Tests replace it (``monkeypatch.setattr(bounds, "LIMITS", ...)``).
LIMITS = Limits()


@dataclass
class ParseFailure(Exception):
    """The file could not be turned into a tree; carries where and why (an NNX0xx)."""

    code: str
    message: str
    line: int = 1
    column: int = 1


def read_cap(path: str | os.PathLike) -> int:
    """How many bytes of ``path`` may be analysed: notebooks are allowed more on disk."""
    return LIMITS.notebook_bytes if os.fspath(path).endswith(".ipynb") else LIMITS.source_bytes


_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(mode: int) -> ParseFailure:
    kind = next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")
    return ParseFailure("NNX001", f"not a regular file ({kind}): not read")


def _unreadable(error: OSError) -> ParseFailure:
    reason = error.strerror or str(error)
    if error.errno == errno.ELOOP:
        reason += " (a symlink loop)"
    return ParseFailure("NNX001", f"cannot read file: {reason}")


def read_bounded(path: str | os.PathLike, cap: int | None = None) -> bytes:
    """At most ``cap + 1`` bytes of the regular file ``path`` (``cap``: :func:`read_cap`).

    More than ``cap`` bytes returned means the file is over the limit; the caller says so
    (:func:`check_bytes`), after its text pre-filter has looked at what was read.
    Raises :class:`ParseFailure` (NNX001) for a file that is not regular or cannot be read.
    """
    cap = read_cap(path) if cap is None else cap
    try:
        mode = os.stat(path).st_mode  # follows symlinks; a loop is ELOOP
    except OSError as error:
        raise _unreadable(error) from None
    if not stat.S_ISREG(mode):
        raise _not_regular(mode)  # never opened: opening a FIFO blocks, a device may act
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        raise _unreadable(error) from None
    try:
        opened = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(opened):  # replaced between the stat and the open
            raise _not_regular(opened)
        chunks: list[bytes] = []
        remaining = cap + 1
        while remaining > 0:
            chunk = os.read(descriptor, min(remaining, _MiB))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    except OSError as error:
        raise _unreadable(error) from None
    finally:
        os.close(descriptor)


def check_bytes(data: bytes, cap: int, what: str = "file") -> None:
    """NNX004 when ``data`` (read with :func:`read_bounded`) is over ``cap`` bytes."""
    if len(data) > cap:
        raise ParseFailure("NNX004", f"{what} is over the {cap / _MiB:g} MiB limit: not analysed")


_LEXEME = re.compile(r"\w+|[^\w\s]")


def source_units(text: str) -> int:
    """The size of ``text`` in units: lexemes (names, numbers, operators, punctuation;
    words of strings and comments too, an overestimate) plus lines. Each unit is at most
    about one astroid node, so this bounds the tree before it is built."""
    lines = text.count("\n") + text.count("\r") - text.count("\r\n")
    return _LEXEME.subn("", text)[1] + lines


def check_source(text: str, what: str = "the file") -> None:
    """NNX004 when ``text`` is over the size limits, before any tree is built for it."""
    if len(text) > LIMITS.source_bytes:
        raise ParseFailure(
            "NNX004", f"{what} has {len(text) / 1e6:.1f} M characters, over the "
            f"{LIMITS.source_bytes / _MiB:g} MiB limit: not analysed"
        )
    if 2 * len(text) <= LIMITS.source_units:
        return  # lexemes and lines are each at most one per character: under budget uncounted
    units = source_units(text)
    if units > LIMITS.source_units:
        raise ParseFailure(
            "NNX004", f"analysis budget exceeded: {what} has {units} tokens and lines, over the "
            f"budget of {LIMITS.source_units}: not analysed (is it generated?)"
        )


class AnalysisDeadline:
    """The time budget of one file's analysis, checked by the engine's walk."""

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = LIMITS.analysis_seconds if seconds is None else seconds
        self._end = time.monotonic() + self.seconds

    def expired(self) -> bool:
        return time.monotonic() > self._end

    def failure(self) -> ParseFailure:
        return ParseFailure(
            "NNX004", f"analysis budget exceeded: the file's analysis took over {self.seconds:g} s "
            "and was stopped; no diagnostics are reported for it"
        )
