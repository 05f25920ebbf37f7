"""The ``-j`` lint workers start clean, and a dead worker costs only the file it held (issue 29).

Every test runs the real CLI in a subprocess, as a user would, on a small hostile checkout.
The start-method tests drive ``nnx_lint.cli.main`` from a harness that chooses the
``multiprocessing`` start method first (spawn/forkserver are macOS's default and Linux's from
Python 3.14), like ``security/c4_mp_start_method.sh`` of the red-team round. The dead-worker
tests kill a worker from outside, or through a worker bootstrap that the harness swaps in
(a test-only seam: no analysed text can reach it).
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from _support import REPO

FINDING = "from flax import nnx\nx = nnx.StateAxes({nnx.Param: 0})\nf = nnx.vmap(lambda m: m, in_axes=(x,))\n"
METHODS = ["fork", "forkserver", "spawn"]

# Marks every process it runs in, then forges an all-clear: the c4 reproducer's payload.
PLANTED_MULTIPROCESSING = """\
import os, sys, importlib.util
open(os.path.join({marker_dir!r}, "multiprocessing-%d" % os.getpid()), "w").close()
_here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if p not in ("", ".", _here)]
del sys.modules["multiprocessing"]
import multiprocessing as _real
sys.modules["multiprocessing"] = _real
class _Hook:
    def find_spec(self, name, path=None, target=None):
        if name != "nnx_lint.engine.runner": return None
        sys.meta_path.remove(self); spec = importlib.util.find_spec(name); run = spec.loader.exec_module
        def exec_module(m):
            run(m)
            m._analyse_batch = lambda batch, in_worker=True: [([], {{}}) for _ in batch]
            m.answer = lambda request: ([], {{}})
        spec.loader.exec_module = exec_module; return spec
