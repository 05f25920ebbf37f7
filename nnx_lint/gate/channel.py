"""The channel from the gate's pytest plugin to the gate: a pipe, signed records, read live.

The tests run in the same process as the plugin, and they can write files: a report file
named in their environment could be rewritten after the fact (a "failed" turned into
"passed"), and a record appended to it would be read like the plugin's own. So the gate
gives each run of the test command

- a **pipe** whose write end the test process inherits; the gate holds the only read end and
  reads records as they arrive, so what has been sent can be neither rewritten nor removed;
- a **per-run key** (32 random bytes) written into a second pipe, which the plugin empties and
  closes when pytest loads it, before any ``conftest.py`` or test module of the project is
  imported. The key is never in the environment, on the command line, or in a file.

Every record is one line, ``<HMAC-SHA256 of the JSON, hex> <JSON>``, and carries a sequence
number: a line that is not signed with the run's key, or that arrives out of order, makes
the gate distrust the whole run (exit 2), never turn a failure into a pass. What this does
not stop is code that reaches into the plugin's memory (or that runs before the plugin and
takes the key): see ``docs/security.md``, "The gate".

Only the standard library is used: the plugin side runs inside the test process.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import select
from pathlib import Path
from typing import Any

#: Outside the gate: the file the plugin appends its records to (unsigned), for measurement
#: scripts. The gate never sets it, and removes it from the test command's environment.
REPORT_ENV = "NNX_LINT_GATE_REPORT"
#: ``<record fd>:<key fd>`` in the test command's environment; the plugin removes it.
CHANNEL_ENV = "NNX_LINT_GATE_CHANNEL"
KEY_BYTES = 32
#: A line longer than this is not a record of the plugin (which bounds what it writes).
_MAX_LINE = 8 * 1024 * 1024
#: How many different channel problems a run keeps.
_MAX_PROBLEMS = 5


def _mac(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, body, hashlib.sha256).hexdigest().encode("ascii")


class RecordWriter:
    """The plugin's end: signs each record with the run's key and writes it to the pipe."""

    def __init__(self, descriptor: int, key: bytes):
        self._descriptor, self._key, self._sequence = descriptor, key, 0
        self.broken = False

    def send(self, record: dict[str, Any]) -> None:
        """Sign and write one record; a gate that stopped reading costs nothing but the record."""
        if self.broken:
            return
        body = json.dumps({**record, "seq": self._sequence}, default=str).encode("utf-8")
        self._sequence += 1
        data = _mac(self._key, body) + b" " + body + b"\n"
        try:
            while data:
                written = os.write(self._descriptor, data)
                data = data[written:]
        except OSError:  # the gate is gone (a timeout, Ctrl-C): the test run goes on unreported
            self.broken = True


def open_writer_from_environment() -> RecordWriter | None:
    """The writer for the channel named in :data:`CHANNEL_ENV`, or None outside a gate run.

    Removes the variable, reads the key and closes its descriptor, and keeps the record
    descriptor out of every process the tests start (close-on-exec).
    """
    value = os.environ.pop(CHANNEL_ENV, None)
    if not value:
        return None
    try:
        record_fd, key_fd = (int(part) for part in value.split(":"))
    except ValueError:
        return None
    key = b""
    try:
        while len(key) < KEY_BYTES:
            chunk = os.read(key_fd, KEY_BYTES - len(key))
            if not chunk:
                break
            key += chunk
        os.close(key_fd)
    except OSError:
        pass
    try:
        os.set_inheritable(record_fd, False)
    except OSError:
        return None
    # A missing key (something else emptied the pipe first) still sends records: unsigned,
    # they make the gate refuse the run instead of silently reporting nothing.
    return RecordWriter(record_fd, key)


class ChannelReader:
    """The gate's end of one run's channel: makes the pipes, then reads and verifies records live.

    ``save_to`` receives the verified records as plain JSON lines (the format of the plugin's
    report file), for tools that keep the gate's working directory.
    """

    def __init__(self, save_to: Path | None = None):
        self.key = secrets.token_bytes(KEY_BYTES)
        self._read_fd, self.write_fd = os.pipe()
        self.key_fd, key_write = os.pipe()
        os.write(key_write, self.key)  # 32 bytes always fit in a pipe's buffer
        os.close(key_write)
        os.set_blocking(self._read_fd, False)
        self.records: list[dict[str, Any]] = []
        self.problems: list[str] = []
        self.done, self.total = 0, None
        self._buffer = b""
        self._sequence = 0
        self._save_to = save_to
        self._closed = False

    @property
    def environment_value(self) -> str:
        """The value of :data:`CHANNEL_ENV` for a child that inherits both descriptors unchanged."""
        return f"{self.write_fd}:{self.key_fd}"

    def handed_over(self) -> None:
        """Close the gate's copies of the child's ends, once the child has them: end of file then
        means that every process holding the write end is gone."""
        for descriptor in (self.write_fd, self.key_fd):
            try:
                os.close(descriptor)
            except OSError:
                pass
        self.write_fd = self.key_fd = -1

    @property
    def closed(self) -> bool:
        """True once the pipe is closed (end of file, or :meth:`finish`)."""
        return self._closed

    def fileno(self) -> int:
        """The read end, for ``select``."""
        return self._read_fd

    def read_ready(self) -> bool:
        """Read what ``select`` said is there; False at end of file."""
        return False if self._closed else self._read_available()

    def poll(self, timeout: float = 0.0) -> bool:
        """Read what has arrived (waiting up to ``timeout``); False at end of file."""
        if self._closed:
            return False
        ready, _, _ = select.select([self._read_fd], [], [], timeout)
        if not ready:
            return True
        return self._read_available()

    def drain(self) -> None:
        """Read everything already in the pipe, without waiting for the writers to close it.

        A process the tests left behind may hold the write end open: the records of the run
        are complete once pytest has exited, whatever that process does.
        """
        if not self._closed:
            self._read_available()

    def _read_available(self) -> bool:
        while True:
            try:
                chunk = os.read(self._read_fd, 1 << 16)
            except BlockingIOError:
                return True
            except OSError:
                chunk = b""
            if not chunk:
                self.close()
                return False
            self._take(chunk)

    def _take(self, chunk: bytes) -> None:
        lines = (self._buffer + chunk).split(b"\n")
        self._buffer = lines.pop()
        if len(self._buffer) > _MAX_LINE:
            self._problem("a line on the plugin's channel exceeds the size the plugin ever writes")
            self._buffer = b""
        for line in lines:
            self._verify(line)

    def _problem(self, text: str) -> None:
        if len(self.problems) < _MAX_PROBLEMS and text not in self.problems:
            self.problems.append(text)

    def _verify(self, line: bytes) -> None:
        mac, _, body = line.partition(b" ")
        if not hmac.compare_digest(mac, _mac(self.key, body)):
            self._problem("a record on the plugin's channel is not signed with the run's key (something other "
                          "than the gate's plugin wrote to it)")
            return
        try:
            record = json.loads(body)
        except ValueError:
            self._problem("a signed record on the plugin's channel is not JSON")
            return
        if not isinstance(record, dict) or record.pop("seq", None) != self._sequence:
            self._problem("a signed record on the plugin's channel arrived out of order (replayed or reordered)")
            return
        self._sequence += 1
        self.records.append(record)
        if record.get("event") == "report" and record.get("phase") == "teardown":
            self.done += 1
        elif record.get("event") == "collected":
            try:
                self.total = max(self.total or 0, int(record["count"]))
            except (KeyError, TypeError, ValueError):
                pass
        if self._save_to is not None:
            with open(self._save_to, "a", encoding="utf-8") as stream:
                stream.write(json.dumps(record) + "\n")

    def finish(self) -> None:
        """After the run: read what is left, note a torn last line, and close the pipe."""
        self.drain()
        if self._buffer:
            self._buffer = b""  # a line torn by a crash or a kill: like a torn line of a report file
        self.close()

    def close(self) -> None:
        """Close every descriptor this reader still holds."""
        if not self._closed:
            self._closed = True
            try:
                os.close(self._read_fd)
            except OSError:
                pass
        if self.write_fd != -1 or self.key_fd != -1:
            self.handed_over()
