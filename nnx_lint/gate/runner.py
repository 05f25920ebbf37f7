"""One run of the test command in one mode: environment, time budget, process group, progress."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from nnx_lint.gate.modes import Mode
from nnx_lint.gate.results import RunResults, read_junit, read_plugin_report
from nnx_lint.gate.pytest_plugin import REPORT_ENV

#: The placeholder a non-pytest command uses for the junit XML path it must write.
JUNIT_PLACEHOLDER = "{junit}"
#: What the gate adds to every pytest command: its plugin, no cache in the user's tree,
#: and every collectable module run even when another one fails to import.
PYTEST_OPTIONS = ("-p", "nnx_lint.gate.pytest_plugin", "-p", "no:cacheprovider", "--continue-on-collection-errors")
#: pytest options whose value is a separate argument that may look like a path.
_PYTEST_VALUE_OPTIONS = frozenset({
    "--ignore", "--ignore-glob", "--deselect", "--rootdir", "-c", "--config-file", "--confcutdir", "--basetemp",
    "--junitxml", "--junit-xml", "--log-file", "-p", "-k", "-m", "-n", "--numprocesses", "-o", "--override-ini",
    "--import-mode", "--tb", "-W", "--maxfail", "--dist", "-r",
})
_POLL_SECONDS = 0.25
_KILL_GRACE_SECONDS = 3.0


def is_pytest_command(command: list[str]) -> bool:
    """True when ``command`` runs pytest: ``pytest ...``, ``py.test ...`` or ``<python> -m pytest ...``."""
    return bool(command) and (os.path.basename(command[0]) in ("pytest", "py.test") or command[1:3] == ["-m", "pytest"])


def uses_junit(command: list[str]) -> bool:
    return any(JUNIT_PLACEHOLDER in argument for argument in command)


def rerun_command(command: list[str], cwd: Path) -> list[str]:
    """``command`` without its test selection (paths, node ids) and without xdist's ``-n``.

    A re-run names exactly one test, so the paths of the full run must go; options (``-k``
    and the like) stay, as they selected the test in the first place.
    """
    kept: list[str] = []
    skip_value = False
    start = _pytest_argument_start(command)
    for index, argument in enumerate(command):
        if index < start:
            kept.append(argument)
            continue
        if skip_value:
            skip_value = False
            if kept and kept[-1] in ("-n", "--numprocesses"):
                kept.pop()
            else:
                kept.append(argument)
            continue
        if argument in _PYTEST_VALUE_OPTIONS:
            skip_value = True
            kept.append(argument)
            continue
        if argument.startswith(("-n=", "--numprocesses=")) or (argument.startswith("-n") and argument[2:].isdigit()):
            continue
        if not argument.startswith("-") and ("::" in argument or (cwd / argument).exists()):
            continue
        kept.append(argument)
    return kept


def _pytest_argument_start(command: list[str]) -> int:
    """The index of pytest's first own argument in ``command``."""
    if command and os.path.basename(command[0]) in ("pytest", "py.test"):
        return 1
    if command[1:3] == ["-m", "pytest"]:
        return 3
    return len(command)


class Progress:
    """One status line on stderr, rewritten in place; silent unless stderr is a TTY."""

    def __init__(self, enabled: bool | None = None, started: float | None = None):
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.started = started if started is not None else time.monotonic()
        self._width = 0

    def show(self, phase: str, done: int | None = None, total: int | None = None) -> None:
        if not self.enabled:
            return
        elapsed = int(time.monotonic() - self.started)
        counts = "" if done is None else f" {done}/{total if total is not None else '?'} tests"
        line = f"nnx-lint gate: {phase}{counts}, {elapsed // 60}:{elapsed % 60:02d} elapsed"
        sys.stderr.write("\r" + line.ljust(self._width))
        sys.stderr.flush()
        self._width = len(line)

    def clear(self) -> None:
        if self.enabled and self._width:
            sys.stderr.write("\r" + " " * self._width + "\r")
            sys.stderr.flush()
            self._width = 0


