"""Where the gate's test runs find and put their bytecode.

Nothing the runs compile may land in the user's tree or outlive the gate (bytecode is code),
and every process should still start as fast as a plain run. Python offers two switches:

- ``PYTHONDONTWRITEBYTECODE``: read the installation's ``__pycache__``, write nothing. Cheap
  for modules the installation compiled, but pytest's rewritten asserts (the test modules and
  every module of an auto-loaded plugin's distribution, hypothesis's whole package for one)
  are then rewritten again in each process.
- ``PYTHONPYCACHEPREFIX=<private directory>``: read and write bytecode there only. Every run
  after the first reuses what the first compiled, but Python then ignores the installation's
  own bytecode, so the first run compiles flax, jax and the standard library again.

The gate takes the best of both. Where the installation carries its bytecode (a normal
``pip install``), the first full run reads it and writes nothing; its plugin reports which
modules the tests loaded, and the gate seeds its private directory with links to their
installation bytecode (:func:`seed_private_cache`). Every later run uses that directory: the
installed modules come from the links, and what only a run can compile (rewritten asserts,
the project's modules) is compiled once. Where the installation has no bytecode, every run
uses the private directory from the start. It is deleted with the gate's ``workdir``.
"""
from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import os
import re
import struct
import sys
import threading
from pathlib import Path

#: The packages every flax test imports; if the installation carries their bytecode, it was compiled.
_WITNESSES = ("flax", "jax", "pytest")
#: A cache tag as ``sys.implementation.cache_tag`` spells it (``cpython-311``).
_CACHE_TAG = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")
#: At most this many links per gate: a bound on what one (untrusted) report can make the gate do.
MAX_LINKS = 50_000


def private_cache(workdir: Path) -> Path:
    """Where the runs of one gate put their bytecode: inside the gate's private ``workdir``."""
    return workdir / "pycache"


def installation_has_bytecode(packages: tuple[str, ...] = _WITNESSES, search_path: list[str] | None = None) -> bool:
    """True when each of ``packages`` is installed with up-to-date bytecode beside its ``__init__``.

    Read without importing anything: the package's ``__pycache__`` entry must carry this
    interpreter's magic number and, unless hash-based, the source's modification time and size,
    as the import system checks them. ``search_path`` (default ``sys.path``) is where to look.
    """
    for package in packages:
        spec = importlib.machinery.PathFinder.find_spec(package, search_path if search_path is not None else sys.path)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            return False
        source = Path(spec.origin)
        compiled = source.parent / "__pycache__" / f"{source.stem}.{sys.implementation.cache_tag}.pyc"
        try:
            with open(compiled, "rb") as handle:
                header = handle.read(16)
            stat = source.stat()
        except OSError:
            return False
        if len(header) < 16 or header[:4] != importlib.util.MAGIC_NUMBER:
            return False
        flags, mtime, size = struct.unpack("<III", header[4:16])
        if flags == 0 and (mtime != int(stat.st_mtime) & 0xFFFFFFFF or size != stat.st_size & 0xFFFFFFFF):
            return False
    return True


@functools.lru_cache(maxsize=1)
def _installation_compiled() -> bool:
    """Asked once per gate, before the first run (whose tests could add or remove bytecode)."""
    return installation_has_bytecode()


def set_bytecode_environment(environment: dict[str, str], workdir: Path) -> None:
    """Point one run's bytecode at the installation (read only) or at the gate's private directory.

    The private directory is used once it exists: the gate creates it before the first run
    when the installation has no bytecode (or the user set ``PYTHONPYCACHEPREFIX``), and
    otherwise seeds it after the first full run (:func:`seed_private_cache`).
    """
    cache = private_cache(workdir)
    if not cache.is_dir() and ("PYTHONPYCACHEPREFIX" in environment or not _installation_compiled()):
        cache.mkdir(mode=0o700, exist_ok=True)
    if cache.is_dir():
        environment.pop("PYTHONDONTWRITEBYTECODE", None)
        environment["PYTHONPYCACHEPREFIX"] = str(cache)
    else:
        environment["PYTHONDONTWRITEBYTECODE"] = "1"


