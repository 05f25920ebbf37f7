"""Where and how nnx-lint keeps its caches: signed JSON files the analysed code cannot touch.

Both caches (lint results and confirmation outcomes) are stored here, and only here:

* **Data only.** A cache file is JSON, never pickle: reading one cannot run code.
* **Outside the project.** By default a project's caches live in the user's cache
  directory (``$XDG_CACHE_HOME/nnx-lint/`` or ``~/.cache/nnx-lint/``), in one subdirectory
  per project root named by a hash of its resolved path, so nothing committed to the
  linted repository is ever read as a cache.
* **Authenticated.** Every file carries an HMAC-SHA256 of its kind and content under a
  per-user secret key (``key``, mode 0600, in the user cache directory). A file that is
  forged, corrupt, truncated, signed with another key or in another format is ignored
  (with one warning line), so a run gives exactly the results of ``--no-cache``. This
  also holds for ``--cache-dir DIR``, wherever DIR is.
* **No writes through links.** A cache directory or cache file that is a symbolic link is
  refused; files are written to a temporary file in the same directory and moved into
  place with :func:`os.replace`, and the temporary file is removed on every failure.

The file format is one ASCII header line, then the JSON payload::

    nnx-lint-cache 2 <kind> <hex HMAC-SHA256(key, "nnx-lint-cache\\0" 2 \\0 kind \\0 payload)>
    {...payload...}

The payload is parsed only after its MAC is verified.
"""
from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import stat
import sys
from pathlib import Path

# Type checkers take TYPE_CHECKING as true; a run never imports typing for annotations (start-up).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_MAGIC = b"nnx-lint-cache"
_FORMAT = b"2"
_KEY_FILE = "key"
_KEY_BYTES = 32
#: A cache file larger than this is not ours (ours are a few MB even for large projects).
_MAX_FILE_BYTES = 512 * 1024 * 1024
# O_NOFOLLOW refuses a symlinked file; O_NONBLOCK keeps a FIFO planted under a cache name
# from hanging the open (the file type is then checked with fstat).
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)

_warned: set[str] = set()
#: Keys this process made to replace an untrusted one: files signed with the old key then
#: fail verification as expected, and the one warning about the key is enough.
_replacement_keys: set[bytes] = set()


def warn(message: str) -> None:
    """One line on stderr, once per message per process."""
    line = " ".join(message.split())
    if line not in _warned:
        _warned.add(line)
        print(f"nnx-lint: warning: {line}", file=sys.stderr)


def user_cache_root() -> Path:
    """``$XDG_CACHE_HOME/nnx-lint`` (an absolute XDG_CACHE_HOME only, as the spec says) or ``~/.cache/nnx-lint``."""
    configured = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(configured) if configured and os.path.isabs(configured) else Path.home() / ".cache"
    return base / "nnx-lint"


