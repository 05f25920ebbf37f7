"""Progress on a terminal (issue 45), as a user meets it: the real ``nnx-lint`` console script
with its stderr on a pseudo-terminal (``pty.openpty``), on a scratch project of a few files.

On a terminal, ``check``, ``check --fix`` and the gate's lint step redraw one status line in
place (files done of total, time elapsed, "cache invalidated: re-analysing" when unchanged files
must be analysed again), and erase it before the report. With stderr on a pipe, or with ``-q``,
there is no progress at all.
"""
from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")

#: The console script installed beside this interpreter (the one a user runs).
CONSOLE_SCRIPT = str(Path(sys.executable).with_name("nnx-lint"))
MODULE = textwrap.dedent("""\
    from flax import nnx


    class Block{n}(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(2, 2, rngs=rngs)


    @nnx.jit
    def step{n}(model, x):
        model.count = {n}
        return x
    """)
STATUS = re.compile(rb"\rnnx-lint: (cache invalidated: re-analysing, )?(\d+)/(\d+) files (\w+), \d+:\d\d elapsed")


def _project(root: Path, files: int = 4) -> Path:
    for n in range(files):
        (root / f"block{n}.py").write_text(MODULE.format(n=n))
    (root / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    return root


def _on_terminal(arguments: list[str], cwd: Path, console: list[str] | None = None) -> tuple[int, bytes, bytes]:
    """Run the console script with stderr on a pseudo-terminal: (exit status, stdout, what the terminal got)."""
    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen((console or [CONSOLE_SCRIPT]) + arguments, cwd=cwd, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=terminal)
    finally:
        os.close(terminal)
    screen = b""
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        screen += chunk
    os.close(controller)
    stdout = process.stdout.read()
    process.stdout.close()
    return process.wait(timeout=600), stdout, screen


def _statuses(screen: bytes) -> list[tuple[bool, int, int, str]]:
    return [(bool(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4).decode())
            for m in STATUS.finditer(screen)]


def test_check_on_a_terminal_counts_the_files_and_erases_the_line_before_the_report(tmp_path):
    root = _project(tmp_path)
    status, stdout, screen = _on_terminal(["check", "--no-cache", "-j", "1", "."], root)
    assert status == 1, (stdout, screen)
    statuses = _statuses(screen)
    assert statuses[0] == (False, 0, 4, "checked") and statuses[-1] == (False, 4, 4, "checked"), screen
    assert screen.endswith(b"\r"), screen  # the line is blanked and the cursor back at its start
    assert screen.rsplit(b"\r", 2)[-2].strip() == b"", screen
    assert b"NNX301" in stdout and b"\r" not in stdout


@pytest.mark.slow
def test_no_progress_when_stderr_is_not_a_terminal_or_with_quiet(tmp_path):
    root = _project(tmp_path)
    piped = subprocess.run([CONSOLE_SCRIPT, "check", "--no-cache", "-j", "1", "."], cwd=root,
                           capture_output=True, timeout=600)
    assert piped.returncode == 1 and b"NNX301" in piped.stdout
    assert b"\r" not in piped.stderr and b"files checked" not in piped.stderr, piped.stderr
    status, stdout, screen = _on_terminal(["check", "--no-cache", "-q", "-j", "1", "."], root)
    assert status == 1 and b"NNX301" in stdout
    assert screen == b"", screen


@pytest.mark.slow
def test_a_cache_made_under_another_key_says_so(tmp_path):
    root = _project(tmp_path, files=2)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    _on_terminal(["check", *cache, "-j", "1", "."], root)
    status, _, screen = _on_terminal(["check", *cache, "-j", "1", "."], root)
    assert _statuses(screen) == [(False, 0, 0, "checked")], screen  # all from the cache: nothing to say
    # Another target version keys every entry anew: the unchanged files are analysed again.
    (root / "pyproject.toml").write_text('[tool.nnx-lint]\ntarget-version = "py310"\n')
    status, stdout, screen = _on_terminal(["check", *cache, "-j", "1", "."], root)
    assert status == 1 and b"NNX301" in stdout
    statuses = _statuses(screen)
    assert statuses[0] == (True, 0, 2, "checked") and statuses[-1] == (True, 2, 2, "checked"), screen


def test_fix_on_a_terminal_counts_the_files_it_fixes(tmp_path):
    pytest.importorskip("libcst")
    root = _project(tmp_path, files=2)
    status, _, screen = _on_terminal(["check", "--no-cache", "--fix", "-j", "1", "."], root)
    statuses = _statuses(screen)
    fixing = [s for s in statuses if s[3] == "fixed"]
    assert fixing[0] == (False, 0, 2, "fixed") and fixing[-1] == (False, 2, 2, "fixed"), screen
    assert statuses[-1][3] == "checked", screen  # then the lint of what remains


@pytest.mark.slow
def test_the_gates_lint_step_on_a_terminal(tmp_path):
    pytest.importorskip("flax")
    root = _project(tmp_path, files=2)
    (root / "pytest.ini").write_text("[pytest]\npython_files = check_*.py\n")
    (root / "check_mode.py").write_text("def test_ok():\n    assert True\n")
    status, stdout, screen = _on_terminal(
        ["gate", ".", "--", sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"], root)
    assert re.search(rb"\rnnx-lint gate: lint 0/2 files, ", screen), screen
    assert re.search(rb"\rnnx-lint gate: lint 2/2 files, ", screen), screen
    assert b"\r" not in stdout, stdout