def _installed_roots() -> list[str]:
    """The interpreter's installation: the standard library and its site-packages live under these."""
    roots = {os.path.realpath(root) for root in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    return sorted(root.rstrip(os.sep) + os.sep for root in roots)


def _is_plain_absolute(path: str) -> bool:
    """An absolute path with no ``.``/``..`` component: it names one place, and mirroring it stays inside the cache."""
    return os.path.isabs(path) and os.path.normpath(path) == path and "\0" not in path


def _links_to(entry: str, loaded: set[str], cache_tag: str) -> bool:
    """Whether ``__pycache__/<entry>`` is the non-optimised bytecode of a loaded module, Python's or pytest's."""
    stem, dot, rest = entry.partition(".")
    return bool(dot) and stem in loaded and rest.endswith(".pyc") and (
        rest == f"{cache_tag}.pyc" or rest.startswith(f"{cache_tag}-pytest-"))


def start_seeding(workdir: Path, module_files: list[str], cache_tag: str) -> threading.Thread:
    """Create the private bytecode directory now (the next run uses it), and fill it with
    :func:`seed_private_cache` in a thread that the caller joins before the directory is removed.

    A link takes a fraction of a millisecond, a run loads a thousand modules or more, and the
    next run imports them in the order the first one did, which is the order they are linked in:
    the thread stays ahead of the run's imports, and a module it has not linked yet is simply
    compiled by the run (the link then finds the run's file in place and is skipped).
    """
    # Here, not only in the thread: the next run must find the directory even if the thread has not started.
    private_cache(workdir).mkdir(mode=0o700, exist_ok=True)
    seeding = threading.Thread(target=seed_private_cache, args=(workdir, module_files, cache_tag),
                               name="gate-bytecode-seed", daemon=True)
    seeding.start()
    return seeding


def seed_private_cache(workdir: Path, module_files: list[str], cache_tag: str) -> int:
    """Create the private bytecode directory, with links to the installation's bytecode of the
    installed modules in ``module_files`` (what the first run loaded). Returns how many links were made.

    For a module ``<directory>/<stem>.py`` each ``<directory>/__pycache__/<stem>.<tag>*.pyc``
    (Python's own, and pytest's rewritten-assert file when an earlier plain run left one) is
    linked from where Python and pytest look under a prefix, ``<cache>/<directory>/``. Both still
    check a file's header against the source; a stale file is compiled again and replaced
    (written beside the link and renamed over it, never written through it). Only modules under
    the interpreter's installation are linked, not the project's.
    """
    cache = private_cache(workdir)
    cache.mkdir(mode=0o700, exist_ok=True)
    if not _CACHE_TAG.match(cache_tag):
        return 0
    stems: dict[str, set[str]] = {}
    for source in module_files[:MAX_LINKS]:
        if isinstance(source, str) and source.endswith(".py") and _is_plain_absolute(source):
            head, name = os.path.split(source)
            stems.setdefault(head, set()).add(name[:-3])
    roots = _installed_roots()
    made = 0
    for head, loaded in stems.items():
        real = os.path.realpath(head) + os.sep
        if not any(real.startswith(root) for root in roots):
            continue
        try:
            compiled = os.listdir(os.path.join(head, "__pycache__"))
        except OSError:
            continue
        mirrored = os.path.join(str(cache), head.lstrip(os.sep))
        wanted = [entry for entry in compiled if _links_to(entry, loaded, cache_tag)]
        if wanted:
            os.makedirs(mirrored, mode=0o700, exist_ok=True)
        for entry in wanted:
            try:
                os.symlink(os.path.join(head, "__pycache__", entry), os.path.join(mirrored, entry))
            except FileExistsError:
                continue
            made += 1
            if made >= MAX_LINKS:
                return made
    return made
