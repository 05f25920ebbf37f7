"""The gate's baseline: the test ids already known to break in Tree Mode.

A small JSON file, written by ``--write-baseline`` and read by ``--baseline``::

    {"tool": "nnx-lint gate", "version": 1, "tree_mode_breaks": ["tests/test_a.py::test_x", ...]}

A break whose node id is listed does not make the gate exit 1; listed ids that no longer
break are reported, so that the baseline can shrink.
"""
from __future__ import annotations

import json
from pathlib import Path

from nnx_lint.base import bounds
from nnx_lint.base.confined_writes import WriteRefused, WriteScope, write_confined

TOOL = "nnx-lint gate"
VERSION = 1
#: A larger baseline is refused rather than read (about 100 000 test ids).
_BASELINE_BYTES = 16 * 1024 * 1024


class BaselineError(ValueError):
    """A baseline file that cannot be read or is not a gate baseline."""


def read_baseline(path: Path) -> set[str]:
    """The node ids of a baseline file."""
    try:
        data = json.loads(bounds.read_bounded(path, cap=_BASELINE_BYTES).decode("utf-8"))
    except bounds.ParseFailure as failure:
        raise BaselineError(f"{path}: {failure.message}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BaselineError(f"{path}: not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("tool") != TOOL:
        raise BaselineError(f"{path}: not an nnx-lint gate baseline (expected \"tool\": \"{TOOL}\")")
    if data.get("version") != VERSION:
        raise BaselineError(f"{path}: unsupported baseline version {data.get('version')!r} (expected {VERSION})")
    breaks = data.get("tree_mode_breaks")
    if not isinstance(breaks, list) or not all(isinstance(item, str) for item in breaks):
        raise BaselineError(f"{path}: \"tree_mode_breaks\" must be a list of test ids")
    return set(breaks)


def write_baseline(path: Path, nodeids: set[str], scope: WriteScope) -> None:
    """Write ``nodeids`` as a baseline inside ``scope`` (never through a symlink), sorted so
    that the file diffs well."""
    data = {"tool": TOOL, "version": VERSION, "tree_mode_breaks": sorted(nodeids)}
    try:
        write_confined(path, (json.dumps(data, indent=2) + "\n").encode("utf-8"), scope)
    except WriteRefused as exc:
        raise BaselineError(str(exc)) from None
    except OSError as exc:
        raise BaselineError(f"{path}: cannot write: {exc.strerror or exc}") from None
