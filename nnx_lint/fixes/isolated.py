"""Fixes computed in a clean worker process, where a native crash costs one file's fixes.

libcst's parser is native code: an 8,000-term ``and`` chain made it segfault, and with it
the whole run (``--fix``, ``--diff``, ``--output-format json``: exit 139, no output). Every
libcst call therefore runs in a ``fix`` worker (:mod:`nnx_lint.engine.workers`), one file per
request. When the worker dies, :class:`IsolatedFixes` raises :class:`FixCrashed` for that
file only (its diagnostics are still reported, without fixes) and starts a fresh worker for
the next file. The parent keeps everything that writes or prints.

The worker's side is :func:`prepare` and :func:`answer`; requests are plain data:

* ``{"op": "text", "path", "text", "notebook", "codes", "roots", "unsafe", "flax", "line_length",
  "indent_width"}``: the file's text fixed to a fixed point (``{"after": text or None, "fixed": {code: count}}``);
* ``{"op": "attach", "path", "diagnostics", "unsafe", "flax", "line_length", "indent_width", "selectors",
  "roots"}``: each diagnostic's fix as Ruff's JSON ``fix`` object, by its position in the list, with
  ``resolves``: whether the finding is gone once the file is fixed as ``--fix`` fixes it
  (only with ``codes``, the rules the run uses; :mod:`nnx_lint.fixes.tracking`).
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from nnx_lint.engine.workers.process import WorkerDied, WorkerProcess
from nnx_lint.fixes.request_settings import flax_of, indent_width_of, line_length_of


class FixCrashed(Exception):
    """The fix worker died computing one file's fixes; ``how`` says how it ended."""

    def __init__(self, how: str) -> None:
        super().__init__(how)
        self.how = how


class IsolatedFixes:
    """The parent's handle on the fix worker (started on first use, replaced after a crash)."""

    def __init__(self, roots: Iterable[str] = ()) -> None:
        self.roots = [str(root) for root in roots]
        self.worker: WorkerProcess | None = None

    def ask(self, request: dict[str, Any], timeout: float | None = None) -> Any:
        """The worker's answer to ``request``; :class:`FixCrashed` if the worker died on it, or
        was stopped after ``timeout`` seconds (the next request starts a fresh worker)."""
        self.start(request["path"])
        try:
            return self.worker.request(request, timeout)
        except WorkerDied as died:
            self.close()
            raise FixCrashed(died.how) from None

    def start(self, path: str) -> None:
        """Start the worker for fixing ``path``, unless one is running."""
        if self.worker is None:
            # The files being fixed are analysed text: their directories are never imported from.
            self.worker = WorkerProcess("fix", [*self.roots, os.path.dirname(os.path.abspath(path))])

    def close(self) -> None:
        """End the worker, if one is running."""
        if self.worker is not None:
            self.worker.close()
            self.worker = None

    def __enter__(self) -> IsolatedFixes:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if exc_info[0] is not None and self.worker is not None:
            self.worker.kill()
        self.close()


# -- the worker's side -------------------------------------------------------------------


#: Above this many edits, or lines, in one file, ``[*]`` marks every finding with an applicable
#: fix instead of fixing the file once more and linting it again to see which findings go (each
#: pass re-lints the whole file: minutes on a generated file of 20,000 lines); ``--fix`` and
#: ``--diff`` still count exactly what they fixed.
MAX_TRACKED_EDITS = 200
MAX_TRACKED_LINES = 5_000


def prepare() -> None:
    """In the fix worker: import libcst, the fixes and the analysis stack before the module check."""
    import nnx_lint.engine.walk  # noqa: F401
    import nnx_lint.fixes.apply  # noqa: F401
    import nnx_lint.analysis.project  # noqa: F401
    from nnx_lint.engine.registry import all_rules

    all_rules()


def answer(request: dict[str, Any]) -> Any:
    """In the fix worker: serve one request (see the module docstring).

    A file's fixes have the time budget of its analysis (:class:`~nnx_lint.base.bounds.AnalysisBudget`):
    past it, the file gets no fixes (its diagnostics are reported all the same), and the worker
    serves the next file."""
    from nnx_lint.base.bounds import AnalysisBudget, BudgetExceeded, budget_in_force

    op = request.get("op")
    try:
        with budget_in_force(AnalysisBudget()):
            if op == "attach":
                return _attach(request)
            if op == "actions":
                from nnx_lint.fixes.editor import code_action_fixes

                return code_action_fixes(request)
            return _fixed_text(request)
    except BudgetExceeded as over:
        return {"over_budget": over.message} if op == "actions" else {} if op == "attach" else \
            {"after": None, "fixed": {}}


def _fixed_text(request: dict[str, Any]) -> dict[str, Any]:
    from nnx_lint.fixes.apply import fix_file, fix_notebook
    from nnx_lint.engine.registry import rule_by_code

    rules = [rule for rule in (rule_by_code(code) for code in request["codes"]) if rule is not None]
    path, text, unsafe, roots = request["path"], request["text"], request["unsafe"], request["roots"]
    flax, width, indent = flax_of(request), line_length_of(request), indent_width_of(request)
    try:
        if request["notebook"]:
            new_data, counts = fix_notebook(path, text.encode("utf-8"), rules, unsafe, roots, flax, width, indent)
            return {"after": new_data.decode("utf-8"), "fixed": dict(counts)}
        outcome = fix_file(path, text, rules, unsafe, roots, flax, width, indent)
        return {"after": outcome.text, "fixed": dict(outcome.fixed)}
    except (UnicodeDecodeError, ValueError):
        return {"after": None, "fixed": {}}