def default_cache_dir(project_root: Path) -> Path:
    """The cache directory of a project: under the user cache root, named by a hash of the resolved root."""
    name = hashlib.sha256(str(project_root.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return user_cache_root() / "projects" / name


def _owned_private_directory(path: Path) -> bool:
    """Create ``path`` (mode 0700) if missing; True when it is a real directory owned by this user."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(path)
    except OSError as exc:
        warn(f"not caching: cannot create {path}: {exc.strerror or exc}")
        return False
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        warn(f"not caching: {path} is a symbolic link or not a directory")
        return False
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        warn(f"not caching: {path} is not owned by the current user")
        return False
    return True


def _read_key(path: Path) -> bytes | None:
    """The key in ``path``, or None when it is missing or must not be trusted (which is warned about)."""
    try:
        descriptor = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        warn(f"refusing cache key {path} ({exc.strerror or exc}); making a new one")
        return None
    try:
        info = os.fstat(descriptor)
        private = not (info.st_mode & 0o077) if os.name == "posix" else True
        owned = info.st_uid == os.getuid() if hasattr(os, "getuid") else True
        if not stat.S_ISREG(info.st_mode) or not private or not owned:
            warn(f"refusing cache key {path}: it must be a regular file readable only by its owner (mode 0600); "
                 "making a new one")
            return None
        text = os.read(descriptor, 4 * _KEY_BYTES + 2)
    finally:
        os.close(descriptor)
    try:
        key = bytes.fromhex(text.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(key) != _KEY_BYTES:
        warn(f"refusing cache key {path}: malformed; making a new one")
        return None
    return key


def _new_key(path: Path, replace: bool) -> bytes | None:
    """Write a fresh key atomically (mode 0600); if another process won the race, use its key."""
    import secrets  # here, as tempfile: a warm run reads the key and writes nothing
    import tempfile

    key = secrets.token_bytes(_KEY_BYTES)
    temporary = None
    try:
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".key-", suffix=".tmp")  # mode 0600
        with os.fdopen(descriptor, "w", encoding="ascii") as stream:
            stream.write(key.hex() + "\n")
        if replace:
            os.replace(temporary, path)
            _replacement_keys.add(key)
        else:
            try:
                os.link(temporary, path)  # never overwrites: the first writer's key wins
            except FileExistsError:
                return _read_key(path)
            except OSError:  # a file system without hard links: last writer wins, still atomic
                os.replace(temporary, path)
        return key
    except OSError as exc:
        warn(f"not caching: cannot create the cache key {path}: {exc.strerror or exc}")
        return None
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass  # already moved into place by os.replace


def user_key() -> bytes | None:
    """The per-user secret that signs every cache file, created on first use; None when caching is impossible."""
    root = user_cache_root()
    if not _owned_private_directory(root):
        return None
    path = root / _KEY_FILE
    key = _read_key(path)
    if key is None:
        key = _new_key(path, replace=os.path.lexists(path))
    return key


def _mac(key: bytes, kind: str, payload: bytes) -> str:
    message = b"\0".join((_MAGIC, _FORMAT, kind.encode("ascii"), payload))
    return hmac.new(key, message, hashlib.sha256).hexdigest()


#: A file modified this recently (modification or change time) when a run read it is not trusted
#: by its ``stat`` next time: two edits within one timestamp tick of a coarse file system leave
#: the same ``stat`` (git's "racily clean" entries). Used by the file stamps and the caller answers.
RACY_SECONDS = 2.0


class SignedFile:
    """One cache file of one ``kind`` in ``directory``: :meth:`load` a payload, :meth:`save` one."""

    def __init__(self, directory: Path, name: str, kind: str) -> None:
        self.directory = directory
        self.path = directory / name
        self.kind = kind

    def load(self) -> Any | None:
        """The verified payload, or None (missing, or refused with one warning line)."""
        key = user_key()
        if key is None:
            return None
        data = self._read_bytes()
        if data is None:
            return None
        header, newline, payload = data.partition(b"\n")
        fields = header.split(b" ")
        if not newline or len(fields) != 4 or fields[0] != _MAGIC or fields[1] != _FORMAT:
            warn(f"ignoring cache {self.path}: not an nnx-lint cache of this version")
            return None
        if fields[2] != self.kind.encode("ascii") or not hmac.compare_digest(
            fields[3], _mac(key, self.kind, payload).encode("ascii")
        ):
            if key not in _replacement_keys:
                warn(f"ignoring cache {self.path}: its signature does not match (modified, truncated or "
                     "another user's)")
            return None
        try:
            return json.loads(payload)
        except ValueError:  # signed by us yet unreadable: treat as corrupt
            warn(f"ignoring cache {self.path}: unreadable")
            return None

    def _read_bytes(self) -> bytes | None:
        try:
            descriptor = os.open(self.path, _READ_FLAGS)
        except FileNotFoundError:
            return None
        except OSError as exc:
            reason = "it is a symbolic link" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
            warn(f"ignoring cache {self.path}: {reason}")
            return None
        try:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_FILE_BYTES:
                warn(f"ignoring cache {self.path}: not a regular file of plausible size")
                return None
            chunks = []
            remaining = _MAX_FILE_BYTES + 1  # bounded even if the file grows while it is read
            while remaining > 0 and (chunk := os.read(descriptor, min(remaining, 1 << 20))):
                chunks.append(chunk)
                remaining -= len(chunk)
            if remaining <= 0:
                warn(f"ignoring cache {self.path}: not a regular file of plausible size")
                return None
            return b"".join(chunks)
        except OSError as exc:
            warn(f"ignoring cache {self.path}: {exc.strerror or exc}")
            return None
        finally:
            os.close(descriptor)

    def save(self, payload: Any) -> None:
        """Sign and write ``payload`` atomically; a failure is one warning line, never a broken run."""
        key = user_key()
        if key is None:
            return
        try:
            data = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode("ascii")
        except (TypeError, ValueError) as exc:
            warn(f"could not write cache {self.path}: {exc}")
            return
        if not self._prepare_directory():
            return
        if os.path.islink(self.path):
            warn(f"not writing cache {self.path}: it is a symbolic link")
            return
        header = b" ".join((_MAGIC, _FORMAT, self.kind.encode("ascii"), _mac(key, self.kind, data).encode("ascii")))
        write_atomically(self.path, header + b"\n" + data)

    def _prepare_directory(self) -> bool:
        """Create the directory if needed (with a ``.gitignore`` when it is new); refuse a symlinked one."""
        link = _symlink_on_the_way(self.directory)
        if link is not None:
            warn(f"not writing cache: {link} is a symbolic link")
            return False
        created = not os.path.lexists(self.directory)
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            warn(f"could not write cache {self.path}: {exc.strerror or exc}")
            return False
        if os.path.islink(self.directory) or not self.directory.is_dir():
            warn(f"not writing cache: {self.directory} is a symbolic link or not a directory")
            return False
        if created:  # keeps a --cache-dir inside a repository out of commits
            write_atomically(self.directory / ".gitignore", b"# Created by nnx-lint.\n*\n")
        return True


def _symlink_on_the_way(directory: Path) -> Path | None:
    """The directory itself if it is a symlink, or a symlinked folder between the working directory and it.

    Inside the working tree (the checked-out repository, in CI) every folder on the way is
    checked, since any of them may be a committed link; above it (``/tmp`` is a link on
    macOS) only the directory itself.
    """
    if os.path.islink(directory):
        return directory
    absolute = Path(os.path.abspath(directory))
    try:
        relative = absolute.relative_to(os.getcwd())
    except ValueError:
        return None
    current = Path(os.getcwd())
    for part in relative.parts:
        current = current / part
        if os.path.islink(current):
            return current
    return None


def write_atomically(path: Path, data: bytes) -> bool:
    """Write ``data`` to a temporary file beside ``path`` and move it into place; never leaves the temporary."""
    import tempfile

    temporary = None
    try:
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".nnx-lint-", suffix=".tmp")
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
        os.replace(temporary, path)  # replaces a directory entry: never writes through a link
        temporary = None
        return True
    except OSError as exc:
        warn(f"could not write cache {path}: {exc.strerror or exc}")
        return False
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass
