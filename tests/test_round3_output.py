"""Hostile repositories, round three (issue 44), h3 and m1: analysed text in every text-like output.

h3: GitHub's runner obeys the legacy ``##[command]`` anywhere in a line, Azure Pipelines ``##vso[...]``
anywhere in a line; only the start of a line was guarded. File names, directory names and ``setattr``
names carried live commands into the text, concise, full, pylint and flake8 outputs. m1: the language
server's hover escaped only ``<`` and ``>``, so a ``setattr`` name became a live remote image or a
``command:`` link. Every test runs the installed console scripts (``nnx-lint``, ``flake8``, ``pylint``,
``nnx-lint server``) as a user or an editor does, and checks that the findings are still reported.
"""
from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

SCRIPTS = Path(sys.executable).parent
FINDING = "from flax import nnx\nx = nnx.StateAxes({nnx.Param: 0})\nf = nnx.vmap(lambda m: m, in_axes=(x,))\n"
SETATTR = '''import jax.numpy as jnp
from flax import nnx


class Counter(nnx.Module):
    def __init__(self, rngs):
        setattr(self, {name!r}, nnx.Variable(jnp.array(0, dtype=jnp.int32)))
        self.lin = nnx.Linear(2, 2, rngs=rngs)


model = Counter(nnx.Rngs(0))
grads = nnx.grad(lambda m: 0.0)(model)
'''
#: A workflow command a CI runner obeys anywhere in a line (GitHub's legacy form; Azure's, any case).
LIVE_COMMAND = re.compile(r"##\[|##vso\[", re.IGNORECASE)

pytestmark = pytest.mark.skipif(os.name != "posix", reason="file names with # [ and escape characters: POSIX")


def run(tool: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPTS / tool), *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          errors="replace")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """A repository whose file names, directory names and setattr names carry workflow commands."""
    root = tmp_path_factory.mktemp("h3") / "repo"
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    (root / "a##[error]FORGED FROM A FILE NAME.py").write_text(FINDING)
    (root / "b##vso[task.setvariable variable=FORGED]1.py").write_text(FINDING)
    (root / "c\x1b[2Jclear.py").write_text(FINDING)
    (root / "d##VSO[task.complete result=Succeeded]dir").mkdir()
    (root / "d##VSO[task.complete result=Succeeded]dir" / "inner.py").write_text(FINDING)
    (root / "m.py").write_text(SETATTR.format(name="##[stop-commands]tok"))
    (root / "n.py").write_text(SETATTR.format(name="x ##vso[task.setvariable variable=FORGED]1 #"))
    return root


def _assert_no_live_command(output: str, where: str) -> None:
    assert not LIVE_COMMAND.search(output), (where, [line for line in output.splitlines() if LIVE_COMMAND.search(line)])
    assert "\x1b" not in output, where


@pytest.mark.parametrize("options", [
    ["--output-format", "text", "--show-help"], ["--output-format", "concise"], ["--output-format", "full"],
    ["--output-format", "pylint"], ["--output-format", "github"], ["--output-format", "markdown"],
    ["--statistics"], ["--statistics", "--group-by", "file"], ["--statistics", "--group-by", "directory"],
    ["--show-fixes"], ["--diff"], ["--output-format", "json"], ["--output-format", "sarif"],
    ["--output-format", "gitlab"], ["--output-format", "junit"], ["--statistics", "--output-format", "json"],
], ids=lambda options: " ".join(options))
def test_h3_no_workflow_command_anywhere_in_a_line_of_any_text_output(hostile, options):
    done = run("nnx-lint", "check", ".", "--no-cache", "-j1", *options, cwd=hostile)
    _assert_no_live_command(done.stdout + done.stderr, options)
    assert done.returncode == 1, done.stderr  # the findings are still there
    if options[0] == "--output-format":
        assert (done.stdout + done.stderr).count("NNX201") >= 4, done.stdout  # one per hostile-named file
    if options[1:] == ["json"]:  # JSON printed to a log is escaped losslessly: the names read back whole
        assert "a##[error]FORGED FROM A FILE NAME.py" in {item["filename"] for item in json.loads(done.stdout)}
    if "--output-format" not in options or options[1] in ("text", "concise", "full", "pylint"):
        lines = (done.stdout + done.stderr).splitlines()
        assert not [line for line in lines if line.lstrip().startswith("::")]


