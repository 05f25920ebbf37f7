"""``nnx-lint server`` against ``nnx-lint check`` in the same run: latency and equality.

    python bench/bench_server.py PROJECT FILE [--edits 10] [--cold 5] [--skip-parity]

Run from anywhere; PROJECT is the project root (the server and the CLI both start there,
as an editor starts the server in its workspace), FILE a file in it (a tunix file of over
1,000 lines for the target).

* **Cold check**: ``nnx-lint check FILE --no-cache`` in a fresh process, the median of
  ``--cold`` runs: what an editor plugin that runs the CLI per check pays.
* **Edit latency**: the server opens FILE; then ``--edits`` one-line edits (a comment added
  to, then removed from, a line in the middle of the file), each sent as ``didChange`` after
  the previous diagnostics arrived and a pause longer than the debounce delay; the latency is
  from sending the change to receiving the diagnostics of that version. Reported: the
  median, and the median / cold check ratio (target <= 0.2).
* **Parity**: every Python file of PROJECT that ``check`` would analyse is opened in the
  server (one at a time, closed after) and its published diagnostics (code, start, end,
  message, related locations) are compared with ``nnx-lint check PROJECT --no-cache
  --output-format json`` of the same files (its byte columns converted to LSP's UTF-16
  units); differences are printed.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def cold_check(project: Path, file: Path, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "nnx_lint.cli", "check", str(file), "--no-cache"],
                              cwd=project, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if done.returncode not in (0, 1):
            raise RuntimeError(done.stderr[-2000:])
    return statistics.median(times)


class Client:
    """A minimal LSP client on pygls that records each publication with its arrival time."""

    def __init__(self) -> None:
        from lsprotocol import types
        from pygls.lsp.client import LanguageClient

        self.types = types
        self.client = LanguageClient("nnx-lint-bench", "0")
        self.published: list[tuple[float, object]] = []

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def publish(params):
            self.published.append((time.perf_counter(), params))

    async def start(self, project: Path) -> None:
        from pygls.uris import from_fs_path

        os.chdir(project)
        await self.client.start_io(sys.executable, "-m", "nnx_lint.cli", "server")
        await self.client.initialize_async(self.types.InitializeParams(
            capabilities=self.types.ClientCapabilities(), root_uri=from_fs_path(str(project))))
        self.client.initialized(self.types.InitializedParams())

    async def wait(self, uri: str, version: int | None, after: int, timeout: float = 300):
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            for arrived, params in self.published[after:]:
                if params.uri == uri and (version is None or params.version == version):
                    return arrived, params.diagnostics
            await asyncio.sleep(0.001)
        raise TimeoutError(f"no diagnostics for {uri} version {version}")

    async def open(self, uri: str, text: str, version: int = 1):
        after = len(self.published)
        self.client.text_document_did_open(self.types.DidOpenTextDocumentParams(
            self.types.TextDocumentItem(uri, "python", version, text)))
        return await self.wait(uri, version, after)

    def close(self, uri: str) -> None:
        self.client.text_document_did_close(self.types.DidCloseTextDocumentParams(
            self.types.TextDocumentIdentifier(uri)))

    async def edit(self, uri: str, text: str, version: int) -> float:
        after = len(self.published)
        sent = time.perf_counter()
        self.client.text_document_did_change(self.types.DidChangeTextDocumentParams(
            self.types.VersionedTextDocumentIdentifier(version=version, uri=uri),
            [self.types.TextDocumentContentChangeWholeDocument(text)]))
        arrived, _ = await self.wait(uri, version, after)
        return arrived - sent

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


def served_tuples(diagnostics) -> list[tuple]:
    from pygls.uris import to_fs_path

    return sorted((d.code, d.range.start.line + 1, d.range.start.character + 1, d.range.end.line + 1,
                   d.range.end.character + 1, d.message,
                   tuple((os.path.realpath(to_fs_path(r.location.uri)), r.location.range.start.line + 1,
                          r.location.range.start.character + 1, r.message) for r in d.related_information or ()))
                  for d in diagnostics)


def checked_tuples(project: Path) -> dict[str, list[tuple]]:
    """``nnx-lint check PROJECT --output-format json``, per file, in the server's coordinates:
    the CLI's UTF-8 byte columns converted to UTF-16 units (what LSP counts by default) on
    the file's own line, and empty spans widened to one character as the server does."""
    sys.path.insert(0, str(REPO))
    from nnx_lint.frontends.server.convert import Positions

    output = subprocess.run([sys.executable, "-m", "nnx_lint.cli", "check", ".", "--no-cache", "--output-format",
                             "json"], cwd=project, capture_output=True, text=True).stdout
    texts: dict[str, Positions] = {}

    def at(path: str, row: int, column: int) -> tuple[int, int]:
        if path not in texts:
            texts[path] = Positions(Path(path).read_text(encoding="utf-8", errors="replace"))
        position = texts[path].from_bytes(row, column)
        return position.line + 1, position.character + 1

    found: dict[str, list] = {}
    for d in json.loads(output):
        path = os.path.realpath(project / d["filename"])
        start = at(path, d["location"]["row"], d["location"]["column"])
        end = at(path, d["end_location"]["row"], d["end_location"]["column"])
        if end <= start:
            end = (start[0], start[1] + 1)
        related = []
        for r in d["related"]:
            other = os.path.realpath(project / r["filename"])
            related.append((other, *at(other, r["location"]["row"], r["location"]["column"]), r["message"]))
        found.setdefault(path, []).append((d["code"], *start, *end, d["message"], tuple(related)))
    return {path: sorted(items) for path, items in found.items()}


