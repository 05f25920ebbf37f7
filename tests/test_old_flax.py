"""Pins proven on the oldest flax they claim, as a user would meet them: real flax releases.

flax 0.12.5 takes ``graph=`` on most APIs but not ``graph_updates=`` (0.12.6 on), so for a
project that admits 0.12.5 ``--fix`` may pin graph APIs only; 0.12.6 is the oldest release a
transform pin runs on. Each release is installed once (``pip install --no-deps --target``;
flax's own dependencies are the test environment's) into the user cache,
``~/.cache/nnx-lint-tests/flax-<version>`` (``$NNX_LINT_TEST_CACHE`` moves it), where CI can keep
it. Then, in subprocesses: ``nnx-lint check --fix`` on a small project declaring its flax, and
the fixed file run under that release in graph mode and in Tree Mode (``NNX_GRAPH_MODE`` /
``NNX_GRAPH_UPDATES`` false): it must import and run, and every pinned line must behave as in
graph mode. The flax table's keyword releases are checked against each release's signatures.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from _support import REPO

pytestmark = pytest.mark.slow  # installs flax releases and runs them

# Read at import, before conftest points XDG_CACHE_HOME at a per-test directory: the installs
# are meant to outlive the test run.
CACHE = Path(os.environ.get("NNX_LINT_TEST_CACHE")
             or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nnx-lint-tests")

#: pip's words when it cannot reach the index (the only reason to skip rather than fail).
_OFFLINE = ("Could not find a version", "No matching distribution", "NewConnectionError", "Max retries exceeded",
            "Temporary failure in name resolution", "Network is unreachable", "ConnectionError", "ProxyError",
            "Read timed out", "Connection refused")


def install_flax(version: str) -> Path:
    """A directory holding flax ``version`` alone (put it first on PYTHONPATH), installed on first use."""
    target = CACHE / f"flax-{version}"
    if (target / "flax" / "__init__.py").is_file() and any(target.glob(f"flax-{version}.dist-info")):
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    scratch = CACHE / f".flax-{version}-{os.getpid()}"
    shutil.rmtree(scratch, ignore_errors=True)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
         "--target", str(scratch), f"flax=={version}"],
        capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        output = (result.stdout + result.stderr).strip()
        if any(word in output for word in _OFFLINE):
            pytest.skip(f"PyPI is unreachable, so flax {version} cannot be installed: {output.splitlines()[-1]}")
        pytest.fail(f"pip could not install flax {version}:\n{output}")
    try:
        os.replace(scratch, target)  # whole or not at all: an interrupted install is never used
    except OSError:
        shutil.rmtree(scratch, ignore_errors=True)  # another run installed it meanwhile
    return target


def run_python(file: Path, flax_dir: Path, tree_mode: bool) -> subprocess.CompletedProcess:
    """Run ``file`` with the flax in ``flax_dir`` (first on the path), in graph mode or Tree Mode."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("NNX_")}
    env.update(PYTHONPATH=str(flax_dir), JAX_PLATFORMS="cpu", PYTHONDONTWRITEBYTECODE="1")
    if tree_mode:
        env.update(NNX_GRAPH_MODE="false", NNX_GRAPH_UPDATES="false")
    return subprocess.run([sys.executable, str(file)], cwd=file.parent, env=env, capture_output=True, text=True,
                          timeout=300)


def nnx_lint(project: Path, *arguments: str) -> subprocess.CompletedProcess:
    """``nnx-lint check`` of this checkout, run in ``project``."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    program = "import sys; from nnx_lint.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", program, "check", ".", "--no-cache", *arguments], cwd=project,
                          env=env, capture_output=True, text=True, timeout=600)


#: Which pin keywords each API of the flax table takes in the flax on the path (by signature),
#: and the public names of its ``flax.nnx``.
INTROSPECT = """\
import inspect, json, sys
import flax
from flax import nnx
found = {}
for api in sys.argv[1:]:
    function = getattr(nnx, api, None)
    try:
        parameters = inspect.signature(function).parameters if function is not None else {}
    except (TypeError, ValueError):
        parameters = {}
    found[api] = [name for name in ("graph", "graph_updates") if name in parameters]
names = sorted(name for name in dir(nnx) if not name.startswith("_"))
print(json.dumps({"version": flax.__version__, "keywords": found, "names": names}))
"""


@pytest.fixture(scope="module")
def flax_0_12_5() -> tuple[Path, dict]:
    return _importable(install_flax("0.12.5"), "0.12.5")


@pytest.fixture(scope="module")
def flax_0_12_6() -> tuple[Path, dict]:
    return _importable(install_flax("0.12.6"), "0.12.6")


def _importable(flax_dir: Path, version: str) -> tuple[Path, dict]:
    """The release's directory and what it offers (see ``INTROSPECT``); a skip if it cannot be imported here."""
    from nnx_lint.flax_table.nnx_api import GRAPH_APIS, TRANSFORMS

    probe = subprocess.run([sys.executable, "-c", INTROSPECT, *sorted(TRANSFORMS | GRAPH_APIS)],
                           env={**os.environ, "PYTHONPATH": str(flax_dir)}, capture_output=True, text=True, timeout=300)
    if probe.returncode != 0:
        pytest.skip(f"flax {version} does not import with this environment's jax: {probe.stderr.strip()[-300:]}")
    found = json.loads(probe.stdout)
    assert found["version"] == version, found["version"]
    return flax_dir, found


def _project(tmp_path: Path, requirement: str, source: str) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        f'[project]\nname = "demo"\nversion = "0"\ndependencies = ["{requirement}"]\n')
    (project / "model.py").write_text(textwrap.dedent(source))
    return project


