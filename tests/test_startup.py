"""Start-up (issue 45): ``nnx-lint --version`` imports nothing but the command line's own module,
and each subcommand builds (and imports) only its own options. Checked on the real console script
from ``-X importtime``'s list of the modules a run imports (``PYTHONPROFILEIMPORTTIME``), never by
timing: ``bench/startup_ratio.py`` measures the time against a bare interpreter.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: The console script installed beside this interpreter (the one a user runs).
CONSOLE_SCRIPT = str(Path(sys.executable).with_name("nnx-lint"))
#: What ``--version`` has no use for: the engine, the analysis, the rules and astroid, the gate.
HEAVY = ("astroid", "checkers", "nnx_lint.engine", "nnx_lint.analysis", "nnx_lint.gate", "nnx_lint.reporting",
         "nnx_lint.frontends.cli_ci", "nnx_lint.base.syntax")


def _imported(arguments: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess, set[str]]:
    environment = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
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
