"""One run of the test command in one mode: environment, time budget, process group, progress."""
from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from nnx_lint.gate.bytecode import set_bytecode_environment
from nnx_lint.gate.channel import CHANNEL_ENV, REPORT_ENV, ChannelReader
from nnx_lint.gate.modes import MODES, Mode
from nnx_lint.gate.progress import Progress
from nnx_lint.gate.results import RunResults, read_junit, results_from_records
from nnx_lint.gate.trust import run_trust_problems
from nnx_lint.confirmation.sandbox import OrphanSweeper

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


@dataclass
class RunRecord:
    """How one run of the test command went.

    ``status``: ``finished``; ``no-tests`` (nothing collected); ``timeout`` (stopped at the
    time budget); ``interrupted`` (Ctrl-C); ``failed-to-start``; ``crashed`` (ended without
    the plugin's last line, e.g. a segfault or ``os._exit``); ``usage-error`` (pytest exit 3/4);
    ``untrusted`` (its records cannot be believed: ``trust_problems`` says why).
    """

    mode: str
    command: list[str]
    status: str
    results: RunResults = field(default_factory=RunResults)
    returncode: int | None = None
    elapsed: float = 0.0
    output_tail: str = ""
    trust_problems: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.status == "finished"


def _environment(mode: Mode, channel: str | None, workdir: Path) -> dict[str, str]:
    environment = dict(os.environ)
    # Only the gate names where the plugin's records go; a report file is never named.
    environment.pop(REPORT_ENV, None)
    environment.pop(CHANNEL_ENV, None)
    environment.update(mode.environment)
    if channel is not None:
        environment[CHANNEL_ENV] = channel
    set_bytecode_environment(environment, workdir)
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
             progress: Progress | None = None, phase: str = "", sweeper: OrphanSweeper | None = None,
             stop: threading.Event | None = None, on_collected: Callable[[], None] | None = None) -> RunRecord:
    """Run ``command`` once in ``mode`` and read its per-test results.

    ``workdir`` is the gate's private temporary directory: the junit file, the command's
    output and a copy of the verified records (``<label>.jsonl``) go there, never into the
    user's tree. The records themselves are read from the run's channel as they arrive.
    ``sweeper`` kills what the run left behind outside its process group. ``stop``, when set
    from another thread, ends the run as Ctrl-C would (status ``interrupted``). ``on_collected``
    is called once, when the run reports that it has collected its tests (its imports are done).
    """
    report = workdir / f"{label}.jsonl"
    junit = workdir / f"{label}.xml"
    output = workdir / f"{label}.out"
    for stale in (report, junit):
        stale.unlink(missing_ok=True)
    junit_mode = uses_junit(command)
    full_command = [argument.replace(JUNIT_PLACEHOLDER, str(junit)) for argument in command]
    channel = None
    if is_pytest_command(command) and not junit_mode:
        full_command = full_command + list(PYTEST_OPTIONS)
        channel = ChannelReader(save_to=report)
    started = time.monotonic()
    record = RunRecord(mode=mode.name, command=full_command, status="finished")
    try:
        with open(output, "wb") as sink:
            process = subprocess.Popen(
                full_command, cwd=cwd, env=_environment(mode, channel.environment_value if channel else None, workdir),
                stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
                pass_fds=(channel.write_fd, channel.key_fd) if channel else ())
    except OSError as exc:
        if channel is not None:
            channel.close()
        record.status = "failed-to-start"
        record.output_tail = f"{full_command[0]}: {exc.strerror or exc}"
        return record
    if channel is not None:
        channel.handed_over()
    try:
        while True:
            # Read the records as they come (a full pipe would block the tests), else just wait.
            if channel is not None and not channel.closed:
                channel.poll(_POLL_SECONDS)
                if on_collected is not None and channel.total is not None:
                    on_collected()
                    on_collected = None
                if process.poll() is not None:
                    break
            else:
                try:
                    process.wait(timeout=_POLL_SECONDS)
                    break
                except subprocess.TimeoutExpired:
                    pass
            if progress is not None:
                progress.show(phase, channel.done if channel else 0, channel.total if channel else None)
            if deadline is not None and time.monotonic() > deadline:
                _kill_group(process)
                record.status = "timeout"
                break
            if stop is not None and stop.is_set():
                _kill_group(process)
                record.status = "interrupted"
                break
    except KeyboardInterrupt:
        _kill_group(process)
        _sweep(sweeper)
        record.status = "interrupted"
        record.elapsed = time.monotonic() - started
        record.results = _channel_results(channel)
        raise GateInterrupted(record) from None
    # Nothing of the run may live on: not its group, not what left the group (setsid).
    _kill_group(process)
    _sweep(sweeper)
    record.elapsed = time.monotonic() - started
    if progress is not None and phase:
        progress.show(phase, channel.done if channel else 0, channel.total if channel else None)
        progress.phase(f"{phase}: ended ({record.status}), {channel.done if channel else '?'} test(s) reported "
                       f"in {record.elapsed:.0f}s")
    return _finish(record, process.returncode, channel, junit if junit_mode else None, output, cwd)


def _sweep(sweeper: OrphanSweeper | None) -> None:
    if sweeper is not None:
        sweeper.sweep()


def _channel_results(channel: ChannelReader | None) -> RunResults:
    """The results of the records received so far (none without a channel)."""
    if channel is None:
        return RunResults()
    channel.finish()
    results = results_from_records(channel.records)
    results.channel_problems = list(channel.problems)
    return results


