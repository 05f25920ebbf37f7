"""The import layers hold: ``lint-imports`` passes on the contracts in ``pyproject.toml``.

The contracts (``[tool.importlinter]``): rules import the core only through ``nnx_lint.api``;
``tree_runtime`` imports neither ``nnx_lint`` nor the rules; linting imports no runtime (flax,
jax) and none of the optional libraries of fixes and the server; ``nnx_lint``'s layers; and
``tree_runtime``'s layers, which leave it no import cycle. A copy of the packages with one
violation planted per contract shows that each contract can fail. Every module and package
directly in ``nnx_lint/`` is named in ``core-layers``, and there are few of them: the code lives
in its layer's package.

The gate's error categories come from ``tree_runtime/_errors.py``, loaded by file (the
package imports jax): an edge no contract sees, so a test runs the categorisation with jax
unimportable.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _support import REPO

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

CONTRACT_TABLES = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
CONTRACTS = [contract["name"] for contract in CONTRACT_TABLES]
#: The most modules ``nnx_lint/`` may hold directly: the rest live in their layer's package.
TOP_LEVEL_MODULES_AT_MOST = 15


def lint_imports_executable() -> str:
    """The ``lint-imports`` console script beside the interpreter running the tests."""
    beside = Path(sys.executable).parent / ("lint-imports.exe" if os.name == "nt" else "lint-imports")
    found = str(beside) if beside.exists() else shutil.which("lint-imports")
    if found is None:
        pytest.fail("lint-imports is not installed (pip install -e '.[test]')")
    return found


def lint_imports(root: Path) -> tuple[int, str]:
    """Run ``lint-imports`` on the packages under ``root`` with ``root/pyproject.toml``."""
    env = {**os.environ, "PYTHONPATH": str(root), "NO_COLOR": "1", "COLUMNS": "400"}
    result = subprocess.run([lint_imports_executable(), "--no-cache"], cwd=root, env=env, capture_output=True,
                            text=True, timeout=120)
    return result.returncode, result.stdout + result.stderr


def verdicts(output: str) -> dict[str, str]:
    """Contract name -> ``KEPT`` / ``BROKEN``, from the report's summary lines."""
    flat = " ".join(output.split())
    return {name: match.group(1) for name in CONTRACTS
            if (match := re.search(re.escape(name) + r" (KEPT|BROKEN)", flat))}


def test_the_contracts_hold():
    status, output = lint_imports(REPO)
    assert verdicts(output) == {name: "KEPT" for name in CONTRACTS}, output
    assert status == 0, output


def test_every_top_level_entry_of_nnx_lint_is_in_a_layer():
    """``nnx_lint/`` holds the layer packages and the few entry points users name, each named in
    ``core-layers`` (a layers contract checks only what it names: a module left out is unchecked)."""
    contract = next(table for table in CONTRACT_TABLES if table["id"] == "core-layers")
    layered = {name.strip() for layer in contract["layers"] for name in re.split(r"[:|]", layer)}
    package = REPO / "nnx_lint"
    modules = {path.stem for path in package.glob("*.py")}
    packages = {path.name for path in package.iterdir() if (path / "__init__.py").is_file()}
    assert {f"nnx_lint.{name}" for name in (modules - {"__init__"}) | packages} == layered
    assert len(modules) <= TOP_LEVEL_MODULES_AT_MOST, sorted(modules)


#: Issue 25's size limit: a module longer than this is doing more than one job.
MODULE_LINES_AT_MOST = 600


def test_no_module_of_the_core_or_the_rules_is_over_the_size_limit():
    sizes = {str(path.relative_to(REPO)): len(path.read_text(encoding="utf-8").splitlines())
             for package in ("nnx_lint", "checkers") for path in (REPO / package).rglob("*.py")}
    assert len(sizes) > 100, "the modules were found"
    assert {path: lines for path, lines in sizes.items() if lines > MODULE_LINES_AT_MOST} == {}


#: One violation per contract: (file, line appended to it).
PLANTED = [
    ("checkers/graph_opt_in/nnx901_graph_mode_opt_in.py", "from nnx_lint.analysis.rule import Rule as _PlantedRule"),
    ("tree_runtime/_filters.py", "import nnx_lint.base.bounds as _planted_bounds"),
    ("nnx_lint/analysis/names.py", "import jax as _planted_jax"),
    ("nnx_lint/base/facts.py", "import nnx_lint.engine.walk as _planted_engine"),
    ("tree_runtime/_variables.py", "from . import _module as _planted_cycle"),
]


def test_each_contract_fails_on_a_planted_violation(tmp_path):
    for package in ("nnx_lint", "checkers", "tree_runtime"):
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__", "pages"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    status, output = lint_imports(tmp_path)
    assert status == 0 and set(verdicts(output).values()) == {"KEPT"}, "the copy must pass as the repository does"
    for relative, line in PLANTED:
        with (tmp_path / relative).open("a", encoding="utf-8") as module:
            module.write(f"\n{line}\n")
    status, output = lint_imports(tmp_path)
    assert verdicts(output) == {name: "BROKEN" for name in CONTRACTS}, output
    assert status != 0


#: Run in a fresh interpreter: jax, flax and the ``tree_runtime`` package cannot be imported.
WITHOUT_JAX = textwrap.dedent("""\
    import json, sys
    for name in ("jax", "jaxlib", "flax", "optax", "tree_runtime"):
        sys.modules[name] = None
    from pathlib import Path
    from nnx_lint.gate import attribution, classify, command, report
    from nnx_lint.gate.results import category_from_text, read_junit
    texts = [category_from_text(type_name, message) for type_name, message in json.loads(sys.argv[1])]
    junit = read_junit(Path(sys.argv[2]), Path(sys.argv[3]))
    print(json.dumps({"texts": texts, "junit": {t.nodeid: t.failure.category for t in junit.tests.values()}}))
    """)

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="2">
<testcase classname="tests.test_model" name="test_tied" file="tests/test_model.py" time="0.1">
<failure type="ValueError" message="Duplicate Param found at paths [0].a and [0].b: does not support Variable aliasing">
tests/test_model.py:3: ValueError</failure></testcase>
<testcase classname="tests.test_model" name="test_loop" file="tests/test_model.py" time="0.1">
<failure type="RecursionError" message="maximum recursion depth exceeded">tests/test_model.py:5: RecursionError</failure>
</testcase></testsuite></testsuites>
"""


def test_the_gate_categorises_errors_without_jax(tmp_path):
    cases = [["ValueError", "Cycle detected for Parent"], ["flax.errors.TraceContextError", "Cannot mutate Param"],
             ["TypeError", "Argument 'Foo()' of type <class 'app.models.Foo'> is not a valid JAX type."],
             ["KeyError", "'x'"]]
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-c", WITHOUT_JAX, json.dumps(cases), str(junit), str(tmp_path)],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["texts"] == ["cycle", "trace-context", "non-pytree", "other:KeyError"]
    assert found["junit"] == {"tests/test_model.py::test_tied": "aliasing", "tests/test_model.py::test_loop": "cycle"}
