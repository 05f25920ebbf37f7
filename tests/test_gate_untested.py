"""A gate run that could not test anything never reads as clean (issue 27), and what
``--write-baseline`` wrote is said. Each case runs the gate as a user would: a subprocess.

The projects are tiny and never import flax (their tests read ``NNX_GRAPH_MODE`` themselves).
"""
from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nnx_lint.gate.baseline import read_baseline

PYTEST_INI = "[pytest]\npython_files = check_*.py\n"
#: A summary line that reads like a run that compared tests ("0 tests: 0 break(s) ...").
SUMMARY = re.compile(r"^\d+ tests: ", re.MULTILINE)


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _gate(root: Path, *arguments: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nnx_lint.cli", "gate", *arguments], cwd=root, capture_output=True,
                          text=True, timeout=600, env=env)


def _nothing_tested(done: subprocess.CompletedProcess) -> str:
    """The reason on the report's last line; asserts the run exits 2 and has no summary line."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert not SUMMARY.search(done.stdout), done.stdout
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("nnx-lint gate: nothing was tested: "), done.stdout
    return last


@pytest.mark.slow
def test_no_tests_collected(tmp_path):
    root = _write(tmp_path, {"pytest.ini": PYTEST_INI, "check_empty.py": "X = 1\n"})
    assert "pytest collected no tests" in _nothing_tested(_gate(root, "."))


@pytest.mark.slow
def test_python_on_path_is_not_the_environment_with_nnx_lint(tmp_path):
    # A `python` first on PATH that has pytest but cannot import nnx_lint, as another virtualenv's would.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = bin_dir / "python"
    python.write_text(f"#!{sys.executable}\n" + textwrap.dedent("""\
        import sys


        class NoNnxLint:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "nnx_lint":
                    raise ModuleNotFoundError(f"No module named {name!r}")
                return None


        sys.meta_path.insert(0, NoNnxLint())
        assert sys.argv[1:3] == ["-m", "pytest"], sys.argv
        import pytest

        sys.exit(pytest.main(sys.argv[3:]))
        """))
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    root = _write(tmp_path / "p", {"pytest.ini": PYTEST_INI, "check_ok.py": "def test_ok():\n    pass\n"})
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = _gate(root, ".", "--", "python", "-m", "pytest", env=env)
    last = _nothing_tested(done)
    assert f"({python}) cannot import nnx-lint's pytest plugin" in last
    from nnx_lint.base.install_hints import pip_install

    assert f"{pip_install('gate')} there" in last and f"-- {sys.executable} -m pytest" in last
    assert "Traceback" not in done.stdout  # one line, not the test command's traceback


@pytest.mark.slow
def test_every_module_fails_to_collect(tmp_path):
    root = _write(tmp_path, {"pytest.ini": PYTEST_INI, "check_a.py": "import no_such_module_a\n",
                             "check_b.py": "import no_such_module_b\n"})
    done = _gate(root, ".", "--output-format", "json")
    report = json.loads(done.stdout)
    assert done.returncode == 2
    assert report["untested"] == "no module could be collected (2 collection error(s): check_a.py, check_b.py)"
    # JSON on stdout may be piped away: the line is on stderr too.
    assert f"nnx-lint gate: nothing was tested: {report['untested']}" in done.stderr


@pytest.mark.slow
def test_one_mode_that_did_not_run_a_test(tmp_path):
    # The Tree Mode run dies while pytest loads the conftest: only graph mode ran tests.
    root = _write(tmp_path, {
        "pytest.ini": PYTEST_INI,
        "conftest.py": "import os\n\nif os.environ.get('NNX_GRAPH_MODE') == 'false':\n    os._exit(3)\n",
        "check_ok.py": "def test_ok():\n    pass\n"})
    last = _nothing_tested(_gate(root, "."))
    assert "Tree Mode run" in last


@pytest.mark.slow
def test_write_baseline_says_what_it_wrote_and_refuses_an_untested_run(tmp_path):
    root = _write(tmp_path, {"pytest.ini": PYTEST_INI, "check_env.py": textwrap.dedent("""\
        import os


        def test_break():
            assert os.environ.get("NNX_GRAPH_MODE") != "false"


        def test_pass():
            pass
        """)})
    done = _gate(root, ".", "--write-baseline", "base.json", "--no-warm-reruns")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "nnx-lint gate: wrote 1 Tree Mode break(s) to base.json (check_env.py::test_break)" in done.stderr
    assert read_baseline(root / "base.json") == {"check_env.py::test_break"}

    (root / "check_env.py").write_text("X = 1\n")
    done = _gate(root, ".", "--write-baseline", "base.json")
    _nothing_tested(done)
    assert "base.json not written: nothing was tested" in done.stderr
    assert read_baseline(root / "base.json") == {"check_env.py::test_break"}


@pytest.mark.slow
def test_progress_in_a_ci_log_phase_lines_and_heartbeats(tmp_path):
    # stderr is a pipe, as in CI: one line per phase and a heartbeat while the tests run.
    root = _write(tmp_path, {"pytest.ini": PYTEST_INI, "check_slow.py": textwrap.dedent("""\
        import time


        def test_slow():
            time.sleep(2.5)


        def test_fast():
            pass
        """)})
    done = _gate(root, ".", "--progress-interval", "0.5")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert "\r" not in done.stderr
    expected = ["lint: .", "lint: ended, 0 findings in audit mode (--strict): 0 proven, 0 unproven", "graph mode run: started", "graph mode run: collected 2 test(s)",
                "graph mode run: ended (finished), 2 test(s) reported", "Tree Mode run: started",
                "Tree Mode run: collected 2 test(s)", "Tree Mode run: ended (finished)", "join: attributing 0 break(s)",
                "join: ended"]
    positions = [next((index for index, line in enumerate(lines) if line.startswith(f"nnx-lint gate: {text}")), None)
                 for text in expected]
    assert None not in positions and positions == sorted(positions), done.stderr
    heartbeats = [line for line in lines if re.match(r"nnx-lint gate: (graph mode|Tree Mode) run: \d+/2 tests \(", line)]
    assert len(heartbeats) >= 2, done.stderr  # test_slow takes 2.5 s in each mode: a heartbeat every 0.5 s
    assert all(re.search(r"\(\d+:\d\d elapsed\)$", line) for line in lines if line.startswith("nnx-lint gate: "))


def test_the_gate_extra_installs_what_the_gate_needs():
    """Installing nnx-lint with its ``gate`` extra resolves the installed distribution's metadata: the extra must
    bring pytest, flax and jax, each a requirement that the gate's message names the extra for."""
    from importlib.metadata import metadata

    from packaging.requirements import Requirement

    requirements = [Requirement(text) for text in metadata("nnx-lint").get_all("Requires-Dist") or []]
    gate = {requirement.name for requirement in requirements
            if requirement.marker is not None and requirement.marker.evaluate({"extra": "gate"})
            and not requirement.marker.evaluate({"extra": ""})}
    assert {"pytest", "flax", "jax"} <= gate, gate


@pytest.mark.slow
def test_the_lint_line_says_audit_mode_and_splits_proven_from_unproven(tmp_path):
    """Issue 45: the gate lints in audit mode (``--strict``), so its count can exceed ``nnx-lint check``'s;
    its lint line says so and splits the proven findings from the unproven ones (installed console script)."""
    root = _write(tmp_path, {"pytest.ini": PYTEST_INI, "check_ok.py": "def test_ok():\n    pass\n",
                             "train.py": textwrap.dedent("""\
        import jax.numpy as jnp
        from flax import nnx


        def loss(model, x):
            return model(x).sum()


        def train_step(model: nnx.Module, x):
            return nnx.grad(loss)(model, x)


        v = nnx.Param(jnp.ones(2))
        graphdef, state = nnx.split([v, v])
        """)})
    script = str(Path(sys.executable).with_name("nnx-lint"))
    check = subprocess.run([script, "check", "--no-cache", "train.py"], cwd=root, capture_output=True, text=True)
    assert "Found 1 diagnostic" in check.stdout, check.stdout
    done = subprocess.run([script, "gate", "."], cwd=root, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "nnx-lint gate: lint: ended, 2 findings in audit mode (--strict): 1 proven, 1 unproven (" in done.stderr, \
        done.stderr