def _attach(request: dict[str, Any]) -> dict[str, Any]:
    """Each diagnostic's fix (one file's diagnostics), as JSON, by position in the request."""
    from dataclasses import replace

    from nnx_lint.base import bounds
    from nnx_lint.base.diagnostic import Diagnostic
    from nnx_lint.fixes.apply import cell_edits, fix_for
    from nnx_lint.fixes.model import Fix
    from nnx_lint.fixes.source import index_for
    from nnx_lint.base.notebooks import NotebookError, notebook_source

    from nnx_lint.engine.registry import rule_by_code

    path = request["path"]
    if not any((rule := rule_by_code(stored.get("code", ""))) is not None and rule.fixes
               for stored in request["diagnostics"]):
        return {}  # no rule here offers a fix: the file is not parsed again
    try:
        data = bounds.read_bounded(path)
        origin = None
        if path.endswith(".ipynb"):
            text, origin = notebook_source(data)
        else:
            text = data.decode("utf-8")
    except (bounds.ParseFailure, UnicodeDecodeError, NotebookError):
        return {}
    # A statement libcst cannot parse gets no fix (see SourceIndex).
    index = index_for(text, line_length_of(request), indent_width_of(request))
    found: dict[str, Any] = {}
    located: dict[str, tuple[str, int, int]] = {}
    fixes: dict[str, Fix] = {}
    known: list[Diagnostic] = []  # the request's findings, in module coordinates
    for position, stored in enumerate(request["diagnostics"]):
        diagnostic = Diagnostic.from_dict(stored)
        if origin is not None:
            # Notebook diagnostics are in cell coordinates; the facts (pin sites) and the
            # index are in module coordinates: map the line back before asking.
            module_line = next((i + 1 for i, o in enumerate(origin)
                                if o.cell == diagnostic.cell and o.line == diagnostic.line), None)
            if module_line is None:
                continue
            span = module_line - diagnostic.line
            diagnostic = replace(diagnostic, line=module_line, end_line=diagnostic.end_line + span)
        known.append(diagnostic)
        fix = fix_for(diagnostic, index, request["unsafe"], flax_of(request))
        if fix is not None and origin is not None:
            fix = cell_edits(fix, origin)
        if fix is not None:
            fixes[str(position)] = fix
            found[str(position)] = fix.to_json()
            located[str(position)] = (diagnostic.code, diagnostic.line, diagnostic.column)
    applying = {located[number][0] for number, fix in fixes.items() if fix.applies(request["unsafe"])}
    if "selectors" in request and applying \
            and sum(len(fix.edits) for fix in fixes.values()) <= MAX_TRACKED_EDITS and text.count("\n") <= MAX_TRACKED_LINES:
        # Only what --fix would make go away gets `[*]`: fix the text as --fix does and look.
        left = _still_there(request, data, text, origin is not None, known, applying)
        for number, where in located.items():
            found[number]["resolves"] = where not in left
    return found


def _still_there(request: dict[str, Any], data: bytes, text: str, notebook: bool,
                 known: list[Any], fixing: set[str]) -> set[tuple[str, int, int]]:
    """``(code, line, column)`` (module coordinates) of the findings ``--fix`` leaves in the file.

    ``known``: the request's findings in module coordinates. Those of the fixing rules are what
    linting the unchanged file with them gives (the run that sent them linted these very bytes
    with the same rules, roots and selectors), so the first pass of the fix does not lint again:
    that lint was about half of the `[*]` check.

    ``fixing``: the codes of the findings whose fixes ``--fix`` applies here. Only their rules
    lint the text again: a finding whose fix does not apply (a display-only note) never gets
    `[*]`, whatever the other edits do to it, so its rule need not run (NNX105's display-only
    fix made the fix worker build the object-flow model of maxtext's largest files a second time)."""
    from nnx_lint.base.diagnostic import Diagnostic
    from nnx_lint.fixes.apply import fix_file, fix_notebook_tracked
    from nnx_lint.engine.file_config import rules_for_selectors
    from nnx_lint.engine.runner import _selectors_from_json

    # Only the rules that can fix something here: re-linting with every rule cost about half of a
    # cold run. A finding's fate depends on its own rule and on the edits applied, and the edits
    # come only from findings whose fixes apply, all of whose codes are in ``fixing`` (the
    # findings of other rules, and their fixes, are not asked about).
    rules = [rule for rule in rules_for_selectors(_selectors_from_json(request["selectors"])) if rule.code in fixing]
    roots, unsafe, flax, width = request.get("roots"), request["unsafe"], flax_of(request), line_length_of(request)
    indent = indent_width_of(request)
    first = sorted((d for d in known if d.code in fixing), key=Diagnostic.sort_key)
    if notebook:
        _new, before, positions = fix_notebook_tracked(request["path"], data, rules, unsafe, roots, flax, width,
                                                       indent, first)
    else:
        outcome = fix_file(request["path"], text, rules, unsafe, roots, flax, width, indent, first)
        before, positions = outcome.before, outcome.gone
    gone = set(positions)
    return {(d.code, d.line, d.column) for position, d in enumerate(before) if position not in gone}
