"""What ties the shards of one gate run together: the project, its commit and a run id.

Each gate report carries ``"run": {"id": ..., "commit": ...}`` beside ``"project"``, and
``nnx-lint gate merge`` joins only reports that agree on all three (and, when it is given
``--run-id`` or ``--commit``, that carry those), so a shard file of another project, another
commit or another run cannot be mixed in.

- **project**: the project root the gate ran on, as an absolute path (CI jobs of one workflow
  check the repository out at the same path).
- **commit**: the commit checked out there, read from git's own files (``HEAD``, the loose
  ref, ``packed-refs``; a worktree's ``.git`` file is followed) before the tests run, so the
  tests cannot change it, and without running git. ``null`` outside a git checkout.
- **id**: ``gate --run-id ID`` when given (in GitHub Actions, ``--run-id ${{ github.run_id }}``).
  Otherwise it is derived, identically in every job of one run, from the commit, the number of
  shards, the test command and the CI system's own run number when one is set
  (:data:`CI_RUN_VARIABLES`): shards of one workflow run share it, and a shard of another
  workflow run (another ``GITHUB_RUN_ID``) or of another shard count or command does not.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path

#: The environment variables in which CI systems name the run (shared by all of its jobs):
#: GitHub Actions, GitLab CI, Azure Pipelines, Buildkite, CircleCI (its workflow).
CI_RUN_VARIABLES = ("GITHUB_RUN_ID", "CI_PIPELINE_ID", "BUILD_BUILDID", "BUILDKITE_BUILD_ID", "CIRCLE_WORKFLOW_ID")
#: A run id given with ``--run-id``: printable ASCII without spaces, at most this long.
RUN_ID_LIMIT = 200
_RUN_ID = re.compile(r"[!-~]{1,%d}" % RUN_ID_LIMIT)
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_SMALL_FILE = 4096
_PACKED_REFS_LIMIT = 16 * 1024 * 1024


class RunIdError(ValueError):
    """A ``--run-id`` that cannot be used."""


def checked_run_id(text: str) -> str:
    """``text`` if it is a usable run id (printable ASCII, no spaces, 1-200 characters)."""
    if not _RUN_ID.fullmatch(text):
        raise RunIdError(f"--run-id must be 1-{RUN_ID_LIMIT} printable ASCII characters without spaces")
    return text


def is_commit(text: object) -> bool:
    """Whether ``text`` is a full git object name (SHA-1 or SHA-256, lower-case hex)."""
    return isinstance(text, str) and _COMMIT.fullmatch(text) is not None


def run_identity(root: Path, shard_count: int | None, command: list[str], run_id: str | None,
                 environ: Mapping[str, str] = os.environ) -> dict[str, str | None]:
    """The ``run`` entry of a report: ``{"id": ..., "commit": ...}`` (see the module docstring)."""
    commit = head_commit(root)
    if run_id is None:
        basis = {"commit": commit, "shards": shard_count, "command": command,
                 "ci": {name: environ[name] for name in CI_RUN_VARIABLES if environ.get(name)}}
        run_id = "derived-" + hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()[:24]
    return {"id": run_id, "commit": commit}


def head_commit(root: Path) -> str | None:
    """The commit checked out at ``root`` (or a directory above it), or None."""
    git_dir = _git_dir(root.resolve())
    if git_dir is None:
        return None
    head = _read_small(git_dir / "HEAD")
    if head is None:
        return None
    head = head.strip()
    if not head.startswith("ref:"):
        return head if is_commit(head) else None
    ref = head[4:].strip()
    if not ref.startswith("refs/") or ".." in ref.split("/"):
        return None
    common = git_dir
    pointer = _read_small(git_dir / "commondir")
    if pointer is not None:
        common = (git_dir / pointer.strip()).resolve()
    for base in dict.fromkeys((git_dir, common)):
        loose = _read_small(base / ref)
        if loose is not None:
            return loose.strip() if is_commit(loose.strip()) else None
    packed = _read_regular(common / "packed-refs", _PACKED_REFS_LIMIT)
    for line in (packed or "").splitlines():
        name, _, refname = line.partition(" ")
        if refname.strip() == ref and is_commit(name):
            return name
    return None


def _git_dir(directory: Path) -> Path | None:
    for candidate in (directory, *directory.parents):
        dot_git = candidate / ".git"
        try:
            mode = os.stat(dot_git, follow_symlinks=False).st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode):
            return dot_git
        if stat.S_ISREG(mode):  # a worktree or submodule: "gitdir: <path>"
            text = _read_small(dot_git) or ""
            if text.startswith("gitdir:"):
                return (candidate / text[len("gitdir:"):].strip()).resolve()
        return None
    return None


def _read_small(path: Path) -> str | None:
    return _read_regular(path, _SMALL_FILE)


def _read_regular(path: Path, limit: int) -> str | None:
    """A regular file's text, or None (missing, not regular, over ``limit`` bytes, not UTF-8)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        with os.fdopen(descriptor, "rb", closefd=False) as file:
            data = file.read(limit + 1)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    if len(data) > limit:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
