"""Baselines: accept today's findings, fail only on new ones, and show the migration's progress.

``nnx-lint check --write-baseline FILE`` records every current finding; ``--baseline FILE``
then reports (and fails on) only findings that are not in it, and counts the recorded
ones that are gone as fixed.

An entry is a fingerprint that survives line moves and unrelated edits: the file
(project-relative, POSIX), the code, and a hash of the finding's own code only: the rule,
the flagged lines' code (comments such as ``# noqa`` dropped, whitespace collapsed) and
the classes and functions it is written in (``Tied.__init__``), plus an occurrence index
for identical fingerprints in one file. Nothing about other lines enters it: the facts
(which transform a class is used with, where else it is passed) describe other lines, so
a new use elsewhere would change them. The hash reads text only, never the running
interpreter's tokenizer or AST, so a baseline written on Python 3.13 matches on 3.10.
The file is versioned JSON, sorted and without line numbers, so it is stable across runs
and diffs well in review.

Baselines of version 1 (whose fingerprints also hashed the facts) are still read and
matched the way they were written; :func:`upgrade_note` asks for a rewrite.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from nnx_lint.base import bounds
from nnx_lint.engine.config import _relative_posix
from nnx_lint.base.confined_writes import WriteRefused, WriteScope, write_confined
from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.base.escaping import printable
from nnx_lint.engine.source_lines import Reader, SourceLines, read_from_disk

BASELINE_VERSION = 2
#: Versions still read: each entry is matched with the fingerprint of the version it was written in.
READABLE_VERSIONS = (1, 2)
#: A baseline larger than this is refused (about 200 000 findings).
_BASELINE_BYTES = 64 * 1024 * 1024
#: Version 1 only: facts that say where, not what, left out of its hash because they change when
#: lines move (``pin``: the spans a pin fix edits; ``ipynb``: the span in a notebook's JSON text).
_POSITION_FACT = re.compile(r"(^|_)(line|lines|lineno|col|column|cell|traceback|pin|ipynb)($|_)")


class BaselineError(Exception):
    """The baseline file cannot be read or is not a baseline; the message is one line."""


@dataclass(frozen=True, order=True)
class Entry:
    """One accepted finding."""

    file: str
    code: str
    fingerprint: str
    occurrence: int
    message: str = field(default="", compare=False)
    #: The baseline version the entry was read from (how its fingerprint was computed).
    version: int = field(default=BASELINE_VERSION, compare=False)

    def to_json(self) -> dict:
        """The entry as written in the file (keys in reading order)."""
        return {"file": self.file, "code": self.code, "fingerprint": self.fingerprint,
                "occurrence": self.occurrence, "message": self.message}


def fingerprint(code: str, flagged_code: str, scope: str) -> str:
    """The hash of a finding's own code: its rule, the flagged lines' normalised code and
    the scope it is written in (:attr:`Diagnostic.scope`).

    >>> fingerprint("NNX301", "model.count += 1", "step")
    '7b0d972513197a42c91f'
    """
    canonical = json.dumps({"code": code, "flagged": flagged_code, "scope": scope}, sort_keys=True,
                           separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:20]


def _fingerprint_v1(code: str, line_code: str, stored: dict) -> str:
    """A version 1 fingerprint: the flagged line and the position-free stored facts dict (kept to
    read old baselines, whose fingerprints hashed it)."""
    what = {key: value for key, value in stored.items() if not _POSITION_FACT.search(key)}
    canonical = json.dumps({"code": code, "line": line_code, "facts": what}, sort_keys=True,
                           separators=(",", ":"), ensure_ascii=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:20]


def entries_for(diagnostics: Iterable[Diagnostic], root: Path, read: Reader = read_from_disk,
                version: int = BASELINE_VERSION) -> list[tuple[Entry, Diagnostic]]:
    """Each diagnostic with its baseline entry (occurrences counted in position order), as
    baseline ``version`` fingerprints it."""
    by_file: dict[str, list[Diagnostic]] = defaultdict(list)
    for diagnostic in diagnostics:
        by_file[diagnostic.path].append(diagnostic)
    result = []
    for path, found in by_file.items():
        lines = SourceLines(path, read(path))
        relative = _relative_posix(Path(path), root)
        seen: Counter = Counter()
        for diagnostic in sorted(found, key=lambda d: (d.cell or 0, d.line, d.column, d.code)):
            if version == 1:
                key = _fingerprint_v1(diagnostic.code, lines.code_of(lines.number_of(diagnostic)), diagnostic.facts)
            else:
                key = fingerprint(diagnostic.code, lines.flagged_code(diagnostic), diagnostic.scope)
            entry = Entry(relative, diagnostic.code, key, seen[(diagnostic.code, key)], diagnostic.message, version)
            seen[(diagnostic.code, key)] += 1
            result.append((entry, diagnostic))
    return result


def upgrade_note(path: Path, entries: Iterable[Entry]) -> str | None:
    """One line asking to rewrite a baseline written in an older format (None if it is current)."""
    old = sorted({entry.version for entry in entries if entry.version != BASELINE_VERSION})
    if not old:
        return None
    return (f"nnx-lint: baseline {path} is in the version {old[0]} format, whose fingerprints change when other "
            f"lines change; once this run passes, rewrite it with --write-baseline {path}")


def write_baseline(path: Path, entries: Iterable[Entry], scope: WriteScope) -> int:
    """Write the baseline file (sorted, stable) inside ``scope``; returns the number of entries.

    Never through a symlink: a committed ``nnx-lint-baseline.json -> ~/.bashrc`` is refused."""
    ordered = sorted(set(entries))
    document = {
        "version": BASELINE_VERSION,
        "tool": "nnx-lint",
        "about": "Findings accepted as they are; `nnx-lint check --baseline FILE` reports only new ones. "
                 "Regenerate with `nnx-lint check --write-baseline FILE`.",
        "findings": [entry.to_json() for entry in ordered],
    }
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    try:
        write_confined(path, text.encode("utf-8"), scope)
    except WriteRefused as exc:
        raise BaselineError(f"cannot write baseline {exc}") from None
    except OSError as exc:
        raise BaselineError(f"cannot write baseline {path}: {exc.strerror or exc}") from None
    return len(ordered)


def read_baseline(path: Path) -> list[Entry]:
    """The entries of a baseline file; :class:`BaselineError` if it is unreadable or malformed."""
    try:
        # Bounded, and only a regular file: a baseline linked to /dev/zero is refused, not read forever.
        document = json.loads(bounds.read_bounded(path, cap=_BASELINE_BYTES).decode("utf-8"))
    except bounds.ParseFailure as failure:
        raise BaselineError(f"cannot read baseline {path}: {failure.message}") from None
    except OSError as exc:
        raise BaselineError(f"cannot read baseline {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BaselineError(f"baseline {path} is not valid JSON: {exc}") from None
    version = document.get("version") if isinstance(document, dict) else None
    if type(version) is not int or version not in READABLE_VERSIONS:  # `true == 1`: not a version
        raise BaselineError(f"baseline {path}: expected an nnx-lint baseline of version {BASELINE_VERSION}, got version {version!r}")
    findings = document.get("findings")
    if not isinstance(findings, list):
        raise BaselineError(f"baseline {path}: `findings` must be a list")
    entries = []
    for index, item in enumerate(findings):
        try:
            entry = Entry(item["file"], item["code"], item["fingerprint"], item["occurrence"], item.get("message", ""),
                          version)
        except (KeyError, TypeError):
            raise BaselineError(f"baseline {path}: finding {index} lacks file, code, fingerprint or occurrence") from None
        if not (all(isinstance(v, str) for v in (entry.file, entry.code, entry.fingerprint, entry.message))
                and isinstance(entry.occurrence, int) and entry.occurrence >= 0):
            raise BaselineError(f"baseline {path}: finding {index} has a field of the wrong type")
        entries.append(entry)
    return entries


@dataclass
class BaselineOutcome:
    """How a run compares with its baseline."""

    new: list[Diagnostic]
    #: Recorded findings in this run's scope that were not found again.
    fixed: list[Entry]
    remaining: int
    in_scope: int
    out_of_scope: int

    def summary_lines(self, verbose: bool = False) -> list[str]:
        """``N baselined findings are fixed: ...`` (when any) and ``R of T baselined findings remain`` (``1 of 1 baselined finding remains``)."""
        lines = []
        if self.fixed:
            count = len(self.fixed)
            lines.append(f"{count} baselined finding{'s are' if count != 1 else ' is'} fixed: "
                         "run --write-baseline to shrink the baseline")
            if verbose:
                # The baseline file is the analysed repository's: its text is escaped like any other.
                lines += [f"    fixed: {printable(e.file)}: {printable(e.code)} {printable(e.message)}"
                          for e in sorted(self.fixed)]
        # The noun agrees with the total, the verb with the count: "1 of 1 baselined finding remains".
        progress = (f"{self.remaining} of {self.in_scope} baselined finding{'s' * (self.in_scope != 1)} "
                    f"remain{'s' * (self.remaining == 1)}")
        if self.out_of_scope:
            progress += f" ({self.out_of_scope} more not checked in this run)"
        lines.append(progress + ".")
        return lines


def apply_baseline(
    diagnostics: list[Diagnostic],
    entries: list[Entry],
    root: Path,
    in_scope: Callable[[Entry], bool] | None,
    read: Reader = read_from_disk,
) -> BaselineOutcome:
    """Split ``diagnostics`` into new ones and baselined ones.

    ``in_scope(entry)`` says whether this run checked the entry's file with its rule on:
    an entry outside (a file not linted this time, a rule not selected) is neither
    remaining nor fixed. None means every entry is in scope.
    """
    recorded = set(entries)
    matched: set[Entry] = set()
    baselined: set[int] = set()
    for version in sorted({entry.version for entry in recorded}):
        for entry, diagnostic in entries_for(diagnostics, root, read, version):
            if entry in recorded and id(diagnostic) not in baselined:
                matched.add(entry)
                baselined.add(id(diagnostic))
    new = [d for d in diagnostics if id(d) not in baselined]  # the run's order is kept
    scoped = [e for e in recorded if in_scope is None or in_scope(e)]
    fixed = [e for e in scoped if e not in matched]
    return BaselineOutcome(new, fixed, len(matched), len(scoped), len(recorded) - len(scoped))
