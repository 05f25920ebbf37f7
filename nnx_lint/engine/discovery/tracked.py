"""Which files git tracks: ``.gitignore`` never hides a tracked file.

git applies ``.gitignore`` and ``.git/info/exclude`` only to *untracked* files (gitignore(5):
"A gitignore file specifies intentionally untracked files"; "Files already tracked by Git
are not affected"). A pull request can commit ``*.py`` to a ``.gitignore`` beside tracked
code, so a walk that applied the patterns to every file would report "All checks passed"
on code it never read. :class:`TrackedFiles` asks git which files the index holds, and the
walk (:func:`nnx_lint.engine.runner.discover`) drops a file or prunes a directory only when
the patterns ignore it *and* it holds nothing git tracks.

The repository of a path is the nearest directory at or above it holding ``.git`` (a
directory, or a submodule's or worktree's ``gitdir:`` file), so a submodule's files are
judged by the submodule's own index. A nested repository below a directory that the outer
repository neither tracks nor records as a submodule, and that its ``.gitignore`` ignores,
is not looked for (the walk does not enter ignored directories).

git is run with no way for the repository to run code: ``ls-files`` runs no hook, filter or
pager on a pipe, and ``core.fsmonitor`` (a command git would run on reading the index) is
forced off on the command line, which wins over every configuration file. ``--git-dir`` and
``--work-tree`` name the repository, so neither the environment (``GIT_DIR``,
``GIT_INDEX_FILE``, ... are dropped) nor ``core.worktree`` moves it. When git is missing,
fails, or takes longer than :data:`GIT_TIMEOUT_SECONDS`, every file of that repository
counts as tracked: the patterns then hide nothing there (more files are linted, never fewer).

The same holds for what a walk skips by default (:func:`skipped_by_default`): a directory
named like a build output or an environment (``build``, ``dist``, ``.venv``, ...) or holding
``pyvenv.cfg`` is skipped only when git tracks nothing in it (and, as before, when git cannot
tell: a whole virtualenv linted for want of git would cost more than it could show).
"""
from __future__ import annotations

import os

#: A repository whose index git cannot list in this time is treated as "everything tracked".
GIT_TIMEOUT_SECONDS = 30

#: Configuration forced on the command line: it wins over the repository's ``.git/config``.
#: ``core.fsmonitor`` names a command git runs when it reads the index (a hook path or, since
#: git 2.36, a boolean for the built-in daemon): off, git reads the index alone.
_HARDENING = ("-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false")


