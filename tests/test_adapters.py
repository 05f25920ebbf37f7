"""flake8 and pylint specifics: default-off codes, noqa, disable by symbol and by checker name.

Which rules run is decided by ``[tool.nnx-lint]`` (the nearest pyproject.toml), as in the
CLI; the hosts' own options only narrow it further.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from _support import REPO

from checkers.prefix_filters.nnx201_state_axes_prefix import StateAxesPrefix
from nnx_lint.pylint import pylint_message_id
from nnx_lint.engine.registry import all_rules

SOURCE = (
    "from flax import nnx\n"
    "f = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"
    "h = nnx.compat.jit(g)\n"
    "k = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))  # pylint: disable=state-axes-prefix\n"
    "m = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))  # noqa: NNX201\n"
)


@pytest.fixture
def sample(tmp_path):
    path = tmp_path / "sample.py"
    path.write_text(SOURCE)
    return path


def _run(*command, cwd):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def _flake8(sample, *args):
    result = _run(sys.executable, "-m", "flake8", *args, "--format", "%(row)d:%(code)s", sample.name, cwd=sample.parent)
    return set(result.stdout.split())


@pytest.mark.slow
def test_flake8_default_run_keeps_advisories_off(sample):
    assert _flake8(sample) >= {"2:NNX201", "4:NNX201"}
    assert not any(item.endswith("NNX901") for item in _flake8(sample))
    assert "5:NNX201" not in _flake8(sample), "flake8 honours noqa"


@pytest.mark.slow
def test_flake8_advisories_follow_the_configuration_and_flake8_narrows(sample):
    assert not any(item.endswith("NNX901") for item in _flake8(sample, "--extend-select", "NNX9")), (
        "flake8's options narrow the configured selection, they never widen it"
    )
    (sample.parent / "pyproject.toml").write_text('[tool.nnx-lint]\nextend-select = ["NNX9"]\n')
    assert "3:NNX901" in _flake8(sample)
    assert _flake8(sample, "--select", "NNX2") == {"2:NNX201", "4:NNX201"}


def test_flake8_honours_the_configured_ignore_and_exclude(sample):
    (sample.parent / "pyproject.toml").write_text('[tool.nnx-lint]\nignore = ["NNX201"]\n')
    assert not any(item.endswith("NNX201") for item in _flake8(sample))
    (sample.parent / "pyproject.toml").write_text('[tool.nnx-lint]\nexclude = ["sample.py"]\n')
    assert not any(item.split(":")[1].startswith("NNX") for item in _flake8(sample))


def _pylint(sample, *args):
    result = _run(sys.executable, "-m", "pylint", "--load-plugins=nnx_lint.pylint", "--persistent=n",
                  "--output-format=json", *args, sample.name, cwd=sample.parent)
    return {(m["line"], m["symbol"]) for m in json.loads(result.stdout) if m["message-id"][1] == "9"}


def test_pylint_message_ids_map_one_to_one():
    ids = [pylint_message_id(rule) for rule in all_rules()]
    assert len(ids) == len(set(ids))
    assert pylint_message_id(StateAxesPrefix) == "E9201"


@pytest.mark.slow
def test_pylint_disable_by_symbol_and_noqa(sample):
    found = _pylint(sample, "--disable=all", "--enable=nnx")
    assert (2, "state-axes-prefix") in found
    assert (4, "state-axes-prefix") not in found, "# pylint: disable=<symbol> works"
    assert (5, "state-axes-prefix") not in found, "# noqa is honoured too, for parity"
    assert (3, "graph-mode-opt-in") not in found, "advisories are off unless the configuration selects them"
    (sample.parent / "pyproject.toml").write_text('[tool.nnx-lint]\nextend-select = ["NNX9"]\n')
    assert (3, "graph-mode-opt-in") in _pylint(sample, "--disable=all", "--enable=nnx")
    assert (3, "graph-mode-opt-in") not in _pylint(sample, "--disable=all", "--enable=nnx",
                                                    "--disable=graph-mode-opt-in"), "pylint narrows further"


def test_pylint_messages_are_enabled_and_the_configuration_decides():
    from pylint.lint import PyLinter

    from nnx_lint.pylint import register

    linter = PyLinter()
    register(linter)
    assert linter.is_message_enabled("state-axes-prefix")
    # On in pylint: `[tool.nnx-lint]` (advisories off by default there) decides what runs.
    assert linter.is_message_enabled("graph-mode-opt-in")
    assert {c.name for c in linter.get_checkers() if c.name == "nnx"} == {"nnx"}


def test_pylint_disable_nnx_turns_every_family_off(sample):
    assert _pylint(sample, "--disable=all", "--enable=nnx,unused-import", "--disable=nnx") == set()
    assert _pylint(sample, "--disable=all", "--enable=nnx,unused-import") != set()


def test_plugins_fail_loudly_on_an_unknown_configured_code(sample):
    (sample.parent / "pyproject.toml").write_text('[tool.nnx-lint]\nignore = ["NNX777"]\n')
    result = _run(sys.executable, "-m", "flake8", sample.name, cwd=sample.parent)
    assert result.returncode != 0
    assert "pyproject.toml [tool.nnx-lint]: `ignore`: unknown rule selector 'NNX777'" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
