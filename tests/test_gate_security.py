"""``nnx-lint gate`` against a hostile test suite (issue 29): it cannot be talked into exit 0.

Each test runs the gate as a user would (a subprocess, real pytest) on a small project whose
``conftest.py`` attacks the gate:

- the mode: a conftest or fixture that puts flax in graph mode for the Tree Mode run and
  switches back before the gate looks (at session end, around each test, only in the
  isolated re-runs). Real flax: the test really breaks in Tree Mode and really passes when
  the mode is switched;
- the results: a conftest that rewrites the plugin's report file, or that appends forged
  records to wherever the plugin writes;
- the gate process: tests that write into the installed nnx-lint (and everything else the
  gate could import) while the runs go on;
- the processes: tests that leave processes behind in a new session.

On nnx-lint before issue 29 every one of these ended with exit 0 (or left processes running).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from test_gate import ENVIRONMENT_PROJECT, _gone, _write

REPO = Path(__file__).resolve().parent.parent
FIXTURE_MODELS = REPO / "tests" / "fixtures_gate" / "project" / "models.py"
EXIT_CLEAN, EXIT_BREAKS, EXIT_ERROR = 0, 1, 2

# The test of the reproducer: breaks in Tree Mode (a StateAxes prefix filter), passes in graph mode.
BREAK_CALL = "models.vmapped_forward(models.Block(nnx.Rngs(0)), jnp.ones((3, 2)))"
BREAK_TEST = f"""\
import jax.numpy as jnp
from flax import nnx
import models


def test_break():
    assert {BREAK_CALL}.shape == (3, 2)


def test_ok():
    pass
"""


def _flax_project(root: Path, files: dict[str, str]) -> Path:
    pytest.importorskip("flax")
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURE_MODELS, root / "models.py")
    return _write(root, {"test_break.py": BREAK_TEST, **files})


def _gate_json(root: Path, *arguments: str, env: dict[str, str] | None = None) -> tuple[int, dict]:
    done = subprocess.run([sys.executable, "-m", "nnx_lint.cli", "gate", ".", "--output-format", "json", *arguments],
                          cwd=root, capture_output=True, text=True, timeout=900, env=env)
    try:
        return done.returncode, json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"exit {done.returncode}, no JSON report:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def _problems(report: dict) -> str:
    return "\n".join(report["problems"])


# ---------------------------------------------------------------- the mode, from inside each test

G1_CONFTEST = """\
import os


def _set(value):
    import flax
    flax.config.update("nnx_graph_mode", value)
    flax.config.update("nnx_graph_updates", value)


def pytest_configure(config):
    if os.environ.get("NNX_GRAPH_MODE") == "false":
        _set(True)


def pytest_sessionfinish(session, exitstatus):
    if os.environ.get("NNX_GRAPH_MODE") == "false":
        _set(False)
"""


@pytest.mark.slow
def test_g1_a_conftest_that_switches_to_graph_mode_and_back_at_session_end_is_caught(tmp_path):
    """The reproducer g1_gate_mode_flip.sh: the end-of-run check alone was passed."""
    root = _flax_project(tmp_path / "p", {"conftest.py": G1_CONFTEST})
    status, report = _gate_json(root)
    assert status == EXIT_ERROR, report
    assert "the Tree Mode run cannot be trusted: flax was not in Tree Mode in the setup of test_break.py::" in (
        _problems(report))
    assert report["tree_breaks"] == []


# Three ways to switch the mode around one test each, and one legitimate opt-in inside a test's body.
PER_TEST_CONFTEST = """\
import os

import flax
import pytest
from flax import nnx

TREE = os.environ.get("NNX_GRAPH_MODE") == "false"


@pytest.fixture(autouse=True)
def switch(request):
    name = request.node.name
    if TREE and name == "test_in_a_fixture_context":
        with nnx.set_graph_mode(True), nnx.set_graph_updates(True):
            yield
    elif TREE and name == "test_after_bare_calls":
        nnx.set_graph_mode(True)  # a bare call leaves its value on flax's stack; config is untouched
        nnx.set_graph_updates(True)
        yield
        nnx.set_graph_mode.get_stack().pop()
        nnx.set_graph_updates.get_stack().pop()
    else:
        yield


def _config(value):
    flax.config.update("nnx_graph_mode", value)
    flax.config.update("nnx_graph_updates", value)


class Before:
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item):
        if TREE and item.name == "test_in_a_runtest_sandwich":
            _config(True)


class After:
    @pytest.hookimpl(trylast=True)
    def pytest_runtest_call(self, item):
        if TREE and item.name == "test_in_a_runtest_sandwich":
            _config(False)


def pytest_configure(config):
    config.pluginmanager.register(Before())
    config.pluginmanager.register(After())