def git_listing(top: str) -> frozenset[str] | None:
    """The paths (``/``-separated, relative to ``top``) that the index of the repository at
    ``top`` holds, files and submodules, with every directory above them; None when git
    cannot tell (not installed, not a repository, a broken index, too slow)."""
    import shutil
    import subprocess  # here: a run whose files are all named (or stamped) never starts git

    git = shutil.which("git")
    if git is None:
        return None
    # The caller's GIT_* variables (GIT_DIR, GIT_INDEX_FILE, GIT_CONFIG_PARAMETERS set by a hook
    # that runs nnx-lint) describe another repository, or add configuration: none is passed on.
    environment = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    environment.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", GIT_NO_LAZY_FETCH="1")
    command = [git, "--no-pager", "--git-dir", os.path.join(top, ".git"), "--work-tree", top, *_HARDENING,
               "ls-files", "-z", "--full-name"]
    try:
        completed = subprocess.run(command, cwd=top, env=environment, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   timeout=GIT_TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if completed.returncode != 0:
        return None
    paths: set[str] = set()
    for entry in completed.stdout.split(b"\0"):
        if not entry:
            continue
        path = os.fsdecode(entry)
        while path and path not in paths:
            paths.add(path)  # the entry, then each directory above it, up to one already known
            path = path.rpartition("/")[0]
    return frozenset(paths)


def _index_stamp(top: str) -> tuple:
    """What changes when the index of the repository at ``top`` is rewritten: its ``index``
    file's modification time and size (the ``.git`` directory's, or the one a ``gitdir:``
    file names)."""
    git_path = os.path.join(top, ".git")
    try:
        if os.path.isfile(git_path):
            with open(git_path, "rb") as handle:
                first = handle.read(4096).split(b"\n", 1)[0]
            if first.startswith(b"gitdir:"):
                git_path = os.path.join(top, os.fsdecode(first[len(b"gitdir:"):].strip()))
        status = os.stat(os.path.join(git_path, "index"))
        return status.st_mtime_ns, status.st_size
    except (OSError, ValueError):
        return ()


class TrackedFiles:
    """Answers "may git track this path?", asking git once per repository and index version,
    and only for a path that would otherwise be dropped (most walks never ask)."""

    def __init__(self) -> None:
        self._tops: dict[str, str | None] = {}  # directory -> its repository's top (None: none)
        self._listings: dict[str, tuple[tuple, frozenset[str] | None]] = {}  # top -> (stamp, listing)

    def holds_tracked(self, path: str, is_dir: bool, when_unknown: bool = True) -> bool:
        """Whether ``path`` is a tracked file or a directory holding a tracked file or a
        submodule, by the index of its repository; ``when_unknown`` when that index cannot be
        read, False outside any repository."""
        absolute = os.path.abspath(path)
        directory = absolute if is_dir else os.path.dirname(absolute)
        top = self._top(directory)
        if top is None:
            return False
        if is_dir and top == absolute:
            # A nested repository's own top: it holds what its index holds, and is also an
            # entry (a submodule) of the repository above it, if that one records it.
            own = self._listing(top)
            if own is None and when_unknown or own:
                return True
            outer = self._top(os.path.dirname(absolute)) if os.path.dirname(absolute) != absolute else None
            return outer is not None and self._holds(outer, absolute, when_unknown)
        return self._holds(top, absolute, when_unknown)

    def _holds(self, top: str, absolute: str, when_unknown: bool) -> bool:
        listing = self._listing(top)
        if listing is None:
            return when_unknown
        return os.path.relpath(absolute, top).replace(os.sep, "/") in listing

    def _listing(self, top: str) -> frozenset[str] | None:
        stamp = _index_stamp(top)  # a long-lived process (the server, a plugin) sees a new commit
        known = self._listings.get(top)
        if known is None or known[0] != stamp:
            known = self._listings[top] = (stamp, git_listing(top))
        return known[1]

    def _top(self, directory: str) -> str | None:
        """The nearest directory at or above ``directory`` holding ``.git``."""
        if directory not in self._tops:
            if os.path.lexists(os.path.join(directory, ".git")):
                self._tops[directory] = directory
            else:
                parent = os.path.dirname(directory)
                self._tops[directory] = self._top(parent) if parent != directory else None
        return self._tops[directory]


_SHARED = TrackedFiles()


def shared_tracked_files() -> TrackedFiles:
    """The process's :class:`TrackedFiles` (a listing is asked again when its index changes)."""
    return _SHARED


def skipped_by_default(directory: str, tracked: TrackedFiles | None = None) -> bool:
    """Whether a walk skips ``directory`` without being told to: a version-control directory;
    or a default exclude (``build``, ``.venv``, ...) or a virtualenv (it holds ``pyvenv.cfg``)
    that holds no file git tracks. A pull request can name a directory ``build`` or commit a
    ``pyvenv.cfg`` beside its code; what git tracks there is the project's code all the same."""
    from nnx_lint.engine.config import VCS_DIRECTORIES, default_excluded

    name = os.path.basename(os.path.normpath(directory))
    if name in VCS_DIRECTORIES:
        return True
    if not default_excluded(name) and not os.path.exists(os.path.join(directory, "pyvenv.cfg")):
        return False
    # When git cannot tell, the directory is skipped as before: a virtualenv linted whole
    # because git is missing would cost more than it could show.
    return not (tracked or _SHARED).holds_tracked(directory, is_dir=True, when_unknown=False)