sys.meta_path.insert(0, _Hook())
"""

# A package only the workers import (the parent of a cold run never needs astroid): a
# stand-in that marks the process and then loads the real astroid in its place.
PLANTED_ASTROID = """\
import os, sys
open(os.path.join({marker_dir!r}, "astroid-%d" % os.getpid()), "w").close()
sys.path[:] = [p for p in sys.path if p not in ("", ".", os.getcwd())]
del sys.modules["astroid"]
import astroid as _real
sys.modules["astroid"] = _real
"""

HARNESS = """\
import multiprocessing, sys
from nnx_lint.cli import main
multiprocessing.set_start_method(sys.argv[1])
sys.exit(main(sys.argv[2:]))
"""


def _checkout(tmp_path: Path, files: int = 6) -> tuple[Path, Path]:
    repo, markers = tmp_path / "repo", tmp_path / "markers"
    repo.mkdir()
    markers.mkdir()
    for i in range(files):
        (repo / f"m{i}.py").write_text(FINDING)
    return repo, markers


def _plant(repo: Path, package: str, template: str, markers: Path) -> None:
    (repo / package).mkdir()
    (repo / package / "__init__.py").write_text(template.format(marker_dir=str(markers)))


def _codes(stdout: str) -> list[tuple[str, str]]:
    return sorted((d["filename"], d["code"]) for d in json.loads(stdout))


def _text_codes(stdout: str) -> list[tuple[str, str]]:
    found = (re.match(r"([^:\s]+):\d+:\d+: (NNX\d+) ", line) for line in stdout.splitlines())
    return sorted(match.groups() for match in found if match)


ARGS = ["check", ".", "--no-cache", "-j", "2", "--output-format", "json"]
# Text output: the JSON output's fixes import the rules, and with them astroid, in the parent.
TEXT_ARGS = ["check", ".", "--no-cache", "-j", "2"]


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
@pytest.mark.slow
def test_a_committed_multiprocessing_package_never_runs_in_a_worker(tmp_path, method):
    repo, markers = _checkout(tmp_path)
    _plant(repo, "multiprocessing", PLANTED_MULTIPROCESSING, markers)
    harness = tmp_path / "harness.py"
    harness.write_text(HARNESS)
    done = subprocess.run([sys.executable, str(harness), method, *ARGS], cwd=repo, capture_output=True, text=True,
                          timeout=120)
    assert not list(markers.iterdir()), f"the planted package ran: {sorted(p.name for p in markers.iterdir())}"
    assert done.returncode == 1, done.stderr
    assert _codes(done.stdout) == [(f"m{i}.py", "NNX201") for i in range(6)]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.slow
def test_workers_never_have_the_working_directory_on_their_path(tmp_path, method):
    """The parent runs with the checkout first on ``sys.path`` (``python -c`` from it, as an
    embedding or a notebook would): workers still import nothing from it."""
    repo, markers = _checkout(tmp_path)
    _plant(repo, "astroid", PLANTED_ASTROID, markers)
    program = HARNESS.replace("sys.argv[1]", repr(method)).replace("sys.argv[2:]", repr(TEXT_ARGS))
    done = subprocess.run([sys.executable, "-c", program], cwd=repo, capture_output=True, text=True, timeout=120)
    assert not list(markers.iterdir()), f"the planted package ran: {sorted(p.name for p in markers.iterdir())}"
    assert done.returncode == 1, done.stderr
    assert _text_codes(done.stdout) == [(f"m{i}.py", "NNX201") for i in range(6)]


def test_pythonpath_dot_does_not_reach_the_workers(tmp_path):
    repo, markers = _checkout(tmp_path)
    _plant(repo, "astroid", PLANTED_ASTROID, markers)
    environment = {**os.environ, "PYTHONPATH": "."}
    done = subprocess.run([sys.executable, "-m", "nnx_lint.cli", *TEXT_ARGS], cwd=repo, capture_output=True, text=True,
                          env={**environment, "PYTHONPATH": os.pathsep.join([".", str(REPO)])}, timeout=120)
    assert not list(markers.iterdir()), f"the planted package ran: {sorted(p.name for p in markers.iterdir())}"
    assert done.returncode == 1, done.stderr
    assert _text_codes(done.stdout) == [(f"m{i}.py", "NNX201") for i in range(6)]


def test_a_worker_that_imports_from_the_checkout_fails_the_run(tmp_path):
    """The tripwire behind the path: a worker whose path did hold the checkout (forced here
    through the harness) reports the module it imported from there, and the run fails
    instead of trusting its results."""
    repo, _ = _checkout(tmp_path)
    stdlib_textwrap = __import__("textwrap").__file__
    # A working copy of the standard textwrap module (the analysis imports it on every
    # Python), found first because the path is forced.
    (repo / "textwrap.py").write_text(f"exec(compile(open({stdlib_textwrap!r}).read(), {stdlib_textwrap!r}, 'exec'))\n")
    program = textwrap.dedent(f"""\
        import sys
        import nnx_lint.engine.workers.process as process
        trusted = process.trusted_path
        process.trusted_path = lambda untrusted: [{str(repo)!r}, *trusted(untrusted)]
        from nnx_lint.cli import main
        sys.exit(main({ARGS!r}))
        """)
    done = subprocess.run([sys.executable, "-c", program], cwd=repo, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "outside nnx-lint's installation" in done.stderr and "textwrap" in done.stderr
    assert done.stdout == ""


# -- a dead worker ---------------------------------------------------------------------------

# The worker bootstrap, with a test-only hook: the worker SIGKILLs itself (as the
# out-of-memory killer would) when it is handed `dies.py`, every time or only once.
KILLING_BOOTSTRAP = """\
import sys
sys.path[:] = sys.argv[2:]
import os, signal
import nnx_lint.engine.runner as runner
_real = runner.answer
def answer(request):
    if request["path"].endswith("dies.py"):
        once = {once!r}
        if once is None or not os.path.exists(once):
            if once is not None:
                open(once, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
    return _real(request)
runner.answer = answer
from nnx_lint.engine.workers.serve import main
main(sys.argv[1])
"""


def _run_with_killing_workers(repo: Path, once: Path | None) -> subprocess.CompletedProcess:
    program = textwrap.dedent(f"""\
        import sys
        import nnx_lint.engine.workers.process as process
        process.BOOTSTRAP = {KILLING_BOOTSTRAP.format(once=str(once) if once else None)!r}
        from nnx_lint.cli import main
        sys.exit(main({ARGS!r}))
        """)
    return subprocess.run([sys.executable, "-c", program], cwd=repo, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_a_file_that_kills_its_worker_twice_gets_nnx004_and_the_others_are_linted(tmp_path):
    repo, _ = _checkout(tmp_path)
    (repo / "dies.py").write_text(FINDING)
    done = _run_with_killing_workers(repo, once=None)
    assert done.returncode == 1, done.stderr
    found = json.loads(done.stdout)
    assert _codes(done.stdout) == sorted([("dies.py", "NNX004")] + [(f"m{i}.py", "NNX201") for i in range(6)])
    message = next(d["message"] for d in found if d["filename"] == "dies.py")
    assert "SIGKILL" in message and "retried" not in done.stdout
    assert "dies.py was killed by signal SIGKILL; the file is retried alone" in done.stderr


@pytest.mark.slow
def test_a_file_whose_worker_died_once_is_retried_alone_and_keeps_its_findings(tmp_path):
    repo, _ = _checkout(tmp_path)
    (repo / "dies.py").write_text(FINDING)
    done = _run_with_killing_workers(repo, once=tmp_path / "killed-once")
    assert (tmp_path / "killed-once").exists(), "the hook never fired"
    assert done.returncode == 1, done.stderr
    assert _codes(done.stdout) == sorted([("dies.py", "NNX201")] + [(f"m{i}.py", "NNX201") for i in range(6)])
    assert done.stderr.count("retried alone") == 1


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            # multiprocessing's helper processes are no workers (nnx-lint no longer starts any)
            if int(fields[1]) == pid and b"resource_tracker" not in command and b"forkserver" not in command:
                found.append(int(entry.name))
    return found


def _cwd(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.slow
def test_a_worker_killed_from_outside_costs_nothing(tmp_path):
    """SIGKILL one worker of a real run mid-way (as the out-of-memory killer would): the run
    goes on and reports every file, as a run without the kill does."""
    repo, _ = _checkout(tmp_path, files=40)
    command = [sys.executable, "-m", "nnx_lint.cli", *ARGS]
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.Popen(command, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=environment)
    deadline = time.monotonic() + 60
    busy: list[int] = []
    while not busy and time.monotonic() < deadline and run.poll() is None:
        # A worker moves into the run's directory once it is ready: from then on it analyses.
        busy = [pid for pid in _children(run.pid) if _cwd(pid) == os.path.realpath(repo)]
        time.sleep(0.02)
    assert busy, "no worker process got to work"
    os.kill(busy[0], signal.SIGKILL)
    stdout, stderr = run.communicate(timeout=120)
    assert run.returncode == 1, stderr
    assert _codes(stdout) == sorted((f"m{i}.py", "NNX201") for i in range(40))
    assert "internal error" not in stderr
    # The kill landed between two files, or on one that was then retried alone.
    assert stderr.count("retried alone") <= 1 and "NNX004" not in stdout


def test_the_worker_path_keeps_the_installation_and_drops_the_checkout(tmp_path, monkeypatch):
    """A ``.venv`` inside the checkout is part of the installation and stays; ``''``, ``.``,
    the checkout and anything else inside it (``PYTHONPATH=src``, an editable install of the
    analysed project) go; entries outside it stay, in order."""
    from nnx_lint.engine.workers import process

    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    venv_site = repo / ".venv" / "lib" / "site-packages"
    for directory in (repo / "src", venv_site, elsewhere):
        directory.mkdir(parents=True)
    monkeypatch.chdir(repo)
    monkeypatch.setattr(sys, "prefix", str(repo / ".venv"))
    monkeypatch.setattr(sys, "path", ["", ".", str(repo), "src", str(elsewhere), str(venv_site), str(repo / "src")])
    path = process.trusted_path(process.untrusted_dirs([str(repo)]))
    assert path[:2] == [str(elsewhere), str(venv_site)]
    assert path[2:] in ([], [process.own_dir()]), "only nnx-lint's own directory may follow, last"


def test_a_worker_whose_parent_has_gone_ends_quietly(tmp_path):
    """A run that ends while a worker still starts (the other workers linted every file) closes
    that worker's pipes: the worker ends without printing a BrokenPipeError traceback into the
    run's output (it shares the run's stderr)."""
    from nnx_lint.engine.workers.process import (
        OWN_PACKAGES, installation_prefixes, own_dir, trusted_path, worker_command, worker_environment)

    process = subprocess.Popen(worker_command("lint", trusted_path([])), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
                               env=worker_environment())
    setup = {"cwd": str(tmp_path), "untrusted": [], "own_dir": own_dir(), "own_packages": list(OWN_PACKAGES),
             "prefixes": installation_prefixes()}
    process.stdout.close()  # the parent is gone before the worker says it is ready
    process.stdin.write(json.dumps(setup).encode() + b"\n")
    process.stdin.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 0
    assert "Traceback" not in stderr, stderr
