"""``nnx-lint server``: the Language Server Protocol over stdio, on pygls.

The handlers translate between the protocol and :class:`~nnx_lint.frontends.server.workspace.Workspace`.
Every call into the workspace (buffer updates and analyses alike) runs on one worker thread,
in the order the notifications arrived, so the protocol stays responsive while a file is
analysed and the warm state is never touched by two threads. A code action's fixes are
computed by the fix worker (:mod:`~nnx_lint.frontends.server.fixing`), waited for on a thread
of their own: a slow or crashing fix never holds up the analysis of other files.

Diagnostics are published when a file is opened, changed and saved. Changes are debounced
per file: a change after a quiet spell is analysed at once, and changes that follow within
:data:`DEBOUNCE_SECONDS` of the last one wait that long, so a burst of keystrokes costs one
analysis. Every handler catches what it raises: a failing request answers empty and is
logged (``window/logMessage``), and the server goes on.
"""
from __future__ import annotations

import asyncio
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

import nnx_lint
import nnx_lint.frontends.server.actions as actions
import nnx_lint.frontends.server.fixing as fixing
from nnx_lint.frontends.server.convert import Positions, config_diagnostic, diagnostic_key, to_lsp
from nnx_lint.frontends.server.workspace import CONFIG_NAMES, Workspace, canonical

#: How long a change waits for the next one of a burst before it is analysed.
DEBOUNCE_SECONDS = 0.15
#: The files whose change on disk a client is asked to report.
WATCHED = ("**/*.py", "**/pyproject.toml")


