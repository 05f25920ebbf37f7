"""The result cache: a file's diagnostics, keyed by its content, the rule set and nnx-lint.

One signed JSON file per project (``results.json`` in the project's cache directory, see
:mod:`nnx_lint.base.cache_store`), read once and written once per run. An entry is reused when
the file's digest, the run's fingerprint (nnx-lint version and source, selected rules) and
the digests of every project file the analysis read (cross-file dependencies) all match.
A cache that cannot be read, verified or written is ignored with one warning line; it
never breaks a run and never changes its results.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nnx_lint
from nnx_lint.base.cache_store import SignedFile


@dataclass
class Entry:
    digest: str
    fingerprint: str
    dependencies: dict[str, str]
    diagnostics: list[dict]


def source_fingerprint(*packages: Path) -> str:
    """nnx-lint's version plus the size and mtime of the packages' source files (catches dev edits)."""
    parts = [nnx_lint.__version__]
    for package in packages:
        # Recursive: the rules live in family subpackages (``checkers/<family>/``). Walked with
        # os.scandir, not Path.rglob, and hashed in one update: every warm run takes it, over
        # some 400 files.
        found: list[tuple[str, os.stat_result]] = []
        _python_sources(str(package), "", found)
        parts += [f"{relative}:{status.st_size}:{status.st_mtime_ns}" for relative, status in sorted(found)]
    return hashlib.sha256("".join(parts).encode()).hexdigest()[:16]


def _python_sources(directory: str, prefix: str, found: list[tuple[str, os.stat_result]]) -> None:
    """Add ``(path relative to the package, in posix form; its stat)`` of every ``.py`` file under
    ``directory`` to ``found``."""
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.is_dir():
                _python_sources(entry.path, f"{prefix}{entry.name}/", found)
            elif entry.name.endswith(".py"):
                found.append((prefix + entry.name, entry.stat()))


_CODE_FINGERPRINT: list[str] = []


def code_fingerprint() -> str:
    """The fingerprint of the linter itself: the engine and the rules. Taken once per process
    (the result cache and the fix cache both ask; an edit to nnx-lint reaches the next run)."""
    from nnx_lint.engine.own_rules import rules_directory

    if not _CODE_FINGERPRINT:
        _CODE_FINGERPRINT.append(source_fingerprint(Path(nnx_lint.__file__).parent, rules_directory()))
    return _CODE_FINGERPRINT[0]


@dataclass
class ResultCache:
    """Read once, consulted per file, written once."""

    store_file: SignedFile | None
    entries: dict[str, Entry] = field(default_factory=dict)
    dirty: bool = False

    @property
    def path(self) -> Path | None:
        """The cache file, or None when caching is off."""
        return self.store_file.path if self.store_file else None

    @classmethod
    def open(cls, directory: Path | None) -> ResultCache:
        if directory is None:
            return cls(None)
        store_file = SignedFile(directory, "results.json", "results")
        payload = store_file.load()
        return cls(store_file, _entries_from(payload) if isinstance(payload, dict) else {})

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

    def made_under_another_key(self, key: str, digest: str, fingerprint: str) -> bool:
        """Whether ``key``'s entry is for these very bytes but was made under another run
        fingerprint: the file is unchanged, and the cache cannot answer for it all the same."""
        entry = self.entries.get(key)
        return entry is not None and entry.digest == digest and entry.fingerprint != fingerprint

    def store(self, key: str, entry: Entry) -> None:
        if self.path is not None:
            self.entries[key] = entry
            self.dirty = True

    def save(self) -> None:
        if self.store_file is not None and self.dirty:
            self.store_file.save({key: asdict(entry) for key, entry in self.entries.items()})


def _entries_from(payload: dict) -> dict[str, Entry]:
    """The well-formed entries of a verified payload (a signed file from an older layout may differ)."""
    entries = {}
    for key, value in payload.items():
        try:
            entry = Entry(**value)
        except TypeError:
            continue
        if (isinstance(entry.digest, str) and isinstance(entry.fingerprint, str)
                and isinstance(entry.dependencies, dict) and isinstance(entry.diagnostics, list)
                and all(isinstance(d, dict) for d in entry.diagnostics)):
            entries[key] = entry
    return entries