def _lines(result: subprocess.CompletedProcess) -> dict[str, str]:
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(line.split(": ", 1) for line in result.stdout.splitlines())


# A tied Variable through a graph API (NNX103: pinned with `graph=True` on nnx.split / nnx.state)
# and a plain attribute bumped under nnx.jit (NNX301: a transform pin, `graph_updates=`).
PROGRAM = """\
    import jax.numpy as jnp
    from flax import nnx


    class Counter(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.ones(2))
            self.n = 0


    @nnx.jit
    def bump(c):
        c.n += 1


    v = nnx.Param(jnp.ones(2))
    try:
        graphdef, state = nnx.split([v, v])
        print("split:", len(nnx.to_flat_state(state)), "leaves")
    except ValueError as error:
        print("split: ValueError")
    c = Counter()
    bump(c)
    print("bump:", c.n)
"""


def test_on_flax_0_12_5_only_graph_api_pins_are_offered_and_the_fixed_file_runs(tmp_path, flax_0_12_5):
    flax_dir, _keywords = flax_0_12_5
    project = _project(tmp_path, "flax>=0.12.5", PROGRAM)
    original = tmp_path / "original.py"  # outside the project: --fix leaves it as it is
    shutil.copy(project / "model.py", original)
    graph = _lines(run_python(original, flax_dir, tree_mode=False))
    assert graph == {"split": "1 leaves", "bump": "1"}
    assert _lines(run_python(original, flax_dir, tree_mode=True))["split"] == "ValueError"  # what the pin keeps

    fixed = nnx_lint(project, "--fix", "--select", "NNX103,NNX301")
    # The fixed file imports and runs on flax 0.12.5 in both modes; the pinned line keeps graph mode.
    assert _lines(run_python(project / "model.py", flax_dir, tree_mode=False)) == graph
    tree = _lines(run_python(project / "model.py", flax_dir, tree_mode=True))
    assert tree["split"] == graph["split"]
    assert tree["bump"] == "0"  # not pinned (flax 0.12.5 has no graph_updates=): still Tree Mode's
    assert "Fixed 1 diagnostic (NNX103: 1)." in fixed.stderr, fixed.stderr
    text = (project / "model.py").read_text()
    assert "nnx.split([v, v], graph=True)" in text and "@nnx.jit\n" in text

    # What remains says why it has no fix.
    report = nnx_lint(project, "--output-format", "json", "--select", "NNX103,NNX301")
    [finding] = [entry for entry in json.loads(report.stdout) if entry["filename"].endswith("model.py")]
    assert finding["code"] == "NNX301" and finding["fix"]["applicability"] == "display-only"
    assert "`nnx.jit` takes `graph_updates=` only from flax 0.12.6 on" in finding["fix"]["message"]
    assert "flax>=0.12.5" in finding["help"] and "require flax>=0.12.6" in finding["help"]


# The same project on 0.12.6: the transform pin is offered, and `nnx.split_rngs`, which takes
# `graph_updates=` only from 0.12.7, is not.
PROGRAM_0_12_6 = PROGRAM + """\
    rngs = nnx.Rngs(0)
    nnx.split_rngs(rngs, splits=2)
    print("split_rngs:", "kept")
"""


def test_on_flax_0_12_6_transform_pins_run_in_tree_mode_as_in_graph_mode(tmp_path, flax_0_12_6):
    flax_dir, _keywords = flax_0_12_6
    project = _project(tmp_path, "flax>=0.12.6", PROGRAM_0_12_6)
    original = tmp_path / "original.py"  # outside the project: --fix leaves it as it is
    shutil.copy(project / "model.py", original)
    graph = _lines(run_python(original, flax_dir, tree_mode=False))
    assert graph["bump"] == "1" and _lines(run_python(original, flax_dir, tree_mode=True))["bump"] == "0"

    fixed = nnx_lint(project, "--fix")
    assert _lines(run_python(project / "model.py", flax_dir, tree_mode=False)) == graph
    assert _lines(run_python(project / "model.py", flax_dir, tree_mode=True)) == graph
    assert "NNX301: 1" in fixed.stderr, fixed.stderr
    text = (project / "model.py").read_text()
    assert "@nnx.jit(graph=True, graph_updates=True)" in text
    assert "split_rngs(rngs, splits=2)\n" in text  # no pin the release would reject

    report = nnx_lint(project, "--output-format", "json")
    [finding] = [entry for entry in json.loads(report.stdout) if entry["filename"].endswith("model.py")]
    # No pin for the discarded split_rngs result; its unsafe rewrite is still offered.
    assert finding["code"] == "NNX702" and finding["fix"]["applicability"] == "unsafe"
    assert "`nnx.split_rngs` takes `graph_updates=` only from flax 0.12.7 on" in finding["help"]


@pytest.mark.parametrize("version", ["0.12.5", "0.12.6"])
def test_the_flax_table_says_which_keywords_each_release_takes(version, request):
    from nnx_lint.flax_table.nnx_api import keyword_since, version_key

    from nnx_lint.flax_table.nnx_api import NAME_SINCE

    _flax_dir, found = request.getfixturevalue(f"flax_{version.replace('.', '_')}")
    claimed = {api: [keyword for keyword in ("graph", "graph_updates")
                     if (since := keyword_since(api, keyword)) and version_key(since) <= version_key(version)]
               for api in found["keywords"]}
    assert found["keywords"] == claimed
    for name, since in NAME_SINCE.items():
        assert (name in found["names"]) == (version_key(since) <= version_key(version)), name