class NNXLanguageServer(LanguageServer):
    """The pygls server with nnx-lint's warm workspace and its one analysis thread."""

    def __init__(self, baseline: str | None = None) -> None:
        super().__init__("nnx-lint", nnx_lint.__version__)
        self.state = Workspace(baseline)
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nnx-lint-analysis")
        #: The thread that waits on the fix worker, so that the analysis thread never does.
        self.fix_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nnx-lint-fixes")
        self._fixes: fixing.EditorFixes | None = None
        self.uris: dict[Path, str] = {}
        self.versions: dict[Path, int | None] = {}
        self.debounce = DEBOUNCE_SECONDS
        self._pending: dict[Path, asyncio.TimerHandle] = {}
        self._last_change: dict[Path, float] = {}
        self._reported: set[str] = set()

    async def call(self, function, *args):
        """Run ``function(*args)`` on the analysis thread, after everything queued before it."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, partial(function, *args))

    def log(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        """A line in the client's output log."""
        self.window_log_message(types.LogMessageParams(kind, message))

    def tell_once(self, message: str) -> None:
        """An error the user must see (a bad configuration or baseline), shown once."""
        if message not in self._reported:
            self._reported.add(message)
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"nnx-lint: {message}"))

    # -- scheduling ---------------------------------------------------------------------
    def schedule(self, paths: set[Path], debounced: bool) -> None:
        """Analyse ``paths`` and publish their diagnostics: now, or after the debounce delay
        when the file changed less than that delay ago."""
        loop = asyncio.get_running_loop()
        now = time.monotonic()
        for path in paths:
            last = self._last_change.get(path)
            delay = self.debounce if debounced and last is not None and now - last < self.debounce else 0.0
            if debounced:
                self._last_change[path] = now
            pending = self._pending.pop(path, None)
            if pending is not None:
                pending.cancel()
            self._pending[path] = loop.call_later(delay, self._start, path)

    def _start(self, path: Path) -> None:
        self._pending.pop(path, None)
        asyncio.ensure_future(self.refresh(path))

    async def refresh(self, path: Path) -> None:
        """Analyse one open file on the analysis thread and publish what it finds."""
        try:
            published = await self.call(self._analyse, path)
        except Exception:
            self.log(f"nnx-lint: analysing {path} failed:\n{traceback.format_exc()}", types.MessageType.Error)
            return
        if published is not None:
            self.text_document_publish_diagnostics(published)

    def _analyse(self, path: Path) -> types.PublishDiagnosticsParams | None:
        if path not in self.state.buffers or path not in self.uris:
            return None  # closed meanwhile
        result = self.state.analyse(path)
        if result.config_error:
            self.tell_once(result.config_error)
            found = [config_diagnostic(result.config_error)]
        else:
            if result.baseline_error:
                self.tell_once(result.baseline_error)
            found = self.lsp_diagnostics(path)
        return types.PublishDiagnosticsParams(self.uris[path], found, self.versions.get(path))

    def lsp_diagnostics(self, path: Path) -> list[types.Diagnostic]:
        """The latest findings of an open file as LSP diagnostics."""
        result = self.state.results[path]
        encoding = self.workspace.position_encoding or types.PositionEncodingKind.Utf16
        positions = Positions(result.text, encoding)
        others: dict[str, Positions | None] = {}

        def positions_of(other: str) -> Positions | None:
            if other not in others:
                try:
                    others[other] = Positions(self.state.read(Path(other)).decode("utf-8", "replace"), encoding)
                except Exception:
                    others[other] = None
            return others[other]

        return [to_lsp(d, positions, uri_for, positions_of) for d in result.diagnostics]

    # -- requests -----------------------------------------------------------------------
    def findings_in(self, path: Path, published: list[types.Diagnostic]) -> list[tuple]:
        """``(nnx-lint diagnostic, LSP diagnostic)`` for the client's diagnostics that are ours."""
        result = self.state.results.get(path)
        if result is None:
            return []
        by_key = {diagnostic_key(d): d for d in result.diagnostics}
        found = []
        for item in published:
            key = item.data.get("key") if isinstance(item.data, dict) else None
            if key in by_key:
                found.append((by_key[key], item))
        return found

    def code_actions(self, params: types.CodeActionParams) -> ActionPlan:
        """On the analysis thread: the actions for the diagnostics in the request's context that
        need no fix, and the request for the fix worker (:meth:`answer_code_actions` asks it)."""
        path = path_of(params.text_document.uri)
        uri = params.text_document.uri
        if path not in self.state.buffers:
            return ActionPlan(uri)
        if not self.state.is_current(path):
            self.state.analyse(path)  # a debounced change is pending: answer for the text as it is now
        result = self.state.results[path]
        refused = fixing.refusal(result.diagnostics)
        if refused is not None:
            return ActionPlan(uri, reason=refused)
        encoding = self.workspace.position_encoding or types.PositionEncodingKind.Utf16
        plan = ActionPlan(uri, Positions(result.text, encoding), result.text)
        wanted = params.context.only
        follow = self.state.fix_settings(path)
        fixable = follow is not None and fixing.fixes_available()
        if fixable:
            plan.reason = fixing.too_large(result.text)
            fixable = plan.reason is None
        if wanted is None or types.CodeActionKind.QuickFix in wanted:
            published = self.lsp_diagnostics(path)
            requested = {(d.code, d.range.start.line, d.range.start.character) for d in params.context.diagnostics}
            mine = [d for d in published if (d.code, d.range.start.line, d.range.start.character) in requested]
            for diagnostic, item in self.findings_in(path, mine):
                plan.findings.append((diagnostic, item, actions.noqa_action(uri, diagnostic, item, result.text,
                                                                              plan.positions),
                                      actions.reproduction_action(uri, diagnostic, item.data["key"])))
        fix_all = wanted is None or any(actions.FIX_ALL_KIND.startswith(kind) for kind in wanted)
        if fixable and (plan.findings or fix_all):
            plan.request = {
                "op": "actions", "path": str(path), "text": result.text, "fix_all": fix_all,
                "diagnostics": [diagnostic.to_dict() for diagnostic, *_ in plan.findings],
                "codes": list(follow.codes), "roots": list(follow.roots), "flax": follow.flax_json,
                "line_length": follow.line_length, "indent_width": follow.indent_width,
            }
        return plan

    async def answer_code_actions(self, plan: ActionPlan) -> list[types.CodeAction | types.Command]:
        """The code actions of ``plan``, with the fixes the fix worker computes on its own thread
        (the analysis thread analyses other files meanwhile)."""
        answer = fixing.FixAnswer()
        if plan.request is not None:
            answer = await asyncio.get_running_loop().run_in_executor(
                self.fix_executor, self.editor_fixes(plan.request).ask, plan.request)
        reason = plan.reason or answer.failure
        if reason is not None:
            self.log(f"nnx-lint: {path_of(plan.uri)}: {reason}", types.MessageType.Warning)
        found: list[types.CodeAction | types.Command] = []
        for position, (diagnostic, item, noqa, reproduction) in enumerate(plan.findings):
            if position < len(answer.quick):
                found += actions.fix_actions(plan.uri, diagnostic, item, answer.quick[position], plan.positions)
            found += [action for action in (noqa, reproduction) if action is not None]
        fix_all = actions.fix_all_action(plan.uri, plan.text, answer.fix_all, plan.positions) \
            if answer.fix_all is not None else None
        if fix_all is not None:
            found.append(fix_all)
        if reason is not None and self._shows_disabled():
            found.append(actions.unavailable_action(reason))
        return found

    def editor_fixes(self, request: dict) -> fixing.EditorFixes:
        """The fix worker (one for the server; started on first use)."""
        if self._fixes is None:
            self._fixes = fixing.EditorFixes(list(request["roots"]))
        return self._fixes

    async def prestart_fixes(self, path: Path) -> None:
        """When the first file opens, start the fix worker on its own thread, so that the first
        code action does not wait for it."""
        if self._fixes is not None or not fixing.fixes_available():
            return
        follow = await self.call(self.state.fix_settings, path)
        if follow is None or self._fixes is not None:
            return
        self.fix_executor.submit(self.editor_fixes({"roots": follow.roots}).start, str(path))

    def _shows_disabled(self) -> bool:
        document = self.client_capabilities.text_document if self.client_capabilities else None
        code_action = document.code_action if document else None
        return bool(code_action and code_action.disabled_support)

    def hover(self, params: types.HoverParams) -> types.Hover | None:
        """On the analysis thread: the advice for the findings under the cursor."""
        path = path_of(params.text_document.uri)
        if path not in self.state.results:
            return None
        published = self.lsp_diagnostics(path)
        position = params.position
        under = [d for d in published if _contains(d.range, position)]
        found = [diagnostic for diagnostic, _ in self.findings_in(path, under)]
        if not found:
            return None
        return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, actions.hover_markdown(found)))

    def reproduction(self, uri: str, key: str) -> tuple[str | None, str]:
        """On the analysis thread: the program of the finding ``key`` in ``uri``, or why none."""
        path = path_of(uri)
        result = self.state.results.get(path)
        match = [d for d in (result.diagnostics if result else []) if diagnostic_key(d) == key]
        if not match:
            return None, "the finding is gone (the file changed)"
        return actions.reproduction_program(match[0])