class _ReportTail:
    """Counts finished tests in a report that is still being written, reading only new bytes."""

    def __init__(self, path: Path):
        self.path, self.offset, self.done, self.total = path, 0, 0, None
        self._partial = b""

    def poll(self) -> None:
        try:
            with open(self.path, "rb") as stream:
                stream.seek(self.offset)
                data = stream.read()
        except OSError:
            return
        self.offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            if b'"phase": "teardown"' in line:
                self.done += 1
            elif b'"event": "collected"' in line:
                import json

                try:
                    self.total = max(self.total or 0, int(json.loads(line)["count"]))
                except (ValueError, KeyError):
                    pass


@dataclass
class RunRecord:
    """How one run of the test command went.

    ``status``: ``finished``; ``no-tests`` (nothing collected); ``timeout`` (stopped at the
    time budget); ``interrupted`` (Ctrl-C); ``failed-to-start``; ``crashed`` (ended without
    the plugin's last line, e.g. a segfault or ``os._exit``); ``usage-error`` (pytest exit 3/4).
    """

    mode: str
    command: list[str]
    status: str
    results: RunResults = field(default_factory=RunResults)
    returncode: int | None = None
    elapsed: float = 0.0
    output_tail: str = ""

    @property
    def complete(self) -> bool:
        return self.status == "finished"


def _environment(mode: Mode, report: Path) -> dict[str, str]:
    environment = dict(os.environ)
    environment.update(mode.environment)
    environment[REPORT_ENV] = str(report)
    # The user's tree is never modified: no __pycache__ (pytest's assertion rewriting obeys it too).
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    return environment