@pytest.mark.slow
def test_h3_the_plugins_print_file_names_escaped_too(hostile):
    flake8 = run("flake8", "--isolated", "--select", "NNX", "--show-source", ".", cwd=hostile)
    _assert_no_live_command(flake8.stdout + flake8.stderr, "flake8")
    assert flake8.stdout.count("NNX201") == 4, flake8.stdout
    files = sorted(str(path.relative_to(hostile)) for path in hostile.rglob("*.py"))
    pylint = run("pylint", "--rcfile=/dev/null", "--disable=all", "--enable=nnx", "--load-plugins=nnx_lint.pylint",
                 *files, cwd=hostile)
    _assert_no_live_command(pylint.stdout + pylint.stderr, "pylint")
    assert pylint.stdout.count("NNX201") == 4, pylint.stdout


# --- m1: the server's hover ------------------------------------------------------------------------

class _Client:
    """A minimal JSON-RPC client over the server's stdin/stdout, as an editor drives it."""

    def __init__(self, cwd: Path) -> None:
        self.process = subprocess.Popen([str(SCRIPTS / "nnx-lint"), "server"], cwd=cwd, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.messages: queue.Queue = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.response(self.request("initialize", {"processId": None, "rootUri": cwd.as_uri(), "capabilities": {}}))
        self.notify("initialized", {})

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self.messages.put(None)
                    return
                if not line.strip():
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            self.messages.put(json.loads(stream.read(length)))

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def notify(self, method: str, params: dict) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: dict) -> int:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def wait(self, wanted, timeout: float = 90) -> dict:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                message = self.messages.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                break
            assert message is not None, "the server ended"
            if wanted(message):
                return message
        raise AssertionError("no answer in time")

    def response(self, request_id: int) -> dict:
        return self.wait(lambda m: m.get("id") == request_id and "method" not in m)

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


NAMES = {
    "image and command link": "x ![pixel](http://127.0.0.1:9/leak.png) [open terminal](command:workbench.action."
                              "terminal.new) y",
    "html, autolinks, emphasis, code": "<img src=http://127.0.0.1:9/i.png> <http://127.0.0.1:9/a> www.example.com "
                                       "**bold** `tick &amp; [ref]: http://127.0.0.1:9/r",
}


@pytest.mark.parametrize("name", list(NAMES))
def test_m1_analysed_text_never_becomes_live_markdown_in_the_hover(tmp_path, name):
    root = tmp_path / "repo"
    root.mkdir()
    text = SETATTR.format(name=NAMES[name])
    (root / "m.py").write_text(text)
    client = _Client(root)
    try:
        uri = (root / "m.py").as_uri()
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                "text": text}})
        published = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                                and m["params"]["uri"] == uri)
        diagnostics = published["params"]["diagnostics"]
        hovers = []
        for diagnostic in diagnostics:
            answer = client.response(client.request("textDocument/hover", {
                "textDocument": {"uri": uri}, "position": diagnostic["range"]["start"]}))
            hovers.append(answer["result"]["contents"]["value"])
    finally:
        client.close()
    quoting = [value for value in hovers if "127" in value or "example" in value]
    assert quoting, hovers  # the name reached a hover: the test would prove nothing otherwise
    for value in quoting:
        outside = "".join(value.split("`")[0::2])  # the reproducer's own check
        assert "![pixel](http://127.0.0.1:9/leak.png)" not in outside and "](command:" not in outside
        # Apart from nnx-lint's own link to the rule page, no image, link or tag opener that a
        # backslash does not escape.
        analysed = re.sub(r"(?m)^\[NNX\d+ rule page\]\(file://[^)\s]*\)$", "", value)
        assert not re.findall(r"(?<!\\)(?:!\[|\]\(|<img|<http)", analysed), analysed
        _assert_only_own_links(value)


def _assert_only_own_links(value: str) -> None:
    """Rendered as CommonMark: no image, no HTML, and the only link is nnx-lint's rule page."""
    markdown_it = pytest.importorskip("markdown_it")
    tokens = markdown_it.MarkdownIt("commonmark").parse(value)
    inline = [child for token in tokens for child in (token.children or [])]
    assert not [token for token in tokens + inline if token.type in ("image", "html_inline", "html_block")]
    # (markdown-it refuses file: links, so nnx-lint's own rule page link may not count as one.)
    links = [token.attrs.get("href") for token in inline if token.type == "link_open"]
    assert all(str(href).startswith("file://") and "/rules/NNX" in str(href) for href in links), links
    # No GitHub-flavoured autolink either (linkify is off in CommonMark): no bare scheme or www. survives.
    assert "http://" not in value and "www.example" not in value