"""
PER_TEST_TESTS = f"""\
import jax.numpy as jnp
from flax import nnx
import models


def test_in_a_fixture_context():
    {BREAK_CALL}


def test_after_bare_calls():
    {BREAK_CALL}


def test_in_a_runtest_sandwich():
    {BREAK_CALL}


def test_opts_in_inside_its_body():
    with nnx.set_graph_mode(True), nnx.set_graph_updates(True):
        {BREAK_CALL}
"""


@pytest.mark.slow
def test_switching_the_mode_around_single_tests_is_caught_at_each_test(tmp_path):
    """A fixture's ``nnx.set_graph_mode`` context, bare ``set_graph_mode`` calls undone in teardown, and
    hook implementations that switch ``flax.config`` around pytest's own ``runtest``: each is seen at
    that test. A test that opts in inside its own body is an explicit opt-in, not a wrong mode."""
    root = _flax_project(tmp_path / "p", {"conftest.py": PER_TEST_CONFTEST, "test_break.py": PER_TEST_TESTS})
    status, report = _gate_json(root)
    assert status == EXIT_ERROR, report
    problems = _problems(report)
    assert ("tests affected: test_break.py::test_after_bare_calls, test_break.py::test_in_a_fixture_context, "
            "test_break.py::test_in_a_runtest_sandwich:") in problems, problems
    assert "test_opts_in_inside_its_body" not in problems
    assert "graph mode run cannot be trusted" not in problems


RERUN_ONLY_CONFTEST = """\
import os


def pytest_collection_finish(session):
    # Only a run of one test (the gate's isolated re-run) is switched to graph mode.
    if os.environ.get("NNX_GRAPH_MODE") == "false" and len(session.items) == 1:
        import flax
        flax.config.update("nnx_graph_mode", True)
        flax.config.update("nnx_graph_updates", True)
"""


@pytest.mark.slow
def test_a_mode_switched_only_in_the_isolated_reruns_is_caught(tmp_path):
    """Without the check the break passes alone in "Tree Mode" and is filed as order-dependent: exit 0."""
    root = _flax_project(tmp_path / "p", {"conftest.py": RERUN_ONLY_CONFTEST})
    status, report = _gate_json(root)
    assert status == EXIT_ERROR, report
    assert "the re-run of test_break.py::test_break alone in Tree Mode cannot be trusted: flax was not in Tree Mode" \
        in _problems(report)
    assert [item["nodeid"] for item in report["not_isolated"]] == ["test_break.py::test_break"]
    assert report["order_dependent"] == []


# ---------------------------------------------------------------- the results, from where the tests cannot write

G3_CONFTEST = """\
import json, os


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("NNX_LINT_GATE_REPORT")
    if not path or os.environ.get("NNX_GRAPH_MODE") != "false":
        return
    records = [json.loads(line) for line in open(path) if line.strip()]
    for record in records:
        if record.get("event") == "report" and record.get("outcome") == "failed":
            record["outcome"] = "passed"
            record.pop("exception", None)
    open(path, "w").writelines(json.dumps(record) + "\\n" for record in records)
"""


@pytest.mark.slow
def test_g3_rewriting_the_report_file_changes_nothing(tmp_path):
    """The reproducer g3_gate_report_forgery.sh: no report file is named to the tests any more."""
    root = _flax_project(tmp_path / "p", {"conftest.py": G3_CONFTEST})
    status, report = _gate_json(root, env={**os.environ, "NNX_LINT_GATE_REPORT": str(tmp_path / "planted.jsonl")})
    assert status == EXIT_BREAKS, report
    assert [item["nodeid"] for item in report["tree_breaks"]] == ["test_break.py::test_break"]
    assert not (tmp_path / "planted.jsonl").exists(), "the plugin wrote to a file named in the caller's environment"


# In the graph-mode run, forge a failure of every test: each Tree Mode break then reads "fails in both
# modes", which is not a break. Written wherever the plugin's records go: the report file if one is
# named, else every pipe this process holds, as a plain JSON line and as a line with a made-up signature.
FORGING_CONFTEST = """\
import json, os


def pytest_sessionfinish(session, exitstatus):
    if os.environ.get("NNX_GRAPH_MODE") != "true":
        return
    lines = b""
    for item in session.items:
        record = json.dumps({"event": "report", "nodeid": item.nodeid, "phase": "call", "outcome": "failed",
                             "duration": 0.0, "message": "forged", "seq": 3}).encode()
        lines += record + b"\\n" + b"0" * 64 + b" " + record + b"\\n"
    path = os.environ.get("NNX_LINT_GATE_REPORT")
    if path:
        with open(path, "ab") as stream:
            stream.write(lines)
        return
    for name in os.listdir("/proc/self/fd"):
        descriptor = int(name)
        try:
            if descriptor > 2 and os.readlink(f"/proc/self/fd/{name}").startswith("pipe:"):
                os.write(descriptor, lines)
        except OSError:
            pass
