"""The server's code actions are isolated and bounded as the CLI's fixes are (issue 44, h1 and h2).

The real server over stdio (pytest-lsp), with hostile buffers:

* libcst segfaults on an 8,000-term ``and`` (or ``or``) chain: the fixes run in the CLI's fix
  worker, so the crash costs that one request; the server answers it, stays up, and the next
  request on another file gets its fix from a fresh worker;
* a file the analysis refused (6 MB: NNX004) gets no code action, at once, and other files
  are analysed meanwhile; a buffer the analysis accepts but over the fixes' size cap gets no fix
  and a reason (a disabled code action, and a log message);
* while the fix worker computes a slow "fix all", the analysis thread analyses other files;
* the worker's deadline: past it the worker is killed and the request answered without fixes,
  and the next request starts a fresh worker.
"""
from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pygls")
pytest.importorskip("pytest_lsp")
pytest.importorskip("libcst")
import pytest_asyncio  # noqa: E402
from lsprotocol import types  # noqa: E402
from pygls.uris import from_fs_path  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

from test_server import _client, apply, published, uri  # noqa: E402

#: Runs other programs end to end (see CONTRIBUTING.md): outside the quick loop.
pytestmark = pytest.mark.slow

#: The tests that talk to the server share its event loop (the deadline test runs the worker alone).
ASYNC = pytest.mark.asyncio(loop_scope="module")

#: A finding with a safe pin fix (NNX201), on its own.
FIXABLE = ("from flax import nnx\n\nx = nnx.StateAxes({nnx.Param: 0})\n"
           "f = nnx.vmap(lambda m: m, in_axes=(x,))\n")


def chain(operator: str, terms: int = 8000) -> str:
    """A fixable finding (NNX301) beside an expression whose libcst parse segfaults."""
    return (f"from flax import nnx\n\n@nnx.jit\ndef train(model, a):\n    ok = {f' {operator} '.join(['a'] * terms)}\n"
            "    model.count += 1\n    return ok\n")


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bounds") / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "bounds"\n')
    before = os.getcwd()
    os.chdir(root)  # the server starts here, as an editor starts it in the workspace
    yield root
    os.chdir(before)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(project: Path):
    config = ClientServerConfig(server_command=[sys.executable, "-m", "nnx_lint.cli", "server"],
                                client_factory=_client)
    client = await config.start()
    capabilities = client_capabilities("visual-studio-code")  # shows disabled code actions
    await client.initialize_session(types.InitializeParams(capabilities=capabilities,
                                                           root_uri=from_fs_path(str(project))))
    yield client
    await client.shutdown_session()


async def open_text(client: LanguageClient, path: Path, text: str, timeout: float = 120) -> list[types.Diagnostic]:
    path.write_text(text)
    after = len(client.published)
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(uri(path), "python", 1, text)))
    return await published(client, uri(path), after=after, version=1, timeout=timeout)


def close(client: LanguageClient, path: Path) -> None:
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri(path))))


def ask(client: LanguageClient, path: Path, diagnostics: list[types.Diagnostic], only=None):
    return client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri(path)), types.Range(types.Position(0, 0), types.Position(1, 0)),
        types.CodeActionContext(diagnostics, only=only)))


def server_alive(client: LanguageClient) -> bool:
    return client._server is not None and client._server.returncode is None


@ASYNC
@pytest.mark.parametrize("operator", ["and", "or"])
async def test_a_libcst_crash_costs_one_request_never_the_server(client: LanguageClient, project: Path,
                                                                 operator: str):
    path = project / "chain.py"
    found = await open_text(client, path, chain(operator))
    assert "NNX301" in [d.code for d in found]
    answer = await asyncio.wait_for(ask(client, path, found), 120)
    assert server_alive(client), "the server died on a code action"
    assert not any(a.edit and "graph" in str(a.edit) for a in answer if isinstance(a, types.CodeAction))
    assert any("noqa" in a.title for a in answer)  # the actions that need no libcst are still offered
    close(client, path)
    other = project / "fixable.py"
    found = await open_text(client, other, FIXABLE)
    answer = await asyncio.wait_for(ask(client, other, found), 120)
    fixes = [a for a in answer if isinstance(a, types.CodeAction) and a.edit and "graph mode" in a.title]
    assert fixes, "the next request on another file gets its fix from a fresh worker"
    assert "graph=True" in apply(FIXABLE, fixes[0].edit.changes[uri(other)])
    close(client, other)


