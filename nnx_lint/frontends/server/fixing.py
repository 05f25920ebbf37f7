"""The fixes behind the server's code actions: isolated and bounded, as the CLI's are.

Every libcst call runs in the CLI's ``fix`` worker (:class:`~nnx_lint.fixes.isolated.IsolatedFixes`,
answering :func:`nnx_lint.fixes.editor.code_action_fixes`), never in the server: a native crash
(libcst segfaulted on an 8,000-term ``and`` chain) kills the worker, costs the one request (it
is answered without fixes), and the next request starts a fresh worker. The worker is asked
on a thread of its own, so the analysis thread goes on analysing other files meanwhile.

Bounds, each with a reason the client is told (``window/logMessage``, and a disabled code
action for clients that show them):

* a file the analysis refused (:data:`REFUSED`: unreadable, unparsable, over a size or time
  budget) gets no code action at all;
* a buffer over :data:`MAX_FIX_BYTES` gets no fix (fixing costs about 17 s and 450 MB per MB of
  text: the worker lints and re-indexes the text on every pass);
* the worker has :data:`FIX_SECONDS` to answer: past them it is killed, and the request is
  answered without fixes.

Answers are kept for the last few requests (by their content), so an editor asking again at
every cursor move costs nothing, and a buffer that crashed or timed out the worker is not
sent to it again until it changes.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.engine.workers.process import WorkerStartFailed, WorkerUntrusted
from nnx_lint.fixes.isolated import FixCrashed, IsolatedFixes
from nnx_lint.fixes.model import Fix

#: The findings by which the analysis says it refused the file (unreadable, unparsable, over budget).
REFUSED = ("NNX001", "NNX002", "NNX004")
#: The largest buffer (UTF-8 bytes) whose fixes are computed.
MAX_FIX_BYTES = 512 * 1024
#: Seconds the fix worker has to answer one code action request.
FIX_SECONDS = 15.0
#: How many answers are kept.
KEPT_ANSWERS = 16


@dataclass
class FixAnswer:
    """The worker's fixes for one request, or why there are none."""

    #: The fixes of each requested diagnostic, in the request's order.
    quick: list[list[Fix]] = field(default_factory=list)
    #: ``(fixed text, findings fixed)`` of "fix all", None when not asked or nothing to say.
    fix_all: tuple[str, int] | None = None
    #: Why no fix was computed (the worker crashed, took too long, or the budget ran out).
    failure: str | None = None


def refusal(diagnostics: list[Diagnostic]) -> str | None:
    """Why the buffer gets no code action at all (None: it may have them)."""
    refused = next((d for d in diagnostics if d.code in REFUSED), None)
    if refused is not None:
        return f"the analysis refused this file ({refused.code}): no code action is offered"
    return None


def too_large(text: str) -> str | None:
    """Why the buffer gets no fix because of its size (None: it is small enough)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_FIX_BYTES:
        return (f"the buffer has {size} bytes, over the {MAX_FIX_BYTES // 1024} KiB limit of fixes in the editor: "
                "no fix is offered (`nnx-lint check --fix` fixes it)")
    return None


def fixes_available() -> bool:
    """Whether libcst is installed (the ``server`` extra): without it, no fix is offered."""
    return importlib.util.find_spec("libcst") is not None


class EditorFixes:
    """The server's fix worker: started on first use, replaced after a crash or a deadline."""

    def __init__(self, roots: list[str]) -> None:
        self.fixer = IsolatedFixes(roots)
        self.seconds = FIX_SECONDS
        self._answers: OrderedDict[str, FixAnswer] = OrderedDict()
        self._lock = threading.Lock()  # one request at a time on the worker's pipe

    def ask(self, request: dict[str, Any]) -> FixAnswer:
        """The fixes for ``request`` (blocking: call it off the analysis thread)."""
        key = hashlib.sha256(json.dumps(request, sort_keys=True).encode("utf-8", "surrogatepass")).hexdigest()
        with self._lock:
            known = self._answers.get(key)
            if known is None:
                known = self._answers[key] = self._ask(request)
                if len(self._answers) > KEPT_ANSWERS:
                    self._answers.popitem(last=False)
            else:
                self._answers.move_to_end(key)
            return known

    def start(self, path: str) -> None:
        """Start the worker ahead of the first request (it takes a second or two to import
        libcst and the analysis); a worker that cannot start is tried again by that request."""
        with self._lock:
            try:
                self.fixer.start(path)
            except (WorkerStartFailed, WorkerUntrusted):
                pass

    def _ask(self, request: dict[str, Any]) -> FixAnswer:
        try:
            answer = self.fixer.ask(request, self.seconds)
        except FixCrashed as crash:
            return FixAnswer(failure=f"the fix worker {crash.how}; no fix is offered for this text")
        except (WorkerStartFailed, WorkerUntrusted) as failed:
            return FixAnswer(failure=f"no fix worker: {failed}")
        if not isinstance(answer, dict):
            return FixAnswer(failure="the fix worker answered nothing usable")
        if "over_budget" in answer:
            return FixAnswer(failure=f"its fixes ran out of time ({answer['over_budget']})")
        quick = [[Fix.from_json(fix) for fix in fixes] for fixes in answer.get("quick", [])]
        fix_all = answer.get("fix_all")
        whole = None
        if isinstance(fix_all, dict) and isinstance(fix_all.get("after"), str):
            whole = (fix_all["after"], sum(fix_all.get("fixed", {}).values()))
        return FixAnswer(quick, whole)

    def close(self) -> None:
        """End the worker (the server shuts down)."""
        self.fixer.close()