def _finish(record: RunRecord, returncode: int | None, channel: ChannelReader | None, junit: Path | None,
            output: Path, cwd: Path) -> RunRecord:
    """Read a run's results and decide its status from them, the exit status, and their agreement."""
    record.returncode = returncode
    record.output_tail = _tail(output)
    record.results = read_junit(junit, cwd) if junit is not None else _channel_results(channel)
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
    mode = next((candidate for candidate in MODES if candidate.name == record.mode), None)
    if mode is not None and channel is not None:
        record.trust_problems = run_trust_problems(record.results, mode, returncode, record.output_tail)
        if record.trust_problems and record.status in ("finished", "no-tests", "crashed"):
            record.status = "untrusted"
    return record


def warm_python(command: list[str]) -> str | None:
    """The interpreter of a ``<python> -m pytest`` command (re-runs can then be forked warm)."""
    return command[0] if len(command) >= 3 and command[1:3] == ["-m", "pytest"] else None


class WarmServer:
    """The client of ``nnx_lint.gate.warm``: one server per mode, one forked process per re-run.

    Requests go over a Unix socket (the server's stdin) together with the two descriptors of
    the re-run's channel, so a forked re-run reports to the gate exactly as a fresh one does.
    """

    def __init__(self, python: str, mode: Mode, *, cwd: Path, workdir: Path, sweeper: OrphanSweeper | None = None):
        self.mode, self.cwd, self.workdir = mode, cwd, workdir
        self._buffer = b""
        self._requests, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with open(workdir / f"warm-{mode.name}.out", "wb") as sink:
                preload = workdir / "warm-preload.json"
                self.process = subprocess.Popen(
                    [python, "-m", "nnx_lint.gate.warm", *(["--preload", str(preload)] if preload.is_file() else [])],
                    cwd=cwd, env=_environment(mode, None, workdir),
                    stdin=server_end.fileno(), stdout=subprocess.PIPE, stderr=sink, start_new_session=True)
        finally:
            server_end.close()
        if sweeper is not None:
            sweeper.own(self.process.pid)

    def _reply(self, deadline: float | None, channel: ChannelReader,
               stop: threading.Event | None = None) -> dict | None:
        """The server's next reply, or None at the deadline, when ``stop`` is set, or when the server is gone.

        The re-run's records are read meanwhile: a re-run that fills the pipe would otherwise wait
        for the gate, and the gate for it.
        """
        descriptor = self.process.stdout.fileno()  # type: ignore[union-attr]
        while b"\n" not in self._buffer:
            wait = _POLL_SECONDS if deadline is None else max(0.0, min(_POLL_SECONDS, deadline - time.monotonic()))
            watched = [descriptor] + ([channel.fileno()] if not channel.closed else [])
            ready, _, _ = select.select(watched, [], [], wait)
            if not channel.closed and channel.fileno() in ready:
                channel.read_ready()
            if descriptor in ready:
                chunk = os.read(descriptor, 65536)
                if not chunk:
                    return None
                self._buffer += chunk
            elif not ready and deadline is not None and time.monotonic() >= deadline:
                return None
            if stop is not None and stop.is_set():
                return None
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            reply = json.loads(line)
        except ValueError:
            return None
        return reply if isinstance(reply, dict) else None

    def run(self, args: list[str], *, label: str, deadline: float | None,
            sweeper: OrphanSweeper | None = None, stop: threading.Event | None = None) -> RunRecord | None:
        """One re-run; None when the server is not usable (the caller then runs it cold).

        ``stop``, when set from another thread, ends the re-run (status ``interrupted``).
        """
        report, output = self.workdir / f"{label}.jsonl", self.workdir / f"{label}.out"
        report.unlink(missing_ok=True)
        record = RunRecord(mode=self.mode.name, command=["(warm)", *args], status="finished")
        started = time.monotonic()
        channel = ChannelReader(save_to=report)
        try:
            request = json.dumps({"args": args, "output": str(output)}).encode() + b"\n"
            socket.send_fds(self._requests, [request], [channel.write_fd, channel.key_fd])
        except OSError:
            channel.close()
            return None
        channel.handed_over()
        pid = None
        try:
            started_reply = self._reply(None, channel, stop)
            if started_reply is None or not isinstance(started_reply.get("pid"), int) or started_reply["pid"] <= 1:
                channel.close()
                return None
            pid = int(started_reply["pid"])
            ended = self._reply(deadline, channel, stop)
            if ended is None:
                _kill_pid_group(pid)
                record.status = "interrupted" if stop is not None and stop.is_set() else "timeout"
                ended = self._reply(time.monotonic() + 10, channel)
        except KeyboardInterrupt:
            if pid is not None:
                _kill_pid_group(pid)
            self.close()
            _sweep(sweeper)
            record.status = "interrupted"
            record.results = _channel_results(channel)
            raise GateInterrupted(record) from None
        if pid is not None:
            _kill_pid_group(pid, grace=0.0)  # whatever the re-run left in its group
        _sweep(sweeper)
        record.elapsed = time.monotonic() - started
        returncode = None if ended is None or not isinstance(ended.get("exit"), int) else int(ended["exit"])
        return _finish(record, returncode, channel, None, output, self.cwd)

    def close(self) -> None:
        """Stop the server and its whole group.

        The server holds nothing worth an orderly exit (it only imported; each re-run was its own
        forked child, already waited for), and an interpreter that loaded jax takes a noticeable
        fraction of a second to tear down, so it is terminated rather than asked to exit.
        """
        try:
            self._requests.close()
        except OSError:
            pass
        _kill_group(self.process)


def _kill_pid_group(pid: int, grace: float = _KILL_GRACE_SECONDS) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(grace if sig == signal.SIGTERM else 0)


class GateInterrupted(Exception):
    """Ctrl-C during a run: carries the partial record of the run that was stopped."""

    def __init__(self, record: RunRecord):
        super().__init__("interrupted")
        self.record = record