@ASYNC
async def test_a_refused_file_gets_no_code_action_and_other_files_are_analysed(client: LanguageClient,
                                                                                project: Path):
    path = project / "big.py"
    text = "from flax import nnx\n" + "x = 1\n" * 1_000_000  # 6 MB: over the analysis's 4 MiB
    found = await open_text(client, path, text)
    assert [d.code for d in found] == ["NNX004"]
    started = time.monotonic()
    pending = asyncio.ensure_future(ask(client, path, found))
    other = project / "other.py"
    other_found = await open_text(client, other, FIXABLE, timeout=60)
    answer = await asyncio.wait_for(pending, 60)
    assert time.monotonic() - started < 30
    assert [d.code for d in other_found] == ["NNX201"]
    assert not [a for a in answer if getattr(a, "edit", None) is not None or isinstance(a, types.Command)]
    assert any(a.disabled and "refused" in a.disabled.reason for a in answer if isinstance(a, types.CodeAction))
    close(client, path)
    close(client, other)


@ASYNC
async def test_a_buffer_over_the_fix_cap_gets_no_fix_and_a_reason(client: LanguageClient, project: Path):
    from nnx_lint.frontends.server.fixing import MAX_FIX_BYTES

    path = project / "large.py"
    padding = "y = 1\n" * (MAX_FIX_BYTES // 6 + 1000)  # analysed (under 4 MiB), over the fixes' cap
    text = FIXABLE + padding
    found = await open_text(client, path, text)
    assert [d.code for d in found] == ["NNX201"]
    logged = len(client.log_messages)
    answer = await asyncio.wait_for(ask(client, path, found), 60)
    assert not [a for a in answer if isinstance(a, types.CodeAction) and a.edit and "graph" in a.title]
    assert not [a for a in answer if getattr(a, "kind", None) == "source.fixAll.nnx-lint"]
    (disabled,) = [a for a in answer if isinstance(a, types.CodeAction) and a.disabled]
    assert f"over the {MAX_FIX_BYTES // 1024} KiB limit" in disabled.disabled.reason
    assert any("KiB limit" in m.message for m in client.log_messages[logged:])
    assert any("noqa" in a.title for a in answer)
    close(client, path)


@ASYNC
async def test_a_slow_fix_does_not_hold_up_the_analysis_of_other_files(client: LanguageClient, project: Path):
    """"Fix all" lints the buffer on every pass, in the worker (seconds for a few thousand
    lines): meanwhile another file is opened, and its diagnostics arrive before the code action's
    answer."""
    path = project / "slow.py"
    text = FIXABLE + "".join(f"y{i} = nnx.Rngs({i})\n" for i in range(2000))
    found = await open_text(client, path, text)
    order: list[str] = []
    pending = asyncio.ensure_future(ask(client, path, found))
    pending.add_done_callback(lambda _future: order.append("code action"))
    other = project / "meanwhile.py"
    await open_text(client, other, FIXABLE, timeout=120)
    order.append("other file")
    answer = await asyncio.wait_for(pending, 120)
    assert order == ["other file", "code action"]
    assert any(a.kind == "source.fixAll.nnx-lint" for a in answer if isinstance(a, types.CodeAction))
    close(client, path)
    close(client, other)


def test_past_its_deadline_the_fix_worker_is_stopped_and_the_next_request_gets_a_fresh_one(tmp_path: Path):
    from dataclasses import asdict

    from nnx_lint.fixes.flax_target import UNKNOWN
    from nnx_lint.frontends.server.fixing import EditorFixes

    def request(text: str) -> dict:
        return {"op": "actions", "path": str(tmp_path / "f.py"), "text": text, "fix_all": True, "diagnostics": [],
                "codes": ["NNX201"], "roots": [str(tmp_path)], "flax": asdict(UNKNOWN), "line_length": 88,
                "indent_width": None}

    fixes = EditorFixes([str(tmp_path)])
    try:
        fixes.seconds = 0.2
        slow = fixes.ask(request(FIXABLE + "".join(f"y{i} = nnx.Rngs({i})\n" for i in range(20_000))))
        assert slow.failure is not None and "took longer than 0.2 s and was stopped" in slow.failure
        assert slow.fix_all is None
        fixes.seconds = 120
        quick = fixes.ask(request(FIXABLE))
        assert quick.failure is None
        assert quick.fix_all is not None and "graph=True" in quick.fix_all[0]
    finally:
        fixes.close()