"""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="the attack finds the pipe through /proc")
@pytest.mark.slow
def test_records_appended_by_the_tests_are_refused(tmp_path):
    root = _write(tmp_path / "p", {**ENVIRONMENT_PROJECT, "conftest.py": FORGING_CONFTEST})
    status, report = _gate_json(root)
    assert status == EXIT_ERROR, report
    assert ("the graph mode run cannot be trusted: a record on the plugin's channel is not signed with the run's key"
            in _problems(report))
    # The forgeries in the graph-mode re-runs are refused too: the breaks stay breaks ("not isolated").
    assert [item["nodeid"] for item in report["not_isolated"]] == [
        "check_env.py::test_break", "check_env.py::test_pollute"]
    assert report["fails_in_both_modes"] == []


# ---------------------------------------------------------------- the gate imports nothing after the runs start

# Appends to every module of the installed nnx-lint (and of a dependency the gate lints after the runs)
# a line that leaves a marker named by the importing process's pid.
TAMPERING_CONFTEST = """\
import os
from pathlib import Path


def pytest_sessionfinish(session, exitstatus):
    markers = os.environ["MARKERS"]
    payload = f"\\nimport os as _o\\nopen(_o.path.join({markers!r}, str(_o.getpid())), 'w').close()\\n"
    for root in os.environ["TAMPER"].split(os.pathsep):
        for path in Path(root).rglob("*.py"):
            with open(path, "a") as stream:
                stream.write(payload)
"""
# The test breaks inside an "installed" package, so that the gate lints that package after the runs.
DEPENDENCY_TEST = """\
import os

import deplib


def test_in_dependency():
    deplib.run(os.environ.get("NNX_GRAPH_MODE") == "false")
"""
DEPENDENCY_MODULE = """\
from flax import nnx


def run(tree):
    x = nnx.StateAxes({nnx.Param: 0})
    f = nnx.vmap(lambda m: m, in_axes=(x,))
    if tree:
        raise ValueError("prefix filter")
    return f
"""
# Runs the gate in this process with an audit hook that lists every module imported after the first
# test run has started (the "import" audit event is raised only for a module not yet in sys.modules).
DRIVER = """\
import json, os, sys
state = {"started": False, "late": []}


def hook(event, args):
    if event == "subprocess.Popen":
        state["started"] = True
    elif event == "import" and state["started"]:
        state["late"].append(args[0])


sys.addaudithook(hook)
from nnx_lint.cli import main

