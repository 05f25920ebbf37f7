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
- **Time.** One budget per file (:class:`AnalysisBudget`): its analysis may take
  :attr:`Limits.analysis_seconds`. The engine's walk checks it at every node, and every
  analysis step that can run long checks it too (:func:`checkpoint`): the class model's
  construction replay and alias search, the per-module passes (which functions run
  under a transform, back references) and the building of imported project modules.
  It is the one machine-dependent bound, a backstop for analyses that are slower than
  linear (like any result, it is cached by the file's content). It counts the CPU time of
  the analysing thread, not the wall clock: on a busy machine (a CI runner shared with
  other jobs, ``-j`` workers beside each other) a file gets the same answer as on an idle
  one, instead of an NNX004 that depends on the load. The analysis never waits on I/O that
  this would not count: files are read with size caps, and special files are refused.
- **Work and memory inside the analysis**, counted, so that the same file gets the same
  answer on every machine:

  - a class's construction replay (its ``__init__``, helpers and base initialisers,
    followed into one another) may take :attr:`Limits.replay_steps` steps (methods
    replayed plus stores recorded): each step keeps a store event, so this bounds the
    class model's memory too. The most any file of five real projects needs is 2 053
    (erfanzar/EasyDeL at 090a03b2); the default allows 100 000;
  - the project modules one file's analysis reads (imports followed, base classes in
    other files) may total :attr:`Limits.imported_units` units (the measure of
    *Tree size* above). A module that does not fit is not read: the analysis goes on
    without it, as for a module it cannot parse. Building modules also stops once it
    has used :attr:`Limits.import_share` of the file's time, so that the file's own
    analysis keeps the rest. The most any file of those projects reads is 363 000 units
    (EasyDeL again); the default allows 1 000 000 (about 250 MB of trees).

- **Over budget, the file keeps what was found.** A step over its budget raises
  :class:`BudgetExceeded`; the engine stops the file there, reports the diagnostics
  found before it, and adds one NNX004 naming what was stopped. Imported modules left
  unread add one NNX004 naming them, next to the file's complete findings.

