"""The confirmation worker runs isolated (issue 10, item 4).

Generated programs, given to :func:`nnx_lint.confirmation.oracle.run_programs` as ``--confirm``
does, look at the worker from the inside: what is on ``sys.path``, which directory it
runs in, which environment variables it sees. A program that hangs costs only its own
verdict, and nothing it started survives.
"""
from __future__ import annotations

import os
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("jax")

from nnx_lint.confirmation.oracle import run_programs  # noqa: E402


def _program(body: str) -> str:
    """An untraced reproduction whose observation is what ``body`` returns."""
    return "import os, sys\n\nTRACED = False\n\ndef run(nnx):\n" + textwrap.indent(textwrap.dedent(body), "    ")


def test_a_planted_module_in_the_temporary_directory_is_not_imported(tmp_path, monkeypatch):
    planted_dir = tmp_path / "shared-tmp"
    planted_dir.mkdir()
    marker = tmp_path / "pwned"
    for name in ("jax", "numpy", "tree_runtime", "json", "traceback"):
        (planted_dir / f"{name}.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.setattr(tempfile, "tempdir", str(planted_dir))
    monkeypatch.setenv("TMPDIR", str(planted_dir))
    (outcome,) = run_programs([_program("return 42\n")], "tree_runtime")
    assert not marker.exists(), "the worker imported a module planted in the temporary directory"
    assert outcome == {"status": "ok", "observation": 42}


def test_the_worker_path_and_directory_are_private(tmp_path):
    (outcome,) = run_programs([_program("""\
        import stat
        here = os.getcwd()
        return [here, sys.path, oct(stat.S_IMODE(os.stat(here).st_mode)), os.environ.get("HOME"),
                os.environ.get("TMPDIR"), sorted(os.listdir(here))]
        """)], "tree_runtime")
    assert outcome["status"] == "ok", outcome
    cwd, path, mode, home, temporary, _listing = outcome["observation"]
    assert mode == "0o700" and home == cwd and temporary == cwd
    assert cwd not in path and "" not in path and "." not in path
    assert tempfile.gettempdir() not in path
    assert path[0] == str(Path(__file__).resolve().parent.parent), "only nnx-lint's own directory is added"
    assert not Path(cwd).exists(), "the private directory is removed afterwards"


def test_the_worker_does_not_see_the_callers_secrets(monkeypatch):
    secrets = {"GITHUB_TOKEN": "ghp_secret", "AWS_SECRET_ACCESS_KEY": "aws-secret", "NNX_TEST_API_TOKEN": "nnx-test-token-value",
               "PYTHONPATH": "/nonexistent/injected", "PYTHONSTARTUP": "/nonexistent/startup.py",
               "JAX_ENABLE_X64": "1"}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LANG", "C.UTF-8")
    (outcome,) = run_programs([_program("return dict(os.environ)\n")], "tree_runtime")
    assert outcome["status"] == "ok", outcome
    seen = outcome["observation"]
    assert not set(secrets) & set(seen), f"leaked into the worker: {sorted(set(secrets) & set(seen))}"
    assert not any(secrets[name] in " ".join(seen.values()) for name in ("GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY",
                                                                        "NNX_TEST_API_TOKEN", "PYTHONPATH"))
    assert seen["JAX_PLATFORMS"] == "cpu" and seen["PYTHONHASHSEED"] == "0" and seen["LANG"] == "C.UTF-8"


def _state(pid: int) -> str | None:
    """The process state letter from /proc, or None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return None


def _live_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry.name))
    return members


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.slow
def test_a_hanging_program_costs_only_its_own_verdict_and_leaves_no_process(tmp_path):
    record = tmp_path / "grandchild"
    hanging = _program(f"""\
        import subprocess
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open({str(record)!r}, "w") as handle:
            handle.write(f"{{child.pid}} {{os.getpgid(0)}} {{os.getpid()}}")
        while True:
            pass
        """)
    programs = [_program("return os.getpid()\n"), _program("return os.getpid()\n"), hanging,
                _program("return os.getpid()\n"), _program("return 'after'\n")]
    outcomes = run_programs(programs, "tree_runtime", timeout=5)
    assert [o["status"] for o in outcomes] == ["ok", "ok", "error", "ok", "ok"], outcomes
    assert outcomes[0]["observation"] == outcomes[1]["observation"], "one worker serves many programs"
    assert "timed out" in outcomes[2]["message"] and outcomes[2].get("transient") is True
    assert outcomes[3]["observation"] != outcomes[0]["observation"], "a fresh worker took over"
    assert outcomes[4]["observation"] == "after"
    grandchild, pgid, worker = (int(n) for n in record.read_text().split())
    assert pgid == worker, "the worker leads its own process group"
    deadline = time.monotonic() + 10
    while (_state(grandchild) not in (None, "Z") or _live_members(pgid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _state(grandchild) in (None, "Z"), "the program's child outlived the timeout"
    assert _live_members(pgid) == [], "a process of the killed worker's group is still running"


@pytest.mark.slow
def test_a_crashing_or_chatty_program_costs_only_its_own_verdict():
    programs = [_program("print('noise on stdout'); print('more', file=sys.stderr)\nreturn [1, sys.stdin.read()]\n"),
                _program("os._exit(3)\n"), _program("return 2\n")]
    outcomes = run_programs(programs, "tree_runtime")
    assert outcomes[0] == {"status": "ok", "observation": [1, ""]}, "a program's input and output never touch the protocol"
    assert outcomes[1]["status"] == "error" and outcomes[1].get("transient") is True
    assert outcomes[2] == {"status": "ok", "observation": 2}


def test_the_worker_bootstrap_never_runs_from_the_current_directory(tmp_path, monkeypatch):
    marker = tmp_path / "pwned"
    for name in ("tree_runtime", "jax", "numpy"):
        (tmp_path / f"{name}.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.chdir(tmp_path)
    (outcome,) = run_programs([_program("return sys.version_info[0]\n")], "tree_runtime")
    assert outcome == {"status": "ok", "observation": sys.version_info[0]} and not marker.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the guarantee is Linux's (a child subreaper)")
def test_a_child_in_a_new_session_does_not_outlive_the_worker():
    """A program's child that leaves the worker's process group (``setsid``) is killed with the worker."""
    (outcome,) = run_programs([_program("""\
        import subprocess
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
        return child.pid
        """)], "tree_runtime")
    assert outcome["status"] == "ok", outcome
    child = outcome["observation"]
    deadline = time.monotonic() + 10
    while _state(child) not in (None, "Z") and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        assert _state(child) in (None, "Z"), "the program's child in a new session outlived the worker"
    finally:
        try:
            os.kill(child, 9)
        except ProcessLookupError:
            pass
