"""``nnx-lint server`` end to end: the real server over stdio, driven by pytest-lsp.

The fixture project (``tests/fixtures_server/project``) is copied for each test: ``train.py``
has findings with related locations and one that depends on ``models.py``, ``legacy.py``
has ``per-file-ignores``, ``broken.py`` does not parse.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")
import pytest_asyncio  # noqa: E402
from lsprotocol import types  # noqa: E402
from pygls.uris import from_fs_path  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features  # noqa: E402

from _support import REPO  # noqa: E402

PROJECT = REPO / "tests" / "fixtures_server" / "project"
# One server for the tests that only open, edit and close files (each closes what it opened); the
# tests of start-up, shutdown and command-line options start their own.
# The slow marker: the language server end to end over stdio, a server per test or module.
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]


def _client() -> LanguageClient:
    """pytest-lsp's client, also keeping every publication in order (to wait for the next one)."""
    from pygls.protocol import default_converter

    client = LanguageClient(converter_factory=default_converter)
    client.published = []

    def publish(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        client.published.append(params)

    client.registrations = []

    def register(client: LanguageClient, params: types.RegistrationParams) -> None:
        client.registrations.extend(params.registrations)

    register_lsp_features(client, {**DEFAULT_CLIENT_FEATURES, types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish,
                                   types.CLIENT_REGISTER_CAPABILITY: register})
    return client


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("server") / "project"
    shutil.copytree(PROJECT, root)
    before = os.getcwd()
    os.chdir(root)  # the server starts here, as an editor starts it in the workspace
    yield root
    os.chdir(before)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_client(project: Path):
    config = ClientServerConfig(server_command=[sys.executable, "-m", "nnx_lint.cli", "server"],
                                client_factory=_client)
    client = await config.start()
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=from_fs_path(str(project))))
    yield client
    await client.shutdown_session()


@pytest_asyncio.fixture(loop_scope="module")
async def client(shared_client: LanguageClient, project: Path):
    """The shared server; the files a test opened are closed after it, and restored on disk."""
    shared_client.opened = set()
    yield shared_client
    for opened in shared_client.opened:
        shared_client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(opened)))
    for path in PROJECT.iterdir():
        if (project / path.name).read_bytes() != path.read_bytes():
            shutil.copy(path, project / path.name)
            shared_client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
                [types.FileEvent(uri(project / path.name), types.FileChangeType.Changed)]))


def uri(path: Path) -> str:
    return from_fs_path(str(path))


async def published(client: LanguageClient, target: str, after: int = 0, version: int | None = None,
                    timeout: float = 60) -> list[types.Diagnostic]:
    """The diagnostics of the first publication for ``target`` after the ``after``-th one
    (of ``version``, when given)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for params in client.published[after:]:
            if params.uri == target and (version is None or params.version == version):
                return list(params.diagnostics)
        await asyncio.sleep(0.02)
    raise AssertionError(f"no diagnostics for {target} (version {version}) within {timeout}s")


async def settled(client: LanguageClient, target: str, expected: str, timeout: float = 60) -> bool:
    """Whether a message of the latest diagnostics of ``target`` comes to hold ``expected`` in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(expected in d.message for d in client.diagnostics.get(target, [])):
            return True
        await asyncio.sleep(0.02)
    raise AssertionError(f"{target}: {[d.message for d in client.diagnostics.get(target, [])]}, never {expected}")


async def open_file(client: LanguageClient, path: Path, version: int = 1) -> list[types.Diagnostic]:
    after = len(client.published)
    if hasattr(client, "opened"):
        client.opened.add(uri(path))
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
        uri(path), "python", version, path.read_text())))
    return await published(client, uri(path), after=after, version=version)


async def change(client: LanguageClient, path: Path, text: str, version: int) -> list[types.Diagnostic]:
    after = len(client.published)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(version=version, uri=uri(path)),
        [types.TextDocumentContentChangeWholeDocument(text)]))
    return await published(client, uri(path), after=after, version=version)


