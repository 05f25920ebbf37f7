"""Callers in other files: which project modules call a function of the linted file.

``train.py`` defines ``def update(policy, x)``; ``main.py`` does ``from train import update``
and ``update(Policy(rngs), x)``. The class of ``policy`` is what ``main.py`` passes, so the
linted file's diagnostics depend on other files. This module answers "which calls in other
project files call this module-level function?" cheaply:

* **A syntactic pre-filter.** One pass over the project's Python files (under the run's
  roots and the linted file's package root, skipping the directories a run never lints)
  reads each file's import statements with a regular expression and indexes the names they
  mention. A file can call ``train.update`` only if one of its imports names ``train``
  (``from train import update``, ``from . import train``, ``import pkg.train``) and its text
  has the word ``update``; only those files are parsed (by :class:`nnx_lint.analysis.project.Project`,
  so every file read is a recorded dependency).
* **Cache soundness.** A new caller can appear in a file the analysis never read. So each
  question is also recorded as a dependency of its own (:func:`dependency_key`): its value
  (:func:`dependency_value`) is a digest of the paths and contents of every file that passes
  the pre-filter. The result cache recomputes it on a warm run; a caller that is edited,
  added or removed changes it, and the file is analysed again.

Left out (the parameter stays as the file alone says): callers outside the roots, calls
through ``*args``, methods, nested functions, functions more than :data:`MAX_CALLER_FILES`
files may call, and projects with more than :data:`MAX_FILES` files (the index is not
built; the answer is "no other callers").
"""
from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import time
from pathlib import Path

from nnx_lint.base import bounds
from nnx_lint.base.cache_store import RACY_SECONDS

#: Above this many Python files under the roots, the reverse index is not built.
MAX_FILES = 50_000
#: A function that more files than this may call is a library helper (EasyDeL's
#: ``block_wise_ffn`` gets ~30 MLP classes from ~30 model files): its callers disagree, and
#: parsing them all would cost more than the answer is worth. Its callers in other files
#: are not followed.
MAX_CALLER_FILES = 8
#: The prefix of a caller dependency's key in the result cache (never a file path).
KEY_PREFIX = "nnx-lint:callers:"
# The directory names a run never lints (kept in step with nnx_lint.engine.config.DEFAULT_EXCLUDES).
_SKIPPED_DIRECTORIES = (
    ".git", ".hg", ".svn", ".venv", "venv", ".env", "env", "__pycache__", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".tox", ".nox", ".nnx_lint_cache", "build", "dist",
    "node_modules", "site-packages", "*.egg-info",
)
# `from a.b import (c, d)` / `from . import c` / `import a.b as c, d`: the statement's names.
_IMPORT = re.compile(
    rb"^[ \t]*(?:from[ \t]+([.\w]+)[ \t]+import[ \t]*(\([^)]*\)|[^\n]*)|import[ \t]+([^\n]*))", re.MULTILINE
)
_WORD = re.compile(rb"\w+")
# A literal, so that the search skips through the text at C speed (the statement regex,
# anchored at line starts, would be tried at every position of every file).
_IMPORT_WORD = re.compile(rb"import")


class CallerIndex:
    """Import names -> the files whose imports mention them, for the files under some directories."""

    def __init__(self, directories: tuple[str, ...], reader=None) -> None:
        self.directories = directories
        #: ``reader(path)``: the file's bytes (default: from disk, bounded).
        self._reader = reader
        self._by_name: dict[bytes, list[str]] | None = None
        self._data: dict[str, bytes] = {}
        self._digests: dict[str, str] = {}
        self._answers: dict[tuple[str, str], list[tuple[str, str]]] = {}

    def candidates(self, module_name: str, function: str) -> list[tuple[str, str]]:
        """``(path, sha256)`` of every file that may call ``module_name.function``, sorted."""
        key = (module_name, function)
        if key not in self._answers:
            self._answers[key] = self._candidates(module_name, function)
        return self._answers[key]

    def _candidates(self, module_name: str, function: str) -> list[tuple[str, str]]:
        by_name = self._index()
        stem = module_name.rpartition(".")[2].encode()
        # `update(`, `train.update(`, or `import update as step` (then `step(`); the pattern
        # starts with the literal name, so the search skips through the text at C speed
        use = re.compile(re.escape(function.encode()) + rb"(?:\s*\(|\s+as\b)")
        found = []
        for path in by_name.get(stem, []):
            data = self._data.get(path)
            if data is None:
                data = self._data[path] = self._read(path) or b""
            if data and _used(data, use) and _imports_module(data, module_name.encode()):
                if path not in self._digests:
                    self._digests[path] = hashlib.sha256(data).hexdigest()
                found.append((path, self._digests[path]))
        return sorted(found)

    def _index(self) -> dict[bytes, list[str]]:
        if self._by_name is None:
            self._by_name = {}
            files = _python_files(self.directories)
            for path in files if len(files) <= MAX_FILES else []:
                self._add(path)
        return self._by_name

    def _add(self, path: str) -> None:
        data = self._read(path)
        if data:
            for name in _imported_names(data):
                self._by_name.setdefault(name, []).append(path)

    def _read(self, path: str) -> bytes | None:
        if self._reader is None:
            return _read(path)
        try:
            data = self._reader(Path(path))
        except bounds.ParseFailure:
            return None
        return data if len(data) <= bounds.LIMITS.source_bytes else None

    def forget(self, path: str, created_or_deleted: bool = False) -> None:
        """``path`` changed: its text and every answer are dropped, and its imports indexed
        again (a long-lived index, the language server's; a new or deleted file re-walks)."""
        self._data.pop(path, None)
        self._digests.pop(path, None)
        self._answers.clear()
        if self._by_name is None:
            return
        if created_or_deleted:
            self._by_name = None
            return
        indexed = False
        for paths in self._by_name.values():
            if path in paths:
                paths.remove(path)
                indexed = True
        if indexed:  # the walk found it (a file it skips stays out); its imports may have changed
            self._add(path)


