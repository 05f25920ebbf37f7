"""Writes to the analysed project: only real files inside its root, atomically.

The repository nnx-lint edits is untrusted (it gates pull requests), and its committed
content can hold symlinks: ``x.py -> ../outside/victim.py``, a baseline named
``nnx-lint-baseline.json -> ~/.bashrc``, a directory ``pkg -> /``. Every write nnx-lint
makes to the project (``--fix``, ``--unsafe-fixes``, ``--add-noqa``, ``--write-baseline``,
``gate --write-baseline``) goes through :func:`write_confined`, which

- refuses a target that is a symlink, or anything but a regular file (a new file is
  allowed: baselines are created);
- refuses a target whose directory, with every symlink resolved, lies outside the
  allowed roots (:class:`WriteScope`);
- writes a temporary file in that directory and moves it into place with
  :func:`os.replace`, which replaces the directory entry: a hard link to a file elsewhere
  is never written through, and a crash leaves the old file whole.

Where the platform allows it (``os.supports_dir_fd``), no check is separated from its use:
the allowed root is opened, then each directory on the way down from it with
``O_DIRECTORY | O_NOFOLLOW`` relative to its parent's descriptor, and the temporary file and
the ``os.replace`` are relative to the last one. A directory on the way that is swapped for a
symlink between the scope check and the write (a parent, however deep) makes that
``os.open`` fail instead of being followed out of the project.
"""
from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


class WriteRefused(Exception):
    """A write that would leave the project root or go through a symlink; says why."""


def _is_within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


@dataclass(frozen=True)
class WriteScope:
    """The real directories nnx-lint may write into.

    The project root always; a path the user named on the command line that lies
    *lexically* outside the root is allowed too (the user asked for it explicitly), but a
    path inside the root that only resolves outside it (through a symlink) is not.
    """

    real_roots: tuple[str, ...]

    @classmethod
    def of(cls, root: Path, named_paths: Iterable[Path] = ()) -> WriteScope:
        """The scope of a run rooted at ``root`` over the command-line ``named_paths``."""
        lexical_root = os.path.abspath(root)
        roots = [os.path.realpath(root)]
        for named in named_paths:
            lexical = os.path.abspath(named)
            if _is_within(lexical, lexical_root):
                continue  # inside the root as typed: it must stay inside once resolved
            target = lexical if os.path.isdir(lexical) else os.path.dirname(lexical)
            roots.append(os.path.realpath(target))
        return cls(tuple(dict.fromkeys(roots)))

    def allows(self, real_directory: str) -> bool:
        """Whether a real (symlink-free) directory lies inside one of the roots."""
        return any(_is_within(real_directory, root) for root in self.real_roots)

    def root_of(self, real_directory: str) -> str | None:
        """The root a real (symlink-free) directory lies inside (the deepest), or None."""
        inside = [root for root in self.real_roots if _is_within(real_directory, root)]
        return max(inside, key=len) if inside else None


def write_confined(path: str | os.PathLike, data: bytes, scope: WriteScope) -> None:
    """Replace (or create) the regular file ``path`` with ``data``, inside ``scope``.

    Raises :class:`WriteRefused` for a symlink, a non-regular file or a directory outside
    the scope, and :class:`OSError` when the write itself fails. The file keeps its mode
    bits; a new file gets the usual ``0o666`` less the umask.
    """
    path = os.fspath(path)
    directory, name = os.path.split(os.path.abspath(path))
    real_directory = os.path.realpath(directory)
    root = scope.root_of(real_directory)
    if root is None:
        raise WriteRefused(f"{path}: resolves outside the project root ({real_directory}): not written")
    if not name or name in (".", ".."):
        raise WriteRefused(f"{path}: not a file name: not written")
    if _DIRECTORY_DESCRIPTORS:
        directory_fd = _open_below(root, os.path.relpath(real_directory, root), path)
        try:
            _write_in(directory_fd, real_directory, name, data, path)
        finally:
            os.close(directory_fd)
    else:  # Windows: the same steps by path
        _write_in(None, real_directory, name, data, path)


#: Whether every step can be made relative to a directory descriptor. ``os.replace`` is not listed in
#: ``os.supports_dir_fd`` even where it takes ``src_dir_fd``: it is ``os.rename``'s implementation, so that
#: one stands for it (asking for ``os.replace`` made every platform take the by-path branch).
_DIRECTORY_DESCRIPTORS = {os.open, os.stat, os.rename, os.unlink} <= os.supports_dir_fd
_DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)


def _open_below(root: str, relative: str, shown: str) -> int:
    """A descriptor of ``root/relative``, reached one directory at a time from ``root``, each
    opened relative to its parent's descriptor without following a symlink: the directory
    the scope check saw, or an error, never a directory that a concurrent swap put elsewhere."""
    descriptor = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for part in () if relative == os.curdir else relative.split(os.sep):
            try:
                child = os.open(part, _DIRECTORY_FLAGS, dir_fd=descriptor)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                    # Swapped for a symlink (or removed) since the scope check: nothing is written.
                    raise WriteRefused(f"{shown}: the directory {part!r} on its way changed while it was "
                                       f"written (a symlink now?): not written") from None
                raise
            os.close(descriptor)
            descriptor = child
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _write_in(directory_fd: int | None, real_directory: str, name: str, data: bytes, shown: str) -> None:
    def where(entry: str):
        return (entry, directory_fd) if directory_fd is not None else (os.path.join(real_directory, entry), None)

    target, fd = where(name)
    try:
        existing = os.stat(target, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        existing = None
    if existing is not None:
        if stat.S_ISLNK(existing.st_mode):
            raise WriteRefused(f"{shown}: is a symlink: not written (nnx-lint never writes through links)")
        if not stat.S_ISREG(existing.st_mode):
            raise WriteRefused(f"{shown}: not a regular file: not written")
    mode = stat.S_IMODE(existing.st_mode) if existing is not None else None
    temporary, fd = where(f".{name}.nnx-lint-{secrets.token_hex(6)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    descriptor = os.open(temporary, flags, 0o600 if mode is not None else 0o666, dir_fd=fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view):]
            if mode is not None and hasattr(os, "fchmod"):
                os.fchmod(descriptor, mode)  # the fixed file keeps its permissions
        finally:
            os.close(descriptor)
        if directory_fd is not None:
            os.replace(temporary, name, src_dir_fd=directory_fd, dst_dir_fd=directory_fd)
        else:
            os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=fd)
        except OSError:
            pass
        raise