def apply(text: str, edits: list[types.TextEdit]) -> str:
    """``text`` with LSP edits applied (ASCII text: UTF-16 units are characters)."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(position: types.Position) -> int:
        return offsets[min(position.line, len(lines))] + position.character

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


def codes(diagnostics: list[types.Diagnostic]) -> list[tuple[str, int]]:
    return sorted((d.code, d.range.start.line + 1) for d in diagnostics)


async def test_initialize_announces_the_features(project: Path):
    config = ClientServerConfig(server_command=[sys.executable, "-m", "nnx_lint.cli", "server"],
                                client_factory=_client)
    client = await config.start()
    try:
        result = await client.initialize_session(types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code")))
        assert (result.server_info.name, result.server_info.version) == ("nnx-lint", "0.1.0")
        capabilities = result.capabilities
        assert capabilities.hover_provider
        assert set(capabilities.code_action_provider.code_action_kinds) == {"quickfix", "source.fixAll.nnx-lint"}
        assert list(capabilities.execute_command_provider.commands) == ["nnx-lint.showReproduction"]
        assert capabilities.text_document_sync.open_close and capabilities.text_document_sync.save
        deadline = time.monotonic() + 30
        while not client.registrations and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        (watch,) = client.registrations  # the client reports edits of files that are not open
        assert watch.method == "workspace/didChangeWatchedFiles"
        assert [w["globPattern"] for w in watch.register_options["watchers"]] == ["**/*.py", "**/pyproject.toml"]
    finally:
        await client.shutdown_session()


async def test_open_publishes_the_findings_with_related_information(client: LanguageClient, project: Path):
    found = await open_file(client, project / "train.py")
    assert codes(found) == [("NNX201", 12), ("NNX301", 19)]
    state_axes = next(d for d in found if d.code == "NNX201")
    assert state_axes.severity == types.DiagnosticSeverity.Error
    assert state_axes.source == "nnx-lint"
    assert state_axes.code_description.href.endswith("/rules/NNX201.md")  # the page shipped in the package
    assert (state_axes.range.start.line, state_axes.range.start.character) == (11, 28)
    related = [(r.location.uri, r.location.range.start.line + 1, r.location.range.start.character + 1, r.message)
               for r in state_axes.related_information]
    assert related == [(uri(project / "train.py"), 9, 17, "the `nnx.StateAxes` is constructed here"),
                       (uri(project / "train.py"), 12, 2, "used by `nnx.vmap` here")]
    silent = next(d for d in found if d.code == "NNX301")
    assert silent.severity == types.DiagnosticSeverity.Warning


async def test_an_edit_that_fixes_the_finding_removes_it(client: LanguageClient, project: Path):
    path = project / "train.py"
    await open_file(client, path)
    text = path.read_text().replace("    model.steps += 1\n", "")
    assert codes(await change(client, path, text, 2)) == [("NNX201", 12)]
    # and a new finding appears as it is typed
    text = text.replace("    return model.linear(x)", "    model.steps = 5\n    return model.linear(x)")
    assert "NNX301" in [d.code for d in await change(client, path, text, 3)]


async def test_an_edit_in_another_file_re_analyses_the_files_that_depend_on_it(client: LanguageClient, project: Path):
    await open_file(client, project / "train.py")
    models = project / "models.py"
    assert codes(await open_file(client, models)) == [("NNX101", 9)]
    train = uri(project / "train.py")
    assert "non-Variable attribute `model.steps`" in client.diagnostics[train][1].message
    fixed = models.read_text().replace("self.steps = 0", "self.steps = nnx.Variable(0)")
    await change(client, models, fixed, 2)
    # train.py was not edited: what its NNX301 says of Counter's `steps` comes from the unsaved buffer of models.py
    assert await settled(client, train, "rebinding Variable attribute `model.steps`")
    await change(client, models, models.read_text(), 3)
    assert await settled(client, train, "non-Variable attribute `model.steps`")


async def test_a_quick_fix_is_an_edit_that_removes_the_finding(client: LanguageClient, project: Path):
    path = project / "train.py"
    found = await open_file(client, path)
    finding = next(d for d in found if d.code == "NNX201")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri(path)), finding.range, types.CodeActionContext([finding])))
    fixes = [a for a in actions if isinstance(a, types.CodeAction) and "graph mode" in a.title]
    assert fixes and fixes[0].kind == types.CodeActionKind.QuickFix and fixes[0].is_preferred
    fixed = apply(path.read_text(), fixes[0].edit.changes[uri(path)])
    assert "in_axes=(ensemble_axes, None), graph=True, graph_updates=True)" in fixed
    assert codes(await change(client, path, fixed, 2)) == [("NNX301", 19)]


async def test_quick_fixes_follow_the_project_flax(client: LanguageClient, project: Path):
    """As `check --fix` does: with `flax-version = "0.12.5"` the transform pin (its
    `graph_updates=True` needs flax 0.12.6) is not offered, in a quick fix or in fix-all."""
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'flax-version = "0.12.5"\n')
    path = project / "train.py"
    found = await open_file(client, path)
    finding = next(d for d in found if d.code == "NNX201")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri(path)), finding.range, types.CodeActionContext([finding])))
    edits = [a.edit.changes[uri(path)] for a in actions if isinstance(a, types.CodeAction) and a.edit]
    assert not any("graph_updates" in apply(path.read_text(), edit) for edit in edits)
    fix_all = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri(path)), types.Range(types.Position(0, 0), types.Position(0, 0)),
        types.CodeActionContext([], only=["source.fixAll.nnx-lint"])))
    assert not any("graph_updates" in apply(path.read_text(), a.edit.changes[uri(path)]) for a in fix_all or [])


async def test_the_noqa_action_suppresses_one_line(client: LanguageClient, project: Path):
    path = project / "train.py"
    found = await open_file(client, path)
    finding = next(d for d in found if d.code == "NNX301")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri(path)), finding.range, types.CodeActionContext([finding])))
    (noqa,) = [a for a in actions if "noqa" in a.title]
    assert noqa.kind == types.CodeActionKind.QuickFix and noqa.diagnostics[0].code == "NNX301"
    fixed = apply(path.read_text(), noqa.edit.changes[uri(path)])
    assert "    model.steps += 1  # noqa: NNX301\n" in fixed
    assert codes(await change(client, path, fixed, 2)) == [("NNX201", 12)]


async def test_fix_all_applies_every_safe_fix(client: LanguageClient, project: Path):
    path = project / "legacy.py"
    assert codes(await open_file(client, path)) == [("NNX601", 14)]
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri(path)), types.Range(types.Position(0, 0), types.Position(0, 0)),
        types.CodeActionContext([], only=["source.fixAll.nnx-lint"])))
    (fix_all,) = actions
    assert fix_all.kind == "source.fixAll.nnx-lint"
    fixed = apply(path.read_text(), fix_all.edit.changes[uri(path)])
    assert codes(await change(client, path, fixed, 2)) == []


async def test_hover_shows_why_and_how_to_fix(client: LanguageClient, project: Path):
    path = project / "train.py"
    found = await open_file(client, path)
    finding = next(d for d in found if d.code == "NNX201")
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri(path)), finding.range.start))
    text = hover.contents.value
    # The help quotes analysed text, so it is Markdown-escaped whole (issue 44, m1): `\.` renders as `.`.
    assert "**Why is this bad?**" in text and "**How to fix**" in text and "nnx\\.compat\\.vmap" in text
    nothing = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri(path)), types.Position(0, 0)))
    assert nothing is None


async def test_show_the_reproduction_opens_the_program(client: LanguageClient, project: Path):
    path = project / "train.py"
    found = await open_file(client, path)
    finding = next(d for d in found if d.code == "NNX201")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri(path)), finding.range, types.CodeActionContext([finding])))
    (show,) = [a for a in actions if isinstance(a, types.Command)]
    assert show.title.startswith("NNX201: show the reproduction")
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(show.command, show.arguments))
    assert result["program"].startswith("# nnx-lint reproduction of NNX201 (state-axes-prefix)")
    shown = client.shown_documents[-1]
    assert shown.uri == result["uri"] and not shown.uri.startswith(uri(project))  # never written into the project
    compile(result["program"], "repro.py", "exec")


async def test_a_configuration_change_is_picked_up(client: LanguageClient, project: Path):
    path = project / "train.py"
    assert codes(await open_file(client, path)) == [("NNX201", 12), ("NNX301", 19)]
    before = len(client.published)
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'ignore = ["NNX3"]\n')
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        [types.FileEvent(uri(pyproject), types.FileChangeType.Changed)]))
    assert codes(await published(client, uri(path), after=before)) == [("NNX201", 12)]
    # per-file-ignores of the same table apply to legacy.py
    assert codes(await open_file(client, project / "legacy.py")) == [("NNX601", 14)]
    # an invalid table is one diagnostic, not a dead server
    before = len(client.published)
    pyproject.write_text(pyproject.read_text() + 'colour = "blue"\n')
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        [types.FileEvent(uri(pyproject), types.FileChangeType.Changed)]))
    (problem,) = await published(client, uri(path), after=before)
    assert "unknown key(s) colour" in problem.message


async def test_a_malformed_file_gets_an_nnx0xx_diagnostic_and_the_server_goes_on(client: LanguageClient, project: Path):
    path = project / "broken.py"
    (syntax,) = await open_file(client, path)
    assert (syntax.code, syntax.range.start.line) == ("NNX002", 2)
    text = path.read_text().replace("def f(:", "def f():")
    assert codes(await change(client, path, text, 2)) == []
    # a bad request fails alone: answered empty, the failure logged
    assert await client.workspace_execute_command_async(
        types.ExecuteCommandParams("nnx-lint.showReproduction", [])) is None
    assert any("show_reproduction failed" in m.message and "TypeError" in m.message for m in client.log_messages)
    assert codes(await open_file(client, project / "legacy.py")) == [("NNX601", 14)]


async def test_shutdown_ends_the_server(project: Path):
    config = ClientServerConfig(server_command=[sys.executable, "-m", "nnx_lint.cli", "server"],
                                client_factory=_client)
    client = await config.start()
    await client.initialize_session(types.InitializeParams(capabilities=client_capabilities("neovim")))
    await open_file(client, project / "train.py")
    await client.shutdown_session()
    assert client._server.returncode == 0


async def test_the_server_publishes_what_check_reports_for_every_file(client: LanguageClient, project: Path):
    files = sorted(project.glob("*.py"))
    served = {}
    for path in files:
        served[path.name] = [(d.code, d.range.start.line + 1, d.range.start.character + 1, d.range.end.line + 1,
                              d.range.end.character + 1, d.message,
                              [(r.location.uri, r.location.range.start.line + 1, r.location.range.start.character + 1,
                                r.message) for r in d.related_information or []])
                             for d in await open_file(client, path)]
    output = subprocess.run([sys.executable, "-m", "nnx_lint.cli", "check", ".", "--no-cache", "--output-format",
                             "json"], capture_output=True, text=True, cwd=project, env=os.environ, check=False).stdout
    checked: dict[str, list] = {path.name: [] for path in files}
    for d in json.loads(output):
        start, end = (d["location"]["row"], d["location"]["column"]), (d["end_location"]["row"], d["end_location"]["column"])
        if end <= start:
            end = (start[0], start[1] + 1)  # an empty span is published one character wide, so editors show it
        checked[d["filename"]].append((d["code"], *start, *end, d["message"],
                                       [(uri(project / r["filename"]), r["location"]["row"], r["location"]["column"],
                                         r["message"]) for r in d["related"]]))
    assert sum(map(len, checked.values())) == 5
    assert {name: sorted(found) for name, found in served.items()} == {
        name: sorted(found) for name, found in checked.items()}


async def test_a_baseline_hides_the_recorded_findings(project: Path):
    subprocess.run([sys.executable, "-m", "nnx_lint.cli", "check", "train.py", "--no-cache", "--write-baseline",
                    "baseline.json"], cwd=project, check=True, capture_output=True)
    config = ClientServerConfig(server_command=[sys.executable, "-m", "nnx_lint.cli", "server", "--baseline",
                                                "baseline.json"], client_factory=_client)
    client = await config.start()
    await client.initialize_session(types.InitializeParams(capabilities=client_capabilities("neovim")))
    path = project / "train.py"
    try:
        assert codes(await open_file(client, path)) == []
        text = path.read_text().replace("    return model(tokens)", "    model.steps = 1\n    return model(tokens)")
        assert [d.code for d in await change(client, path, text, 2)] == ["NNX301"], "a new finding shows"
    finally:
        await client.shutdown_session()