def dependency_key(directories: tuple[str, ...], module_name: str, function: str) -> str:
    """The result-cache key that stands for "the files that may call ``module_name.function``"."""
    return KEY_PREFIX + json.dumps([list(directories), module_name, function])


def dependency_value(key: str, indexes: dict[tuple[str, ...], CallerIndex],
                     answers: CallerAnswers | None = None, reader=None) -> str:
    """The current value of a caller dependency (``indexes``: one index per set of
    directories, kept by the caller for one run; ``answers``: values of earlier runs, reused
    while no Python file under the directories changed; ``reader``: how a new index reads
    files, default from disk); "" for a malformed key."""
    try:
        directories, module_name, function = json.loads(key[len(KEY_PREFIX):])
        directories = tuple(str(d) for d in directories)
    except (ValueError, TypeError):
        return ""
    if not isinstance(module_name, str) or not isinstance(function, str):
        return ""
    known = answers.known(directories, key) if answers is not None else None
    if known is not None:
        return known
    index = indexes.get(directories)
    if index is None:
        index = indexes[directories] = CallerIndex(directories, reader)
    value = digest(index.candidates(module_name, function))
    if answers is not None:
        answers.remember(directories, key, value)
    return value


class CallerAnswers:
    """Caller-dependency values of earlier runs, kept in the cache directory (signed, like the
    results) and reused while the Python files under the directories are the same files with
    the same sizes, modification and change times. Any change there, an edit, a new file or a
    removed one, drops them all: they are recomputed from the files' contents. As for the file
    stamps (:mod:`nnx_lint.engine.stamps`), nothing is remembered while a file there changed
    within the racy window: two edits in one timestamp tick must not look like one."""

    def __init__(self, directory: Path | None) -> None:
        from nnx_lint.base.cache_store import SignedFile

        self.store = SignedFile(directory, "callers.json", "callers") if directory is not None else None
        payload = self.store.load() if self.store is not None else None
        self.saved: dict = payload if isinstance(payload, dict) else {}
        self.dirty = False
        self._signatures: dict[tuple[str, ...], str] = {}
        self._racy: set[tuple[str, ...]] = set()  # directories with a file changed just now
        self._now_ns = time.time_ns()

    def known(self, directories: tuple[str, ...], key: str) -> str | None:
        entry = self.saved.get(json.dumps(list(directories)))
        if not isinstance(entry, dict) or entry.get("signature") != self._signature(directories):
            return None
        value = (entry.get("answers") or {}).get(key)
        return value if isinstance(value, str) else None

    def remember(self, directories: tuple[str, ...], key: str, value: str) -> None:
        if self.store is None:
            return
        name, signature = json.dumps(list(directories)), self._signature(directories)
        if directories in self._racy:
            return
        entry = self.saved.get(name)
        if not isinstance(entry, dict) or entry.get("signature") != signature or not isinstance(
                entry.get("answers"), dict):
            entry = self.saved[name] = {"signature": signature, "answers": {}}
        entry["answers"][key] = value
        self.dirty = True

    def save(self) -> None:
        if self.store is not None and self.dirty:
            self.store.save(self.saved)

    def _signature(self, directories: tuple[str, ...]) -> str:
        """One digest of the path, size and modification time of every Python file there."""
        if directories not in self._signatures:
            hasher = hashlib.sha256()
            racy = self._now_ns - int(RACY_SECONDS * 1e9)
            for path in _python_files(directories):
                try:
                    status = os.stat(path)
                except OSError:
                    continue
                if status.st_mtime_ns >= racy or status.st_ctime_ns >= racy:
                    self._racy.add(directories)
                hasher.update(f"{path}\0{status.st_size}\0{status.st_mtime_ns}\0{status.st_ctime_ns}\n".encode(
                    "utf-8", "surrogateescape"))
            self._signatures[directories] = hasher.hexdigest()
        return self._signatures[directories]