def analysed_files(project: Path) -> list[Path]:
    sys.path.insert(0, str(REPO))
    from nnx_lint.engine.config import load_settings
    from nnx_lint.analysis.prefilter import mentions_nnx
    from nnx_lint.engine.runner import discover

    os.chdir(project)
    settings = load_settings(Path("."))
    return [Path(os.path.realpath(f)) for f in discover([Path(".")], settings) if mentions_nnx(f.read_bytes())]


async def run(project: Path, file: Path, edits: int, skip_parity: bool) -> dict:
    from pygls.uris import from_fs_path

    client = Client()
    await client.start(project)
    report: dict = {}
    try:
        uri = from_fs_path(str(file))
        text = file.read_text()
        start = time.perf_counter()
        await client.open(uri, text)
        report["open_seconds"] = time.perf_counter() - start
        lines = text.split("\n")
        middle = next(i for i in range(len(lines) // 2, len(lines)) if lines[i].strip() and "\\" not in lines[i]
                      and not lines[i].rstrip().endswith(("(", "[", "{", ",")))
        latencies = []
        for version in range(2, edits + 2):
            await asyncio.sleep(0.4)  # longer than the debounce delay: each edit is a fresh one
            edited = list(lines)
            if version % 2 == 0:
                edited[middle] = edited[middle] + "  # edited"
            latencies.append(await client.edit(uri, "\n".join(edited), version))
        report["edit_latencies"] = latencies
        if not skip_parity:
            expected = checked_tuples(project)
            same, different = 0, []
            files = analysed_files(project)
            client.close(uri)
            for path in files:
                file_uri = from_fs_path(str(path))
                source = path.read_text(encoding="utf-8", errors="replace")
                _, diagnostics = await client.open(file_uri, source)
                client.close(file_uri)
                served, wanted = served_tuples(diagnostics), expected.get(str(path), [])
                if served == wanted:
                    same += 1
                else:
                    different.append((str(path), served, wanted))
            report["parity"] = {"files": len(files), "equal": same, "different": different,
                                "diagnostics": sum(len(v) for v in expected.values())}
    finally:
        await client.stop()
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("project", type=Path)
    parser.add_argument("file", type=Path)
    parser.add_argument("--edits", type=int, default=10)
    parser.add_argument("--cold", type=int, default=5)
    parser.add_argument("--skip-parity", action="store_true")
    args = parser.parse_args()
    project, file = args.project.resolve(), args.file.resolve()
    cold = cold_check(project, file, args.cold)
    report = asyncio.run(run(project, file, args.edits, args.skip_parity))
    lines = sum(1 for _ in file.open(encoding="utf-8", errors="replace"))
    median = statistics.median(report["edit_latencies"])
    print(f"file: {file.relative_to(project)} ({lines} lines)")
    print(f"cold `nnx-lint check FILE --no-cache` (median of {args.cold}): {cold:.3f} s")
    print(f"server: open -> diagnostics {report['open_seconds']:.3f} s")
    print(f"server: one-line edit -> diagnostics, median of {len(report['edit_latencies'])}: {median * 1000:.1f} ms "
          f"(min {min(report['edit_latencies']) * 1000:.1f}, max {max(report['edit_latencies']) * 1000:.1f})")
    print(f"ratio edit / cold check: {median / cold:.3f} (target <= 0.2)")
    if "parity" in report:
        parity = report["parity"]
        print(f"parity: {parity['files']} files analysed by check ({parity['diagnostics']} diagnostics): "
              f"{parity['equal']} equal, {len(parity['different'])} different")
        for path, served, wanted in parity["different"]:
            print(f"  {path}:\n    server: {served}\n    check:  {wanted}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
