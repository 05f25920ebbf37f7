"""Module resolution follows Python's import system (issue 44, c4).

With ``models/__init__.py`` beside ``models.py`` Python imports the package; a harmless decoy
``models.py`` must not hide the package's break. :func:`imported_file` is checked against
CPython itself (``importlib.util.find_spec`` in a subprocess, on the same layouts), and the
decoy against the real console scripts of every front-end.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nnx_lint.analysis.package_roots import DirectoryListing, find_module_file, imported_file

SCRIPTS = Path(sys.executable).parent
BREAKING = ("from flax import nnx\nclass Noisy(nnx.Module):\n    def __init__(self, rngs):\n"
            "        self.rngs = rngs\n        self.linear = nnx.Linear(2, 2, rngs=rngs)\n")
DECOY = ("from flax import nnx\nclass Noisy(nnx.Module):\n    def __init__(self, rngs):\n"
         "        self.linear = nnx.Linear(2, 2, rngs=rngs)\n")


def python_imports(search_path: list[Path], name: str) -> str | None:
    """The origin CPython finds for ``name`` with ``search_path`` as ``sys.path`` (None: none, or
    a namespace package). Run isolated (``-I``): only the scratch tree is searched."""
    program = ("import importlib.util, sys\nsys.path[:] = sys.argv[2:]\n"
               "try:\n    spec = importlib.util.find_spec(sys.argv[1])\nexcept ImportError:\n    spec = None\n"
               "print(spec.origin if spec is not None and spec.has_location else '')\n")
    result = subprocess.run([sys.executable, "-I", "-c", program, name, *map(str, search_path)],
                            capture_output=True, text=True, check=True, timeout=60)
    return result.stdout.strip() or None


#: (files to create, the name imported, how many roots): the decoys and orders of the issue.
LAYOUTS = {
    "package-beats-module": (["models.py", "models/__init__.py"], "models", 1),
    "module-beats-namespace": (["models.py", "models/sub.py"], "models", 1),
    "no-submodule-of-a-module": (["models.py", "models/sub.py"], "models.sub", 1),
    "stub-is-never-imported": (["models.py", "models.pyi"], "models", 1),
    "stub-init-is-no-package": (["models.py", "models/__init__.pyi"], "models", 1),
    "only-a-stub": (["models.pyi"], "models", 1),
    "nested-package-beats-module": (["pkg/__init__.py", "pkg/models.py", "pkg/models/__init__.py"], "pkg.models", 1),
    "namespace-gap": (["pkg/__init__.py", "pkg/sub/mod.py"], "pkg.sub.mod", 1),
    "namespace-over-two-roots": (["r0/ns/a.py", "r1/ns/b.py"], "ns.b", 2),
    "later-module-beats-earlier-namespace": (["r0/pkg/a.py", "r1/pkg.py"], "pkg", 2),
    "regular-package-stops-the-search": (["r0/pkg/__init__.py", "r1/pkg/extra.py"], "pkg.extra", 2),
    "first-root-wins": (["r0/mod.py", "r1/mod/__init__.py"], "mod", 2),
    "bytecode-package-beats-module": (["models.py", "models/__init__.pyc"], "models", 1),
    "extension-beats-source": (["fast.py", "fast.so"], "fast", 1),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("listed", [False, True], ids=["stat", "listing"])
def test_resolution_is_what_python_imports(tmp_path, layout, listed):
    files, name, root_count = LAYOUTS[layout]
    for file in files:
        (tmp_path / file).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / file).write_bytes(b"" if not file.endswith(".so") else b"\x7fELF")
    roots = [tmp_path / f"r{index}" for index in range(root_count)] if root_count > 1 else [tmp_path]
    expected = python_imports(roots, name)
    if expected is not None and not expected.endswith(".py"):
        expected = None  # Python takes it from bytecode or an extension: nothing nnx-lint can read
    if layout != "extension-beats-source":  # a fake extension that CPython does not load
        found = imported_file(name, roots, DirectoryListing() if listed else None)
        assert (str(found) if found else None) == (str(Path(expected).resolve()) if expected else None)
    else:
        assert imported_file(name, roots, DirectoryListing() if listed else None) is None
    assert find_module_file(name, roots) == imported_file(name, roots)


def decoy_repository(root: Path, package: str = "models") -> Path:
    """The round-three layout: the breaking class in ``<package>/__init__.py``, a harmless decoy
    of the same name in ``<package>.py``, and ``main.py`` using it under ``nnx.grad``."""
    (root / package.replace(".", "/")).mkdir(parents=True)
    for parent in package.split(".")[:-1]:
        (root / parent / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    (root / (package.replace(".", "/") + ".py")).write_text(DECOY)
    (root / package.replace(".", "/") / "__init__.py").write_text(BREAKING)
    (root / "main.py").write_text(f"from flax import nnx\nfrom {package} import Noisy\nmodel = Noisy(nnx.Rngs(0))\n"
                                  "grads = nnx.grad(lambda m: 0.0)(model)\n")
    return root


FRONT_ENDS = {
    "cli": ["nnx-lint", "check", "main.py", "--no-cache", "-j1"],
    "flake8": ["flake8", "--isolated", "--select", "NNX", "main.py"],
    "pylint": ["pylint", "--rcfile=/dev/null", "--disable=all", "--enable=nnx", "--load-plugins=nnx_lint.pylint",
               "main.py"],
}


@pytest.mark.parametrize("package", ["models", "pkg.models"])
@pytest.mark.parametrize("front_end", sorted(FRONT_ENDS))
def test_a_decoy_module_does_not_hide_the_package_python_imports(tmp_path, front_end, package):
    root = decoy_repository(tmp_path / "repo", package)
    command = FRONT_ENDS[front_end]
    result = subprocess.run([str(SCRIPTS / command[0]), *command[1:]], cwd=root, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode != 0, result.stdout + result.stderr
    assert "main.py" in result.stdout and ("NNX" in result.stdout or "E9" in result.stdout), result.stdout


def test_the_cache_notices_a_decoy_that_appears(tmp_path):
    """The module search is a cache dependency: a decoy added later is the same search's new
    answer only if Python's order says so, and the package keeps its finding."""
    root = decoy_repository(tmp_path / "repo")
    (root / "models.py").unlink()
    command = [str(SCRIPTS / "nnx-lint"), "check", "main.py", "--cache-dir", str(tmp_path / "cache"), "-j1"]
    first = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=300)
    (root / "models.py").write_text(DECOY)
    second = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=300)
    assert first.returncode == second.returncode == 1, second.stdout