def remember_computed(answers: CallerAnswers, key: str, value: str) -> None:
    """Keep ``value``, which an analysis of this run computed for the caller dependency ``key``, so
    that the next run reuses it instead of indexing the callers again (as if a run had asked)."""
    try:
        directories = tuple(str(d) for d in json.loads(key[len(KEY_PREFIX):])[0])
    except (ValueError, TypeError, IndexError, KeyError):
        return
    answers.remember(directories, key, value)


def digest(candidates: list[tuple[str, str]]) -> str:
    """One digest of the candidate files' paths and contents."""
    hasher = hashlib.sha256()
    for path, content in candidates:
        hasher.update(f"{path}\0{content}\n".encode("utf-8", "surrogateescape"))
    return hasher.hexdigest()


def top_directories(directories: list[Path]) -> tuple[str, ...]:
    """The directories to walk: each resolved, without those inside another one."""
    resolved = sorted({str(d.resolve()) for d in directories})
    kept: list[str] = []
    for directory in resolved:
        if not any(directory == k or directory.startswith(k.rstrip(os.sep) + os.sep) for k in kept):
            kept.append(directory)
    return tuple(kept)


def _python_files(directories: tuple[str, ...]) -> list[str]:
    found: list[str] = []
    for top in directories:
        for directory, subdirectories, files in os.walk(top):
            subdirectories[:] = sorted(
                d for d in subdirectories
                if not any(fnmatch.fnmatch(d, pattern) for pattern in _SKIPPED_DIRECTORIES)
                and not os.path.exists(os.path.join(directory, d, "pyvenv.cfg"))
            )
            found.extend(os.path.join(directory, name) for name in sorted(files) if name.endswith(".py"))
            if len(found) > MAX_FILES:
                return found
    return found


def _read(path: str) -> bytes | None:
    try:
        data = bounds.read_bounded(path, bounds.LIMITS.source_bytes)
    except bounds.ParseFailure:
        return None
    return data if len(data) <= bounds.LIMITS.source_bytes else None


def _used(data: bytes, use: re.Pattern) -> bool:
    """Whether ``use`` matches at the start of a word (not ``my_update(`` for ``update``)."""
    for match in use.finditer(data):
        start = match.start()
        if start == 0 or not (data[start - 1:start].isalnum() or data[start - 1] == 0x5F):
            return True
    return False


def _import_statements(data: bytes):
    """The matches of :data:`_IMPORT` for the file's import statements (each once)."""
    last_line = -1
    for word in _IMPORT_WORD.finditer(data):
        line = data.rfind(b"\n", 0, word.start()) + 1
        if line == last_line:
            continue
        last_line = line
        statement = _IMPORT.match(data, line)
        if statement is not None:
            yield statement


def _imports_module(data: bytes, module_name: bytes) -> bool:
    """Whether an import statement of the file may import ``module_name`` (textually: a
    relative import ending in its last name, or an absolute one naming it or its package;
    a dotted name counts when one ends with the other, for roots that shorten names)."""
    parent, _, stem = module_name.rpartition(b".")
    for match in _import_statements(data):
        source, names, plain = match.groups()
        if source is not None:
            imported = set(_WORD.findall(names or b""))
            if source.startswith(b"."):
                relative = source.lstrip(b".")
                if relative.rpartition(b".")[2] == stem or stem in imported:
                    return True
            elif _same_module(source, module_name) or (stem in imported and parent and _same_module(source, parent)):
                return True
        else:
            for part in (plain or b"").split(b","):
                dotted = part.split()[0] if part.split() else b""
                if _same_module(dotted, module_name):
                    return True
    return False


def _same_module(written: bytes, module_name: bytes) -> bool:
    return written == module_name or written.endswith(b"." + module_name) or module_name.endswith(b"." + written)


def _imported_names(data: bytes) -> set[bytes]:
    """Every identifier an import statement of the file names (module parts and imported names)."""
    names: set[bytes] = set()
    for match in _import_statements(data):
        for group in match.groups():
            if group:
                names.update(_WORD.findall(group))  # a comment's words too: more candidates, never fewer
    return names
