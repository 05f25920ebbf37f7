"""The plugins import everything they need when they load, never from the linted project.

pylint puts the linted file's directory first on ``sys.path`` while it checks the file. A
module that nnx-lint imported lazily at that point (``hashlib`` on the first file, once)
was taken from the linted project: a planted ``hashlib.py`` ran. Here a project plants
modules under the names of every standard-library module and of nnx-lint's own imports,
each writing a marker file when imported, and the plugins must import none of them.
"""
from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _support import REPO

#: Names that the lint path really uses; planted as modules or packages.
OWN_IMPORTS = ("hashlib", "json", "tokenize", "ast", "copy", "textwrap", "traceback", "pkgutil", "tomllib",
               "tomli", "astroid", "checkers", "nnx_lint", "flax", "jax")
LINTED = textwrap.dedent("""\
    import hashlib, json, tokenize
    from flax import nnx
    from helper import Axes
    f = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))
    h = nnx.vmap(g, in_axes=(Axes({...: 0}),))

    class Tied(nnx.Module):
        def __init__(self, rngs: nnx.Rngs):
            self.a = nnx.Linear(2, 2, rngs=rngs)
            self.b = self.a
    """)
HELPER = "from flax import nnx\nAxes = nnx.StateAxes\n"
EXPECTED = {(4, "NNX201"), (5, "NNX201"), (10, "NNX101")}


@pytest.fixture
def hostile_project(tmp_path):
    """``project/model.py`` next to modules that leave a marker in ``markers/`` when imported."""
    project, markers = tmp_path / "project", tmp_path / "markers"
    project.mkdir()
    markers.mkdir()
    (project / "model.py").write_text(LINTED)
    (project / "helper.py").write_text(HELPER)
    names = {name for name in sys.stdlib_module_names if name.isidentifier()} | set(OWN_IMPORTS)
    for name in sorted(names - {"__future__", "sys", "builtins"}):
        body = f"open({str(markers / name)!r}, 'w').close()\n"
        if name in ("checkers", "nnx_lint", "astroid", "flax", "jax"):
            (project / name).mkdir()
            (project / name / "__init__.py").write_text(body)
        else:
            (project / f"{name}.py").write_text(body)
    neutral = tmp_path / "neutral"
    neutral.mkdir()
    return project, markers, neutral


def _run(command, cwd):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def test_pylint_plugin_imports_nothing_from_the_linted_project(hostile_project):
    project, markers, neutral = hostile_project
    result = _run([sys.executable, "-m", "pylint", "--load-plugins=nnx_lint.pylint", "--persistent=n",
                   "--disable=all", "--enable=nnx", "--output-format=json", str(project / "model.py")], neutral)
    planted = sorted(p.name for p in markers.iterdir())
    assert planted == [], f"the plugin imported {planted} from the linted project\n{result.stderr[-2000:]}"
    found = {(m["line"], m["message"].split()[0]) for m in json.loads(result.stdout)}
    assert found == EXPECTED, result.stderr[-2000:]


def test_flake8_plugin_imports_nothing_from_the_linted_project(hostile_project):
    project, markers, _neutral = hostile_project
    flake8 = shutil.which("flake8", path=os.path.dirname(sys.executable)) or shutil.which("flake8")
    if flake8 is None:
        pytest.skip("flake8 is not installed")
    result = _run([flake8, "--select", "NNX", "--format", "%(row)d:%(code)s", "model.py"], project)
    planted = sorted(p.name for p in markers.iterdir())
    assert planted == [], f"the plugin imported {planted} from the linted project\n{result.stderr[-2000:]}"
    assert {tuple(item.split(":")) for item in result.stdout.split()} == {(str(a), b) for a, b in EXPECTED}


def _late_imports(path: Path) -> set[str]:
    """Modules imported inside functions of ``path`` (absolute imports only; relative ones stay in the package)."""
    found = set()
    for function in ast.walk(ast.parse(path.read_text())):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
    return found


def _source_of(module: str) -> Path:
    """The file of a dotted module of the checkout (a package's ``__init__.py``)."""
    base = REPO.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


@pytest.mark.slow
def test_every_late_import_on_the_lint_path_is_loaded_with_the_plugin():
    """A new ``import x`` inside a lint-time function must be added to nnx_lint.engine.eager's lists."""
    from nnx_lint.engine.eager import lint_path_modules

    lint_path = [_source_of(name) for name in lint_path_modules()]
    assert REPO / "nnx_lint" / "analysis" / "classes.py" in lint_path, "the lint path misses the analysis"
    late = set()
    for path in [*lint_path, *sorted((REPO / "checkers").rglob("*.py"))]:
        late |= _late_imports(path)
    assert late, "the scan found nothing: it is broken"
    probe = ("import json, sys\nfrom nnx_lint.engine.eager import load_lint_path\nload_lint_path()\n"
             "print(json.dumps(sorted(sys.modules)))\n")
    result = _run([sys.executable, "-c", probe], REPO)
    loaded = set(json.loads(result.stdout))
    assert sorted(late - loaded) == [], "imported lazily at lint time but not loaded by nnx_lint.engine.eager"