Exceeded bounds are NNX004 (``analysis-skipped``), which is never dropped beside other
findings: it tells the user that the file's coverage is partial.
"""
from __future__ import annotations

import errno
import os
import re
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

_MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """The bounds applied to every file (see the module docstring)."""

    source_bytes: int = 4 * _MiB
    notebook_bytes: int = 16 * _MiB
    source_units: int = 400_000
    analysis_seconds: float = 60.0
    replay_steps: int = 100_000
    imported_units: int = 1_000_000
    import_share: float = 0.5


#: The limits in force. Tests replace it (``monkeypatch.setattr(bounds, "LIMITS", ...)``).
LIMITS = Limits()

#: The clock budgets read: the analysing thread's CPU time (see *Time* above). Tests replace it
#: to make a file's time run out at a chosen step.
clock = time.thread_time
_THREAD_CPU_TIME = time.thread_time


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


_LEXEME = r"\w+|[^\w\s]"


def source_units(text: str) -> int:
    """The size of ``text`` in units: lexemes (names, numbers, operators, punctuation;
    words of strings and comments too, an overestimate) plus lines. Each unit is at most
    about one astroid node, so this bounds the tree before it is built."""
    lines = text.count("\n") + text.count("\r") - text.count("\r\n")
    return re.subn(_LEXEME, "", text)[1] + lines


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


class BudgetExceeded(BaseException):
    """A step of one file's analysis ran out of budget; ``message`` says what was stopped.

    A ``BaseException``, like ``KeyboardInterrupt``: the analysis's own ``except
    Exception`` fallbacks (a rule that failed is skipped, a service that failed answers
    "unknown") must not take it for a failure of their own and carry on.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class AnalysisBudget:
    """The budget of one file's analysis: its time, and the counted work of its steps.

    The engine makes one per file and puts it in force with :func:`budget_in_force`;
    analysis code asks for it with :func:`current_budget` or just calls :func:`checkpoint`.
    """

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = LIMITS.analysis_seconds if seconds is None else seconds
        # Reading the thread's CPU clock is a system call (3 us idle, far more on a loaded
        # machine), and the walk checks the budget at every node. A thread's CPU time cannot
        # grow faster than the wall clock, whose reading is cheap: while the CPU time last read
        # plus the wall time since is within the budget, the budget cannot be spent yet. Only
        # for the real clock (tests replace it with one that jumps).
        self._wall_bounded = clock is _THREAD_CPU_TIME
        self._wall_read = time.perf_counter()  # before the CPU read: the bound must not undercount
        self._cpu_read = clock()
        self._end = self._cpu_read + self.seconds
        self._imported_units = 0
        self._admitted: set[str] = set()
        #: Project modules the analysis needed but did not read (over the budget), in order.
        self.skipped_imports: list[str] = []
        self._import_seconds = 0.0

    def expired(self) -> bool:
        """Whether the file's time is spent."""
        if self._wall_bounded:
            wall = time.perf_counter()
            if self._cpu_read + (wall - self._wall_read) <= self._end:
                return False
            self._wall_read = wall
            self._cpu_read = clock()
            return self._cpu_read > self._end
        return clock() > self._end

    def check(self, step: str) -> None:
        """Raise :class:`BudgetExceeded` when the file's time is spent, naming ``step``."""
        if self.expired():
            raise BudgetExceeded(
                f"analysis budget exceeded: the file's analysis took over {self.seconds:g} s and was stopped "
                f"in {step}; only what was found before that is reported"
            )

    def admit_import(self, key: str, name: str, units: int) -> bool:
        """Whether the analysis may use the project module ``name`` (``key``: its file;
        ``units``: its size, :func:`source_units`). Each module is charged once per file,
        whether this file's analysis builds its tree or finds it built by an earlier file, so
        the answer does not depend on the order files are linted in. A module refused is
        remembered in :attr:`skipped_imports`."""
        if key in self._admitted:
            return True
        if self._imported_units + units > LIMITS.imported_units:
            self._skip(name)
            return False
        self._imported_units += units
        self._admitted.add(key)
        return True

    def may_build_imports(self, name: str) -> bool:
        """Whether there is time left to build the tree of another imported module: building
        stops once it has taken :attr:`Limits.import_share` of the file's time (a refused
        module joins :attr:`skipped_imports`), so that the file's own analysis keeps the rest."""
        if self._import_seconds <= LIMITS.import_share * self.seconds:
            return True
        self._skip(name)
        return False

    @contextmanager
    def building_import(self) -> Iterator[None]:
        """Time spent inside the block counts towards :attr:`Limits.import_share`."""
        started = clock()
        try:
            yield
        finally:
            self._import_seconds += clock() - started

    def _skip(self, name: str) -> None:
        if name not in self.skipped_imports:
            self.skipped_imports.append(name)

    def skipped_message(self) -> str | None:
        """The NNX004 text for the imported modules left unread, or None if none were."""
        if not self.skipped_imports:
            return None
        shown = ", ".join(f"`{name}`" for name in self.skipped_imports[:5])
        more = f" and {len(self.skipped_imports) - 5} more" if len(self.skipped_imports) > 5 else ""
        return (
            f"analysis budget exceeded: {len(self.skipped_imports)} imported project module(s) were not read "
            f"({shown}{more}), over the budget of {LIMITS.imported_units} tokens and lines of imported code "
            f"or {LIMITS.import_share:.0%} of the file's {self.seconds:g} s; the file's own code was analysed, "
            "but findings that depend on those modules may be missing"
        )


# Per thread, a plain attribute: a ContextVar would replace the context's mapping at every
# file, freeing objects a caller may have frozen (nnx_lint.engine.collection leaves those alone).
_IN_FORCE = threading.local()


@contextmanager
def budget_in_force(budget: AnalysisBudget) -> Iterator[AnalysisBudget]:
    """Make ``budget`` the one :func:`checkpoint` and :func:`current_budget` see, for the block."""
    previous = getattr(_IN_FORCE, "budget", None)
    _IN_FORCE.budget = budget
    try:
        yield budget
    finally:
        _IN_FORCE.budget = previous


def current_budget() -> AnalysisBudget | None:
    """The budget of the file being analysed, or None outside the engine (fixes, the gate)."""
    return getattr(_IN_FORCE, "budget", None)


def checkpoint(step: str) -> None:
    """Raise :class:`BudgetExceeded` if the file being analysed is out of time.

    Called by analysis steps that can run long; ``step`` names the step for the NNX004
    message. Outside the engine (no budget in force) it does nothing.
    """
    budget = getattr(_IN_FORCE, "budget", None)
    if budget is not None:
        budget.check(step)


def check_count(count: int, limit: int, what: str) -> None:
    """Raise :class:`BudgetExceeded` when a counted step (``what``, over ``count`` of its
    ``limit``) is over its bound while a file is analysed. Outside the engine (no budget
    in force) counted bounds do not apply: those callers analyse files already linted."""
    if count > limit and getattr(_IN_FORCE, "budget", None) is not None:
        raise BudgetExceeded(
            f"analysis budget exceeded: {what} took over {limit} steps and was stopped; "
            "only what was found before that is reported"
        )