status = main(["gate", ".", "--output-format", "json", *sys.argv[1:]])
print(json.dumps({"status": status, "late": state["late"], "pid": os.getpid()}), file=sys.stderr)
"""


@pytest.mark.slow
def test_modules_changed_on_disk_by_the_tests_never_run_in_the_gate(tmp_path):
    """A copy of nnx-lint is installed for the gate; the tests append code to every one of its modules
    (and to the dependency whose frames the gate lints after the runs). Nothing of it runs in the gate,
    and the gate imports no module at all once the first run has started, in any output format."""
    install = tmp_path / "install"
    for package in ("nnx_lint", "checkers", "tree_runtime"):
        shutil.copytree(REPO / package, install / package, ignore=shutil.ignore_patterns("__pycache__"))
    site = tmp_path / "venv" / "lib" / "site-packages"
    _write(site, {"deplib/__init__.py": "from deplib.model import run\n", "deplib/model.py": DEPENDENCY_MODULE})
    root = _write(tmp_path / "p", {**ENVIRONMENT_PROJECT, "conftest.py": TAMPERING_CONFTEST,
                                   "check_dep.py": DEPENDENCY_TEST})
    markers = tmp_path / "markers"
    markers.mkdir()
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(install), str(site)]), "MARKERS": str(markers),
                   "TAMPER": os.pathsep.join([str(install), str(site)]), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", DRIVER], cwd=root, capture_output=True, text=True, timeout=900,
                          env=environment)
    summary = json.loads(done.stderr.strip().splitlines()[-1])
    assert summary["late"] == [], summary
    assert str(summary["pid"]) not in os.listdir(markers), "tampered code ran in the gate's process"
    assert os.listdir(markers), "the tests did not reach the installed copy: the test proves nothing"
    report = json.loads(done.stdout)
    assert summary["status"] == EXIT_BREAKS, report["problems"]
    assert "check_dep.py::test_in_dependency" in {item["nodeid"] for item in report["tree_breaks"]}
    assert report["summary"]["explained_in_dependencies"] == 1  # deplib was linted after the runs


# ---------------------------------------------------------------- processes that leave the group

ESCAPING_PROJECT = {
    "pytest.ini": "[pytest]\npython_files = check_*.py\n",
    "check_escape.py": textwrap.dedent("""\
        import os
        import subprocess
        import sys

        SLEEP = [sys.executable, "-c", "import time; time.sleep(300)"]


        def test_leaves_processes_behind():
            # A child in a new session, and a daemon: double fork, setsid, orphaned at once.
            child = subprocess.Popen(SLEEP, start_new_session=True)
            read, write = os.pipe()
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    os.close(read)
                    os.write(write, str(os.getpid()).encode())
                    os.close(write)
                    os.execv(sys.executable, SLEEP)
                os._exit(0)
            os.close(write)
            daemon = int(os.read(read, 64))
            with open(os.environ["PID_FILE"], "a") as stream:
                stream.write(f"{child.pid} {daemon}\\n")
        """),
}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the guarantee is Linux's (a child subreaper)")
@pytest.mark.slow
def test_processes_the_tests_start_in_a_new_session_do_not_outlive_the_gate(tmp_path):
    root = _write(tmp_path / "p", ESCAPING_PROJECT)
    pid_file = tmp_path / "pids"
    done = subprocess.run([sys.executable, "-m", "nnx_lint.cli", "gate", "."], cwd=root, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PID_FILE": str(pid_file)})
    pids = [int(pid) for pid in pid_file.read_text().split()]
    try:
        assert len(pids) == 4, done.stdout  # two per run
        assert done.returncode == EXIT_CLEAN, done.stdout
        assert [pid for pid in pids if not _gone(pid, seconds=5)] == [], "processes outlived the gate"
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# ---------------------------------------------------------------- the channel and the agreement checks, in process


def test_the_channel_accepts_only_signed_records_in_order(tmp_path):
    from nnx_lint.gate.channel import ChannelReader, RecordWriter

    reader = ChannelReader(save_to=tmp_path / "saved.jsonl")
    key = os.read(reader.key_fd, 64)
    writer = RecordWriter(reader.write_fd, key)
    writer.send({"event": "session", "flax": "0.12.8"})
    writer.send({"event": "report", "nodeid": "t.py::a", "phase": "teardown", "outcome": "passed"})
    reader.poll(1.0)
    assert [record["event"] for record in reader.records] == ["session", "report"] and reader.problems == []
    assert reader.done == 1
    os.write(reader.write_fd, b'{"event": "report", "nodeid": "t.py::a", "outcome": "failed"}\n')
    RecordWriter(reader.write_fd, b"another key" * 3).send({"event": "finished", "exitstatus": 0})
    reader.poll(1.0)
    assert reader.problems == ["a record on the plugin's channel is not signed with the run's key (something other "
                               "than the gate's plugin wrote to it)"]
    replayed = RecordWriter(reader.write_fd, key)  # a signed record out of sequence (number 0 again)
    replayed.send({"event": "finished", "exitstatus": 0})
    reader.finish()
    assert "arrived out of order" in reader.problems[-1]
    assert len(reader.records) == 2
    assert (tmp_path / "saved.jsonl").read_text().count("\n") == 2  # only what was verified is kept


def test_records_that_disagree_with_pytest_are_untrusted():
    from nnx_lint.gate.modes import TREE
    from nnx_lint.gate.results import RunResults, TestResult
    from nnx_lint.gate.trust import cross_run_problems, run_trust_problems, summary_failures

    assert summary_failures("...\n========= 2 failed, 3 passed, 1 error in 0.52s =========\n") == 3
    assert summary_failures("1 failed, 1 passed in 61.20s (0:01:01)") == 1
    assert summary_failures("no tests ran in 0.01s") is None
    passing = RunResults(tests={"t.py::a": TestResult("t.py::a")}, finished=True, pytest_status=0, collected=1)
    assert run_trust_problems(passing, TREE, 0, "1 passed in 0.1s") == []
    assert "process exited with 1" in run_trust_problems(passing, TREE, 1, "")[0]
    assert "counts 1 failure" in run_trust_problems(passing, TREE, 0, "1 failed in 0.1s")[0]
    unreported = RunResults(tests={"t.py::a": TestResult("t.py::a")}, finished=True, pytest_status=0, collected=2)
    assert "2 tests were collected but only 1" in run_trust_problems(unreported, TREE, 0, "")[0]
    tree_exit_1 = RunResults(tests=passing.tests, finished=True, pytest_status=1)
    assert cross_run_problems(passing, tree_exit_1) and not cross_run_problems(tree_exit_1, tree_exit_1)
