"""Start-up (issue 45): ``nnx-lint --version`` imports nothing but the command line's own module,
and each subcommand builds (and imports) only its own options. Checked on the real console script
from ``-X importtime``'s list of the modules a run imports (``PYTHONPROFILEIMPORTTIME``), never by
timing: ``bench/startup_ratio.py`` measures the time against a bare interpreter.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nnx_lint.base.cache_store import RACY_SECONDS

#: The console script installed beside this interpreter (the one a user runs).
CONSOLE_SCRIPT = str(Path(sys.executable).with_name("nnx-lint"))
#: What ``--version`` has no use for: the engine, the analysis, the rules and astroid, the gate.
HEAVY = ("astroid", "checkers", "nnx_lint.engine", "nnx_lint.analysis", "nnx_lint.gate", "nnx_lint.reporting",
         "nnx_lint.frontends.cli_ci", "nnx_lint.base.syntax")


def _imported(arguments: list[str], cwd: Path, environment: dict[str, str] | None = None
              ) -> tuple[subprocess.CompletedProcess, set[str]]:
    environment = {**(os.environ if environment is None else environment), "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run([CONSOLE_SCRIPT, *arguments], cwd=cwd, env=environment, capture_output=True, text=True,
                          timeout=300)
    modules = {line.rpartition("|")[2].strip() for line in done.stderr.splitlines()
               if line.startswith("import time:") and "|" in line}
    assert modules, done.stderr
    return done, modules


def _heavy(modules: set[str]) -> set[str]:
    return {module for module in modules if module.startswith(HEAVY)}


def test_version_imports_no_engine_rules_astroid_or_gate(tmp_path):
    done, modules = _imported(["--version"], tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("nnx-lint "), done.stdout
    assert "nnx_lint" in modules
    assert _heavy(modules) == set()


def test_help_lists_every_command_without_importing_them(tmp_path):
    done, modules = _imported(["--help"], tmp_path)
    assert done.returncode == 0
    for command in ("check", "rule", "rules", "server", "gate"):
        assert command in done.stdout
    assert _heavy(modules) == set()


def test_check_does_not_import_the_gate(tmp_path):
    (tmp_path / "clean.py").write_text("x = 1\n")
    done, modules = _imported(["check", "--no-cache", "clean.py"], tmp_path)
    assert done.returncode == 0, done.stdout
    assert "nnx_lint.engine.runner" in modules
    assert not {module for module in modules if module.startswith("nnx_lint.gate")}


def test_the_gates_options_are_still_built_when_it_is_chosen(tmp_path):
    done, modules = _imported(["gate", "--help"], tmp_path)
    assert done.returncode == 0 and "--serial-reruns" in done.stdout and "EXECUTES" in done.stdout


#: What a check that the cache answers whole has no use for: astroid and the rules, the analysis
#: (but for the two modules that check a cache entry's dependencies: the source roots a module
#: search depends on, and the callers' index), the syntax scan, and the fix workers (the fix marks
#: come from the fix cache); the TOML parser (the configuration's parse is kept in the cache),
#: shutil (argparse's terminal width), and the fix marks' queue (made with their first worker).
NOT_ON_THE_WARM_PATH = ("astroid", "checkers", "libcst", "nnx_lint.analysis", "nnx_lint.api",
                        "nnx_lint.base.syntax.constructs", "nnx_lint.base.syntax.lexer",
                        "nnx_lint.engine.walk", "nnx_lint.engine.workers", "nnx_lint.engine.collection",
                        "nnx_lint.engine.discovery.gitignore", "nnx_lint.fixes.isolated", "nnx_lint.fixes.workers",
                        "nnx_lint.gate", "subprocess", "tomllib", "tomli", "shutil", "queue",
                        "nnx_lint.base.fix_kinds")
CACHE_DEPENDENCY_MODULES = {"nnx_lint.analysis", "nnx_lint.analysis.callers", "nnx_lint.analysis.package_roots"}

FINDING = """\
from flax import nnx


@nnx.jit
def step(model, x):
    model.count = 1
    return x
"""


@pytest.mark.slow
def test_a_check_the_cache_answers_imports_no_analysis_rules_or_astroid(tmp_path):
    """The pre-commit and editor case: the file did not change since the cache was filled."""
    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    (tmp_path / "step.py").write_text(FINDING)
    # Written long enough before the run for its stat to be trusted (the run records the file's
    # stamp, and the next run does not read it): else it is read again, and its text pre-filtered.
    time.sleep(RACY_SECONDS + 0.1)
    environment = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    filled, cold = _imported(["check", "step.py"], tmp_path, environment)
    assert filled.returncode == 1 and "NNX301" in filled.stdout, filled.stdout + filled.stderr
    # The run that filled the cache analysed the file: the same check would have seen it.
    assert {"astroid", "nnx_lint.engine.walk", "nnx_lint.base.syntax.constructs"} <= cold
    assert any(module.startswith("checkers.") for module in cold)
    done, modules = _imported(["check", "step.py"], tmp_path, environment)
    assert done.returncode == 1 and done.stdout == filled.stdout, done.stdout
    assert "nnx_lint.engine.runner" in modules and "nnx_lint.engine.cache" in modules
    heavy = {module for module in modules if module.startswith(NOT_ON_THE_WARM_PATH)} - CACHE_DEPENDENCY_MODULES
    assert heavy == set()


#: Standard-library modules a check the cache answers has no use for at import: typing (annotations
#: only), the TOML parser, configparser (read only when a project has a .cfg/.ini file), shutil and
#: string: each module on that path (the analysis' package roots too) imports them only for type
#: checkers or inside the function that uses them.
IMPORTED_ONLY_WHEN_USED = {"typing", "tomllib", "tomli", "configparser", "shutil", "string"}


def _top_level_imports(source: str) -> set[str]:
    """The modules a module imports when it is imported (not under ``if TYPE_CHECKING``, not in functions)."""
    import ast

    found = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


@pytest.mark.slow
def test_the_cached_checks_own_modules_import_no_module_they_do_not_run(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    (tmp_path / "step.py").write_text(FINDING)
    time.sleep(RACY_SECONDS + 0.1)
    environment = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    _imported(["check", "step.py"], tmp_path, environment)
    done, modules = _imported(["check", "step.py"], tmp_path, environment)
    assert done.returncode == 1, done.stdout + done.stderr
    import importlib.util

    own = sorted(module for module in modules if module.startswith("nnx_lint"))
    assert "nnx_lint.engine.runner" in own and "nnx_lint.engine.config" in own
    offending = {}
    for module in own:
        source = importlib.util.find_spec(module).origin
        imported = _top_level_imports(Path(source).read_text(encoding="utf-8")) & IMPORTED_ONLY_WHEN_USED
        if imported:
            offending[module] = sorted(imported)
    assert offending == {}