@dataclass
class ActionPlan:
    """What the analysis thread prepares for one code action request (see ``code_actions``)."""

    uri: str
    positions: Positions | None = None
    text: str = ""
    #: ``(finding, its LSP diagnostic, its noqa action, its reproduction command)`` per finding.
    findings: list[tuple] = field(default_factory=list)
    #: The fix worker's request (None: no fix is computed).
    request: dict | None = None
    #: Why no fix (or no action) is offered, told to the client.
    reason: str | None = None


def path_of(uri: str) -> Path:
    """The canonical path of a ``file:`` URI."""
    return canonical(to_fs_path(uri) or uri)


def uri_for(path: str) -> str:
    """The ``file:`` URI of a path nnx-lint reported."""
    return from_fs_path(str(path)) or str(path)


def _contains(span: types.Range, position: types.Position) -> bool:
    start, end = (span.start.line, span.start.character), (span.end.line, span.end.character)
    return start <= (position.line, position.character) <= end


def build_server(baseline: str | None = None) -> NNXLanguageServer:
    """The server with every handler registered (not started)."""
    server = NNXLanguageServer(baseline)

    def guarded(handler):
        """A handler whose failure is logged and answered empty: one request never stops the server."""
        async def run(*args):
            try:
                return await handler(*args)
            except Exception:
                server.log(f"nnx-lint: {handler.__name__} failed:\n{traceback.format_exc()}", types.MessageType.Error)
                return None
        run.__name__ = handler.__name__
        return run

    @server.feature(types.INITIALIZED)
    @guarded
    async def initialized(params: types.InitializedParams):
        options = server.client_capabilities.workspace
        watched = options.did_change_watched_files if options else None
        if watched is not None and watched.dynamic_registration:
            watchers = [types.FileSystemWatcher(glob_pattern=pattern) for pattern in WATCHED]
            await server.client_register_capability_async(types.RegistrationParams([types.Registration(
                id="nnx-lint-watched-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers))]))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    @guarded
    async def did_open(params: types.DidOpenTextDocumentParams):
        document = params.text_document
        path = path_of(document.uri)
        server.uris[path] = document.uri
        server.versions[path] = document.version
        server.schedule(await server.call(server.state.open, path, document.text), debounced=False)
        await server.prestart_fixes(path)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    @guarded
    async def did_change(params: types.DidChangeTextDocumentParams):
        document = server.workspace.get_text_document(params.text_document.uri)  # pygls applied the changes
        path = path_of(document.uri)
        server.versions[path] = params.text_document.version
        server.schedule(await server.call(server.state.open, path, document.source), debounced=True)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    @guarded
    async def did_save(params: types.DidSaveTextDocumentParams):
        path = path_of(params.text_document.uri)
        affected = await server.call(server.state.changed, path)
        server.schedule(set(affected) | ({path} & set(server.uris)), debounced=False)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    @guarded
    async def did_close(params: types.DidCloseTextDocumentParams):
        path = path_of(params.text_document.uri)
        server.uris.pop(path, None)
        server.versions.pop(path, None)
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(params.text_document.uri, []))
        server.schedule(await server.call(server.state.close, path), debounced=False)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    @guarded
    async def did_change_watched_files(params: types.DidChangeWatchedFilesParams):
        affected: set[Path] = set()
        for change in params.changes:
            path = path_of(change.uri)
            if path in server.state.buffers and path.name not in CONFIG_NAMES:
                continue  # the open buffer, not the disk, is what the editor shows
            created_or_deleted = change.type != types.FileChangeType.Changed
            affected |= await server.call(server.state.changed, path, created_or_deleted)
        server.schedule(affected, debounced=False)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, actions.FIX_ALL_KIND], resolve_provider=False))
    @guarded
    async def code_action(params: types.CodeActionParams):
        return await server.answer_code_actions(await server.call(server.code_actions, params))

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @guarded
    async def hover(params: types.HoverParams):
        return await server.call(server.hover, params)

    @server.command(actions.SHOW_REPRODUCTION)
    @guarded
    async def show_reproduction(uri, key):
        program, reason = await server.call(server.reproduction, str(uri), str(key))
        if program is None:
            server.window_show_message(types.ShowMessageParams(types.MessageType.Info, f"nnx-lint: {reason}"))
            return {"program": None, "reason": reason}
        written = await server.call(actions.reproduction_file, program, key.split(":")[0])
        if written is not None:
            await server.window_show_document_async(types.ShowDocumentParams(uri_for(str(written)), take_focus=True))
        return {"program": program, "uri": uri_for(str(written)) if written else None}

    @server.feature(types.SHUTDOWN)
    @guarded
    async def shutdown(params):
        for pending in server._pending.values():
            pending.cancel()
        server._pending.clear()
        server.executor.shutdown(wait=False, cancel_futures=True)
        server.fix_executor.shutdown(wait=False, cancel_futures=True)
        if server._fixes is not None:
            server._fixes.close()

    return server