def _kill_group(process: subprocess.Popen) -> None:
    """Stop the whole process group (the test command and whatever it started)."""
    for sig, grace in ((signal.SIGTERM, _KILL_GRACE_SECONDS), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            process.wait(timeout=grace)
            # The leader is gone; make sure no child of it lingers in the group.
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue
        return


def _tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def run_once(command: list[str], mode: Mode, *, cwd: Path, workdir: Path, label: str, deadline: float | None,
             progress: Progress | None = None, phase: str = "") -> RunRecord:
    """Run ``command`` once in ``mode`` and read its per-test results.

    ``workdir`` is the gate's private temporary directory: the report, the junit file and
    the command's output go there, never into the user's tree.
    """
    report = workdir / f"{label}.jsonl"
    junit = workdir / f"{label}.xml"
    output = workdir / f"{label}.out"
    for stale in (report, junit):
        stale.unlink(missing_ok=True)
    junit_mode = uses_junit(command)
    full_command = [argument.replace(JUNIT_PLACEHOLDER, str(junit)) for argument in command]
    if is_pytest_command(command) and not junit_mode:
        full_command = full_command + list(PYTEST_OPTIONS)
    started = time.monotonic()
    record = RunRecord(mode=mode.name, command=full_command, status="finished")
    try:
        with open(output, "wb") as sink:
            process = subprocess.Popen(full_command, cwd=cwd, env=_environment(mode, report), stdin=subprocess.DEVNULL,
                                       stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as exc:
        record.status = "failed-to-start"
        record.output_tail = f"{full_command[0]}: {exc.strerror or exc}"
        return record
    tail = _ReportTail(report)
    try:
        while True:
            try:
                process.wait(timeout=_POLL_SECONDS)
                break
            except subprocess.TimeoutExpired:
                pass
            if progress is not None:
                tail.poll()
                progress.show(phase, tail.done, tail.total)
            if deadline is not None and time.monotonic() > deadline:
                _kill_group(process)
                record.status = "timeout"
                break
    except KeyboardInterrupt:
        _kill_group(process)
        record.status = "interrupted"
        record.elapsed = time.monotonic() - started
        record.results = read_plugin_report(report)
        raise GateInterrupted(record) from None
    record.elapsed = time.monotonic() - started
    return _finish(record, process.returncode, report, junit if junit_mode else None, output, cwd)


def _finish(record: RunRecord, returncode: int | None, report: Path, junit: Path | None, output: Path,
            cwd: Path) -> RunRecord:
    """Read a run's results and decide its status from them and the exit status."""
    record.returncode = returncode
    record.output_tail = _tail(output)
    record.results = read_junit(junit, cwd) if junit is not None else read_plugin_report(report)
    if record.status != "finished":
        return record
    if junit is not None:
        if not junit.exists():
            record.status = "crashed" if (returncode or 0) < 0 else "no-report"
        return record
    pytest_status = record.results.pytest_status
    if not record.results.finished:
        record.status = "crashed" if record.results.saw_session else "no-report"
    elif pytest_status == 5:
        record.status = "no-tests"
    elif pytest_status in (3, 4):
        record.status = "usage-error"
    elif pytest_status == 2:
        record.status = "interrupted"
    return record


def warm_python(command: list[str]) -> str | None:
    """The interpreter of a ``<python> -m pytest`` command (re-runs can then be forked warm)."""
    return command[0] if len(command) >= 3 and command[1:3] == ["-m", "pytest"] else None


class WarmServer:
    """The client of ``nnx_lint.gate.warm``: one server per mode, one forked process per re-run."""

    def __init__(self, python: str, mode: Mode, *, cwd: Path, workdir: Path):
        self.mode, self.cwd, self.workdir = mode, cwd, workdir
        self._buffer = b""
        with open(workdir / f"warm-{mode.name}.out", "wb") as sink:
            self.process = subprocess.Popen(
                [python, "-m", "nnx_lint.gate.warm"], cwd=cwd, env=_environment(mode, workdir / "unused.jsonl"),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sink, start_new_session=True)

    def _reply(self, deadline: float | None) -> dict | None:
        """The server's next reply, or None at the deadline or when the server is gone."""
        import json
        import select

        descriptor = self.process.stdout.fileno()  # type: ignore[union-attr]
        while b"\n" not in self._buffer:
            wait = _POLL_SECONDS if deadline is None else max(0.0, min(_POLL_SECONDS, deadline - time.monotonic()))
            ready, _, _ = select.select([descriptor], [], [], wait)
            if ready:
                chunk = os.read(descriptor, 65536)
                if not chunk:
                    return None
                self._buffer += chunk
            elif deadline is not None and time.monotonic() >= deadline:
                return None
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def run(self, args: list[str], *, label: str, deadline: float | None) -> RunRecord | None:
        """One re-run; None when the server is not usable (the caller then runs it cold)."""
        import json

        report, output = self.workdir / f"{label}.jsonl", self.workdir / f"{label}.out"
        report.unlink(missing_ok=True)
        record = RunRecord(mode=self.mode.name, command=["(warm)", *args], status="finished")
        started = time.monotonic()
        try:
            request = json.dumps({"args": args, "report": str(report), "output": str(output)}) + "\n"
            self.process.stdin.write(request.encode())  # type: ignore[union-attr]
            self.process.stdin.flush()  # type: ignore[union-attr]
        except (BrokenPipeError, OSError):
            return None
        pid = None
        try:
            started_reply = self._reply(None)
            if started_reply is None:
                return None
            pid = int(started_reply["pid"])
            ended = self._reply(deadline)
            if ended is None:
                _kill_pid_group(pid)
                record.status = "timeout"
                ended = self._reply(time.monotonic() + 10)
        except KeyboardInterrupt:
            if pid is not None:
                _kill_pid_group(pid)
            self.close()
            record.status = "interrupted"
            record.results = read_plugin_report(report)
            raise GateInterrupted(record) from None
        record.elapsed = time.monotonic() - started
        returncode = None if ended is None else int(ended["exit"])
        return _finish(record, returncode, report, None, output, self.cwd)

    def close(self) -> None:
        try:
            self.process.stdin.close()  # type: ignore[union-attr]
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            _kill_group(self.process)


def _kill_pid_group(pid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(_KILL_GRACE_SECONDS if sig == signal.SIGTERM else 0)


class GateInterrupted(Exception):
    """Ctrl-C during a run: carries the partial record of the run that was stopped."""

    def __init__(self, record: RunRecord):
        super().__init__("interrupted")
        self.record = record
