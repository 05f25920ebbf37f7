"""Running nnx-lint from inside a hostile checkout (issue 29): the checkout's packages never run.

``python -m`` puts the working directory first on ``sys.path``. A checkout that commits a
``checkers/`` package would then provide nnx-lint's rules (and could print "All checks
passed!"); nnx-lint refuses to load rules from anywhere but its own installation. A checkout
that commits ``nnx_lint/`` itself replaces nnx-lint entirely under ``python -m``: only the
console script and ``python -P -m`` are immune, which is what docs/security.md tells CI users.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

FINDING = "from flax import nnx\nx = nnx.StateAxes({nnx.Param: 0})\nf = nnx.vmap(lambda m: m, in_axes=(x,))\n"


def _checkout(root: Path, package: str) -> Path:
    """A checkout with a finding and a planted ``package`` that leaves a marker when imported."""
    (root / package).mkdir(parents=True)
    (root / package / "__init__.py").write_text(f"open({str(root / 'PWNED')!r}, 'w').close()\n")
    (root / "model.py").write_text(FINDING)
    return root


def test_python_m_in_a_checkout_with_checkers_refuses_instead_of_loading_them(tmp_path):
    root = _checkout(tmp_path, "checkers")
    done = subprocess.run([sys.executable, "-m", "nnx_lint.cli", "check", "."], cwd=root, capture_output=True,
                          text=True, timeout=300)
    assert not (root / "PWNED").exists(), "the checkout's checkers/ ran"
    assert done.returncode == 2, done.stdout + done.stderr
    assert "refusing to load rules from" in done.stderr and "python -P -m" in done.stderr


@pytest.mark.parametrize("package", ["nnx_lint", "checkers", "tree_runtime"])
@pytest.mark.slow
def test_the_console_script_and_python_safe_path_never_import_the_checkout(tmp_path, package):
    root = _checkout(tmp_path, package)
    script = Path(sys.executable).parent / "nnx-lint"
    if not script.exists():
        pytest.skip("the nnx-lint console script is not installed beside this Python")
    commands = [[str(script), "check", "."]]
    if sys.version_info >= (3, 11):
        commands.append([sys.executable, "-P", "-m", "nnx_lint.cli", "check", "."])
    for command in commands:
        done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=300)
        assert not (root / "PWNED").exists(), f"{command[0]} imported the checkout's {package}/"
        assert done.returncode == 1 and "NNX" in done.stdout, done.stdout + done.stderr
