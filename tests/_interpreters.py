"""Other Python interpreters with nnx-lint installed, for tests that compare interpreters.

An interpreter is found on ``PATH`` (``python3.10`` ... ``python3.13``), under pyenv's
versions (``$PYENV_ROOT``, default ``~/.pyenv``), or in ``NNX_LINT_TEST_PYTHONS``
(executables separated by the path separator). Each gets its own virtualenv with this
checkout installed editable, as a user would install it: built once, kept in pytest's
cache directory (``.pytest_cache``), so later runs start at once and always run the code
of this checkout.
"""
from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from _support import REPO

SUPPORTED = ((3, 10), (3, 11), (3, 12), (3, 13))


def _version_of(executable: str) -> tuple[int, int] | None:
    try:
        done = subprocess.run([executable, "-c", "import sys; print(*sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None  # a pyenv shim for a version that is installed but not selected
    major, minor = done.stdout.split()
    return int(major), int(minor)


def _candidates() -> list[str]:
    found = [entry for entry in os.environ.get("NNX_LINT_TEST_PYTHONS", "").split(os.pathsep) if entry]
    found.append(sys.executable)
    found += [path for major, minor in SUPPORTED if (path := shutil.which(f"python{major}.{minor}"))]
    pyenv_root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    found += sorted(glob.glob(os.path.join(pyenv_root, "versions", "3.*", "bin", "python3")))
    return found


def find_interpreters() -> dict[tuple[int, int], str]:
    """One executable per supported ``(major, minor)`` version found on this machine."""
    interpreters: dict[tuple[int, int], str] = {}
    for executable in _candidates():
        version = _version_of(executable)
        if version in SUPPORTED and version not in interpreters:
            interpreters[version] = executable
    return dict(sorted(interpreters.items()))


def environment_for(executable: str, cache_dir: Path) -> Path:
    """The ``bin`` directory of a virtualenv of ``executable`` with this checkout installed
    editable (``nnx-lint`` and its dependencies), built on first use."""
    key = hashlib.sha256(f"{os.path.realpath(executable)}|{REPO}".encode()).hexdigest()[:16]
    venv = cache_dir / key
    scripts = venv / ("Scripts" if os.name == "nt" else "bin")
    if (scripts / "nnx-lint").exists() or (scripts / "nnx-lint.exe").exists():
        return scripts
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    installed = subprocess.run([str(scripts / "python"), "-m", "pip", "install", "-q", "-e", str(REPO)],
                               capture_output=True, text=True, timeout=900)
    if installed.returncode != 0:
        shutil.rmtree(venv, ignore_errors=True)
        raise RuntimeError(f"installing nnx-lint for {executable} failed:\n{installed.stdout}{installed.stderr}")
    return scripts
