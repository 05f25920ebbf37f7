"""Shared test setup: nnx-lint's bytecode is compiled once, and every test gets its own user cache directory."""
from __future__ import annotations

import compileall
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

#: Directories of analysed code (the rules' fixtures, the gate's sample project, the server's
#: workspace, the flip scripts): the tests lint them, and pytest must never import or run them.
#: A fixture's name can look like a test module's (``NNX101_classes_defined_in_a_test.py``:
#: its name is what it tests), and pytest would otherwise collect it and run its functions.
collect_ignore_glob = ["fixtures/*", "fixtures_gate/*", "fixtures_server/*", "flip_scripts/*"]

# pytest keeps each test module, its asserts rewritten, as bytecode in __pycache__ (ignored by git),
# unless bytecode writing is off: then every session rewrites and compiles all ~230 test modules
# again, in each xdist worker (about 10 s of CPU per worker on this suite). The suite writes it
# whatever PYTHONDONTWRITEBYTECODE says, as pytest_sessionstart below does for the packages; the
# variable still reaches the processes the tests start.
sys.dont_write_bytecode = False

#: The packages the suite's subprocesses import (CLI runs, lint and fix workers, the gate).
_PACKAGES = ("nnx_lint", "checkers", "tree_runtime")


def pytest_sessionstart(session):
    """Compile the packages' bytecode once, before any test starts a process.

    Hundreds of tests start an ``nnx-lint`` process, and lint and fix workers start with ``-I -B``
    (they never write bytecode next to the code). Where ``PYTHONDONTWRITEBYTECODE`` is set, or
    in a fresh checkout, each of those processes would otherwise compile every module it
    imports again: about 0.5 s of CPU per run with findings. ``compileall`` writes the usual
    ``__pycache__`` files (ignored by git) whatever that variable says; a process reads them
    when they match the source. Done by the controlling process only, not by each xdist worker.
    """
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for package in _PACKAGES:
        compileall.compile_dir(REPO / package, quiet=1, workers=1)


@pytest.fixture(autouse=True)
def private_user_cache(tmp_path_factory, monkeypatch):
    """Point nnx-lint's user cache (signed caches and their key) at a fresh directory, never ~/.cache."""
    directory = tmp_path_factory.mktemp("user-cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(directory))
    return directory / "nnx-lint"
