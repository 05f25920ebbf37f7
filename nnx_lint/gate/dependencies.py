"""Breaks whose cause lies in an installed dependency (a library built on NNX).

A project's test can break in Tree Mode inside a library it calls: google/tunix's LoRA tests break in
google/qwix, which stores one ``nnx.Rngs`` on every Module of a walk. No frame of the project is at the
cause, so the project's own findings cannot explain the break. For such a break, the gate lints the
files of the traceback's frames that lie in installed packages (``site-packages``, ``dist-packages``),
except flax and jax themselves (they are the runtime under test: a frame there says where Tree Mode
raised, not why), and matches those findings to those frames exactly as it does the project's.

Linting a dependency reads its files; like ``nnx-lint check``, it never imports or runs them. Only
files that mention ``nnx`` are analysed (the linter's text pre-filter), so pytest's, absl's or numpy's
frames cost a read each.
"""
from __future__ import annotations

from pathlib import Path

from nnx_lint.gate.results import Failure, Frame

#: Directories that hold installed packages.
INSTALLED = ("site-packages", "dist-packages")
#: Installed packages whose frames are never a dependency's cause: the runtime whose two modes are
#: compared (its frames are where Tree Mode raised).
RUNTIME_PACKAGES = frozenset({"flax", "jax", "jaxlib"})


def installed_location(file: str) -> tuple[Path, str] | None:
    """``(the installed-packages directory, the top-level package or module name)`` of a file
    that lies in one (``.../site-packages/qwix/_src/model.py`` gives ``(.../site-packages, "qwix")``);
    None for any other file."""
    parts = Path(file).parts
    for index in range(len(parts) - 2, -1, -1):
        if parts[index] in INSTALLED:
            top = parts[index + 1]
            return Path(*parts[:index + 1]), top[:-3] if top.endswith(".py") else top
    return None


def dependency_frames(failure: Failure | None) -> list[Frame]:
    """The failure's frames in installed dependencies (not flax or jax), outermost first."""
    if failure is None:
        return []
    found = []
    for frame in failure.frames:
        location = installed_location(frame.file)
        if location is not None and location[1] not in RUNTIME_PACKAGES and frame.file.endswith(".py"):
            found.append(frame)
    return found
