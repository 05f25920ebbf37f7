"""The result cache: a file's diagnostics, keyed by its content, the rule set and nnx-lint.

One pickle per project (``.nnx_lint_cache/results.pickle``), read once and written once
per run. An entry is reused when the file's digest, the run's fingerprint (nnx-lint
version and source, selected rules) and the digests of every project file the analysis
read (cross-file dependencies) all match. A cache that cannot be read or written is
ignored with a warning; it never breaks a run.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import nnx_lint

_FORMAT = 1


@dataclass
class Entry:
    digest: str
    fingerprint: str
    dependencies: dict[str, str]
    diagnostics: list[dict]


def source_fingerprint(*packages: Path) -> str:
    """nnx-lint's version plus the size and mtime of the packages' source files (catches dev edits)."""
    hasher = hashlib.sha256(nnx_lint.__version__.encode())
    for package in packages:
        for source in sorted(package.glob("*.py")):
            stat = source.stat()
            hasher.update(f"{source.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return hasher.hexdigest()[:16]


def code_fingerprint() -> str:
    """The fingerprint of the linter itself: the engine and the rules."""
    import checkers

    return source_fingerprint(Path(nnx_lint.__file__).parent, Path(checkers.__file__).parent)


@dataclass
class ResultCache:
    """Read once, consulted per file, written once."""

    path: Path | None
    entries: dict[str, Entry] = field(default_factory=dict)
    dirty: bool = False

    @classmethod
    def open(cls, directory: Path | None) -> ResultCache:
        if directory is None:
            return cls(None)
        path = directory / "results.pickle"
        try:
            with path.open("rb") as handle:
                stored_format, entries = pickle.load(handle)
            if stored_format == _FORMAT and isinstance(entries, dict):
                return cls(path, entries)
        except FileNotFoundError:
            pass
        except Exception as exc:  # corrupt or foreign file: start afresh
            print(f"nnx-lint: warning: ignoring unreadable cache {path}: {exc}", file=sys.stderr)
        return cls(path)

    def lookup(self, key: str, digest: str, fingerprint: str, current_digest) -> list[dict] | None:
        """Cached diagnostics for ``key``, or None. ``current_digest(path)`` hashes deps."""
        if self.path is None:
            return None
        entry = self.entries.get(key)
        if entry is None or entry.digest != digest or entry.fingerprint != fingerprint:
            return None
        for dependency, dependency_digest in entry.dependencies.items():
            if current_digest(dependency) != dependency_digest:
                return None
        return entry.diagnostics

    def store(self, key: str, entry: Entry) -> None:
        if self.path is not None:
            self.entries[key] = entry
            self.dirty = True

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            gitignore = self.path.parent / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("# Created by nnx-lint.\n*\n")
            handle, temporary = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            with os.fdopen(handle, "wb") as stream:
                pickle.dump((_FORMAT, self.entries), stream, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, self.path)
        except OSError as exc:
            print(f"nnx-lint: warning: could not write cache {self.path}: {exc}", file=sys.stderr)
