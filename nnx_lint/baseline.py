"""Baselines: accept today's findings, fail only on new ones, and show the migration's progress.

``nnx-lint check --write-baseline FILE`` records every current finding; ``--baseline FILE``
then reports (and fails on) only findings that are not in it, and counts the recorded
ones that are gone as fixed.

An entry is a fingerprint that survives line moves and unrelated edits: the file
(project-relative, POSIX), the code, and a hash of the line's code (comments such as
``# noqa`` dropped, whitespace collapsed) and of the diagnostic's facts without their
positions (canonical JSON), plus an occurrence index for identical fingerprints in one
file. The file is versioned JSON, sorted and without line numbers, so it is stable
across runs and diffs well in review.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from nnx_lint import bounds
from nnx_lint.config import _relative_posix
from nnx_lint.confined_writes import WriteRefused, WriteScope, write_confined
from nnx_lint.diagnostic import Diagnostic
from nnx_lint.escaping import printable
from nnx_lint.source_lines import Reader, SourceLines, read_from_disk

BASELINE_VERSION = 1
#: A baseline larger than this is refused (about 200 000 findings).
_BASELINE_BYTES = 64 * 1024 * 1024
#: Facts that say where, not what: they change when lines move, so they stay out of the hash
#: (``pin``: the spans a pin fix edits; ``ipynb``: the span in a notebook's JSON text).
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

    def to_json(self) -> dict:
        """The entry as written in the file (keys in reading order)."""
        return {"file": self.file, "code": self.code, "fingerprint": self.fingerprint,
                "occurrence": self.occurrence, "message": self.message}


def fingerprint(code: str, line_code: str, facts: dict) -> str:
    """The hash of a finding's normalised line and its position-free facts."""
    what = {key: value for key, value in facts.items() if not _POSITION_FACT.search(key)}
    canonical = json.dumps({"code": code, "line": line_code, "facts": what}, sort_keys=True,
                           separators=(",", ":"), ensure_ascii=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:20]


def entries_for(diagnostics: Iterable[Diagnostic], root: Path, read: Reader = read_from_disk) -> list[tuple[Entry, Diagnostic]]:
    """Each diagnostic with its baseline entry (occurrences counted in position order)."""
    by_file: dict[str, list[Diagnostic]] = defaultdict(list)
    for diagnostic in diagnostics:
        by_file[diagnostic.path].append(diagnostic)
    result = []
    for path, found in by_file.items():
        lines = SourceLines(path, read(path))
        relative = _relative_posix(Path(path), root)
        seen: Counter = Counter()
        for diagnostic in sorted(found, key=lambda d: (d.facts.get("cell", 0), d.line, d.column, d.code)):
            key = fingerprint(diagnostic.code, lines.code_of(lines.number_of(diagnostic)), diagnostic.facts)
            entry = Entry(relative, diagnostic.code, key, seen[(diagnostic.code, key)], diagnostic.message)
            seen[(diagnostic.code, key)] += 1
            result.append((entry, diagnostic))
    return result


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
    if not isinstance(document, dict) or document.get("version") != BASELINE_VERSION:
        found = document.get("version") if isinstance(document, dict) else None
        raise BaselineError(f"baseline {path}: expected an nnx-lint baseline of version {BASELINE_VERSION}, got version {found!r}")
    findings = document.get("findings")
    if not isinstance(findings, list):
        raise BaselineError(f"baseline {path}: `findings` must be a list")
    entries = []
    for index, item in enumerate(findings):
        try:
            entry = Entry(item["file"], item["code"], item["fingerprint"], item["occurrence"], item.get("message", ""))
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
        """``N baselined findings are fixed: ...`` (when any) and ``R of T baselined findings remain``."""
        lines = []
        if self.fixed:
            count = len(self.fixed)
            lines.append(f"{count} baselined finding{'s are' if count != 1 else ' is'} fixed: "
                         "run --write-baseline to shrink the baseline")
            if verbose:
                # The baseline file is the analysed repository's: its text is escaped like any other.
                lines += [f"    fixed: {printable(e.file)}: {printable(e.code)} {printable(e.message)}"
                          for e in sorted(self.fixed)]
        progress = f"{self.remaining} of {self.in_scope} baselined finding{'s' * (self.in_scope != 1)} remain"
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
    for entry, diagnostic in entries_for(diagnostics, root, read):
        if entry in recorded:
            matched.add(entry)
            baselined.add(id(diagnostic))
    new = [d for d in diagnostics if id(d) not in baselined]  # the run's order is kept
    scoped = [e for e in recorded if in_scope is None or in_scope(e)]
    fixed = [e for e in scoped if e not in matched]
    return BaselineOutcome(new, fixed, len(matched), len(scoped), len(recorded) - len(scoped))
