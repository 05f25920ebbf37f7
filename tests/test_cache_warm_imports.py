"""A warm run (every file from the cache) does not import the rules or astroid, with or without
``--select``: validating a selector reads the rule codes from the rule modules' names."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nnx_lint.engine.registry import all_rules, rule_codes

SOURCE = "from flax import nnx\nf = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"

WARM = """
import sys
from nnx_lint.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
# The `checkers` package itself is found (the cache fingerprints its files); no rule module is loaded.
print("IMPORTED", "astroid" in sys.modules, any(name.startswith("checkers.") for name in sys.modules))
"""


def test_rule_codes_are_the_rules_codes():
    assert rule_codes() == tuple(sorted({rule.code for rule in all_rules()}))


@pytest.mark.slow
def test_warm_run_with_select_imports_no_rule(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    (tmp_path / "model.py").write_text(SOURCE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = ["check", ".", "--select", "NNX2", "--exit-zero", "--cache-dir", str(tmp_path / "cache")]
    cold = subprocess.run([sys.executable, "-c", WARM, *command], cwd=tmp_path, capture_output=True, text=True,
                          env=env, timeout=300)
    assert "NNX201" in cold.stdout, cold.stdout + cold.stderr
    assert "IMPORTED True True" in cold.stdout
    warm = subprocess.run([sys.executable, "-c", WARM, *command], cwd=tmp_path, capture_output=True, text=True,
                          env=env, timeout=300)
    assert "NNX201" in warm.stdout, warm.stdout + warm.stderr
    assert "IMPORTED False False" in warm.stdout, warm.stdout + warm.stderr


def test_an_unknown_selector_is_still_refused(tmp_path):
    (tmp_path / "model.py").write_text(SOURCE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    refused = subprocess.run([sys.executable, "-m", "nnx_lint.cli", "check", ".", "--select", "NNX299", "--no-cache"],
                             cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "unknown rule selector 'NNX299'" in refused.stderr
