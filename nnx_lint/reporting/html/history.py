"""``--history FILE``: one JSON line per run (commit, time, counts by kind and family).

The file comes from other runs (a CI cache, an artifact of an earlier job): it is untrusted.
:func:`read_history` keeps only lines of the exact shape :func:`history_line` writes, with
bounded sizes, and at most the last :data:`MAX_RUNS` of them; a bad line is skipped and
counted, never an error that hides the report. :func:`append_history` writes the whole file
anew through :func:`~nnx_lint.base.confined_writes.write_confined` (never through a symlink,
atomically).
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from nnx_lint.reporting.html.counts import COLUMNS, history_counts

#: Runs kept and plotted (the oldest are dropped when the file grows past it).
MAX_RUNS = 1000
#: A history file larger than this is not read (a thousand lines are well under it).
MAX_BYTES = 4 * 1024 * 1024
_MAX_LINE = 4096
_COMMIT = re.compile(r"[0-9a-f]{7,64}")
_FAMILY = re.compile(r"NNX\dxx")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
_COUNT_LIMIT = 10**9


@dataclass(frozen=True)
class History:
    """The runs read from a history file (oldest first) and how many lines were skipped."""

    runs: tuple[dict, ...]
    skipped: int = 0


def now() -> str:
    """The time stamp of this run, UTC to the second (``SOURCE_DATE_EPOCH`` when set, for
    reproducible builds)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    seconds = int(epoch) if epoch.isdigit() else int(time.time())
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def history_line(findings: list[dict], commit: str | None, stamp: str, baselined: int | None) -> dict:
    """The line a run appends: its commit (or None), time, counts, and the findings its baseline
    still hides (None without ``--baseline``)."""
    return {"version": 1, "commit": commit, "time": stamp, **history_counts(findings), "baselined": baselined}


def _count(value) -> bool:
    return type(value) is int and 0 <= value < _COUNT_LIMIT


def valid_line(item) -> bool:
    """Whether ``item`` has exactly the shape :func:`history_line` writes."""
    if not isinstance(item, dict) or set(item) != {"version", "commit", "time", "total", "kinds", "families",
                                                   "baselined"}:
        return False
    kinds, families = item["kinds"], item["families"]
    return (item["version"] == 1
            and (item["commit"] is None or isinstance(item["commit"], str) and bool(_COMMIT.fullmatch(item["commit"])))
            and isinstance(item["time"], str) and bool(_TIME.fullmatch(item["time"]))
            and _count(item["total"]) and (item["baselined"] is None or _count(item["baselined"]))
            and isinstance(kinds, dict) and set(kinds) == set(COLUMNS) and all(map(_count, kinds.values()))
            and isinstance(families, dict) and len(families) <= 10
            and all(isinstance(k, str) and _FAMILY.fullmatch(k) and _count(v) for k, v in families.items()))


def read_history(path: Path) -> History:
    """The valid runs of ``path`` (none when it does not exist, is not a regular file or is too big)."""
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_BYTES:
            return History(())
        data = path.read_bytes()
    except OSError:
        return History(())
    runs, skipped = [], 0
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            item = json.loads(raw) if len(raw) <= _MAX_LINE else None
        except (ValueError, RecursionError):
            item = None
        if valid_line(item):
            runs.append(item)
        else:
            skipped += 1
    return History(tuple(runs[-MAX_RUNS:]), skipped)


def append_history(path: Path, line: dict, scope) -> History:
    """Add ``line`` to the history at ``path`` (keeping its last valid runs) and return the whole
    history, this run last. ``scope`` is the :class:`~nnx_lint.base.confined_writes.WriteScope`."""
    from nnx_lint.base.confined_writes import write_confined

    history = read_history(path)
    runs = (*history.runs, line)[-MAX_RUNS:]
    write_confined(path, "".join(json.dumps(run, sort_keys=True) + "\n" for run in runs).encode("utf-8"), scope)
    return History(runs, history.skipped)


def commit_of(root: Path) -> str | None:
    """The commit being checked: ``GITHUB_SHA`` or ``CI_COMMIT_SHA`` in CI, else read from the
    repository's ``.git`` files (git itself is not run: the analysed repository's configuration
    could make it run programs). None when unknown."""
    for variable in ("GITHUB_SHA", "CI_COMMIT_SHA"):
        value = os.environ.get(variable, "").strip().lower()
        if _COMMIT.fullmatch(value):
            return value
    git = root / ".git"
    try:
        head = (git / "HEAD").read_text(encoding="utf-8", errors="replace")[:256].strip()
        if head.startswith("ref: "):
            ref = head[5:].strip()
            if not re.fullmatch(r"refs/[A-Za-z0-9._/-]{1,200}", ref) or ".." in ref:
                return None
            loose = git / ref
            if loose.is_file():
                head = loose.read_text(encoding="utf-8", errors="replace")[:256].strip()
            else:
                packed = (git / "packed-refs").read_text(encoding="utf-8", errors="replace")[:MAX_BYTES]
                head = next((line.split(" ", 1)[0] for line in packed.splitlines()
                             if line.endswith(" " + ref)), "")
    except OSError:
        return None
    return head if _COMMIT.fullmatch(head) else None
