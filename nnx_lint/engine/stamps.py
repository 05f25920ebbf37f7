"""Warm runs that do not read unchanged files: a file's digest and pre-filter verdict, by its ``stat``.

A warm run used to read every discovered file (4 MB on the flax repository) to pre-filter it
and hash it, only to find the result cache already held its answer. Like Ruff's cache and
git's index, the run now keeps, per file, what ``stat`` said about it when it was last read
(device, inode, size, and the modification and change times in nanoseconds), with the sha256
of its bytes and whether the text pre-filter passed it. A file whose ``stat`` is unchanged is
not read again.

The change time (``st_ctime``) is in the stamp because no ordinary tool can set it back: a
file rewritten with its old size and modification time restored still gets a new one. As in
git ("racily clean" entries), a file modified within :data:`RACY_SECONDS` of being read gets
no stamp, so that two edits inside one timestamp tick on a coarse file system are never
mistaken for none. Stamps are stored in the user's signed cache directory, like the results
(:mod:`nnx_lint.base.cache_store`), and kept only under the same nnx-lint code fingerprint
(a changed pre-filter re-reads every file). ``--no-cache`` reads every file, as before.
"""
from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from nnx_lint.base.cache_store import RACY_SECONDS, SignedFile

__all__ = ["RACY_SECONDS", "FileStamps"]


def _stamp(status: os.stat_result) -> list[int]:
    return [status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns]


class FileStamps:
    """Per file: its stamp when last read, the sha256 of its bytes, and the pre-filter's verdict."""

    def __init__(self, directory: Path | None, code: str) -> None:
        self.store = SignedFile(directory, "stamps.json", "stamps") if directory is not None else None
        self.code = code
        loaded = self.store.load() if self.store is not None else None
        files = loaded.get("files") if isinstance(loaded, dict) and loaded.get("code") == code else None
        self.files: dict[str, list] = files if isinstance(files, dict) else {}
        self.dirty = False
        self._now_ns = time.time_ns()

    def known(self, path: str) -> tuple[str, bool] | None:
        """``(digest, passes the pre-filter)`` when ``path`` is a regular file whose stamp is unchanged."""
        if self.store is None:
            return None
        entry = self.files.get(path)
        if not (isinstance(entry, list) and len(entry) == 3):
            return None
        try:
            status = os.stat(path)
        except OSError:
            return None
        stamp, digest, mentions = entry
        if not stat.S_ISREG(status.st_mode) or stamp != _stamp(status):
            return None
        if not (isinstance(digest, str) and isinstance(mentions, bool)):
            return None
        return digest, mentions

    def record(self, path: str, digest: str, mentions: bool) -> None:
        """Remember what reading ``path`` just gave, unless it changed too recently to trust its stamp."""
        if self.store is None:
            return
        try:
            status = os.stat(path)
        except OSError:
            return
        racy = self._now_ns - int(RACY_SECONDS * 1e9)
        if not stat.S_ISREG(status.st_mode) or status.st_mtime_ns >= racy or status.st_ctime_ns >= racy:
            self.files.pop(path, None)
            return
        entry = [_stamp(status), digest, mentions]
        if self.files.get(path) != entry:
            self.files[path] = entry
            self.dirty = True

    def save(self) -> None:
        if self.store is not None and self.dirty:
            self.store.save({"code": self.code, "files": self.files})
