"""The engine: one astroid parse and one walk per file, rules dispatched by node type.

Front-ends (CLI, flake8, pylint) all call :func:`lint_source` or :func:`lint_module`,
so they report the same diagnostics for the same file.
"""
from __future__ import annotations

import functools
import traceback
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from astroid import nodes

from nnx_lint.base import bounds
from nnx_lint.analysis import parsing
from nnx_lint.base.diagnostic import Diagnostic, analysed_whole, shown
from nnx_lint.base.file_memo import forget_file_memos
from nnx_lint.base.node_index import SCOPE_TYPES, module_index
from nnx_lint.base.noqa import apply_noqa
from nnx_lint.analysis.prefilter import mentions_nnx, must_analyse
from nnx_lint.analysis.project import Project
from nnx_lint.analysis.first_error import name_first_errors
from nnx_lint.analysis.rule import Rule
from nnx_lint.analysis.context import FileContext
from nnx_lint.analysis.fact_index import fact_index
from nnx_lint.engine.unused_noqa import unused_noqa

_TOO_DEEP = "file is too deeply nested to analyse (Python's recursion limit was hit)"
_WALK = "the walk over the file's nodes"
#: Never a list of handlers: the walk then tests no node for being an NNX call.
_NO_CALL_FILTER = object()


@functools.cache
def _handler_names(rule_class: type[Rule]) -> tuple[str, ...]:
    """The ``visit_*`` and ``leave_*`` methods of a rule class (read once per run, not per file)."""
    return tuple(a for a in dir(rule_class) if a.startswith(("visit_", "leave_")))


def _dispatch_table(rules: Sequence[Rule]) -> tuple[dict[str, list], dict[str, list]]:
    visits: dict[str, list[tuple[Rule, Callable]]] = defaultdict(list)
    leaves: dict[str, list[tuple[Rule, Callable]]] = defaultdict(list)
    for rule in rules:
        for attribute in _handler_names(type(rule)):
            table = visits if attribute.startswith("visit_") else leaves
            table[attribute[6:]].append((rule, getattr(rule, attribute)))
    return visits, leaves


def _linter_diagnostic(code: str, message: str, path: str, line: int = 1, column: int = 1, **facts: Any) -> Diagnostic:
    from nnx_lint.engine.registry import rule_by_code

    rule = rule_by_code(code)
    symbol = rule.symbol if rule else code
    # The reason is a value, never a template: it may hold braces from the analysed file.
    message, help_text = rule.render({**facts, "reason": message}) if rule else (message, "")
    return Diagnostic(code, symbol, message, path, line, column, line, column, "linter", facts, help_text)


def newer_than_target(text: str, path: str, target_version: tuple[int, int] | None) -> list[Diagnostic]:
    """NNX002 at each use of syntax added after ``target_version`` (none without a target).

    As Ruff reports its version-related syntax errors: the file is still analysed whole (the
    construct is read in an older spelling when the running Python needs it), so the message
    never depends on the Python running nnx-lint, and neither do the other findings.
    """
    if target_version is None:
        return []
    from nnx_lint.base.syntax.constructs import find_newer_syntax
    from nnx_lint.base.syntax.target import version_text

    return [
        _linter_diagnostic(
            "NNX002",
            f"{construct.feature} need Python >= {version_text(construct.added_in)}, newer than the target "
            f"version {version_text(target_version)}",
            path, construct.line, construct.column,
            syntax=construct.feature, added_in=version_text(construct.added_in),
            target_version=version_text(target_version),
        )
        for construct in find_newer_syntax(text) if construct.added_in > target_version
    ]


def _internal_error(path: str) -> Diagnostic:
    """NNX003 for a failure outside any rule (call inside ``except``): this file only."""
    return _linter_diagnostic(
        "NNX003",
        "nnx-lint failed on this file (an internal error) and did not analyse it; please report "
        "this (run with --verbose for the traceback)",
        path,
        rule="nnx-lint",
        traceback=traceback.format_exc(),
    )


def lint_module(
    module: nodes.Module,
    path: str,
    rule_classes: Iterable[type[Rule]],
    project: Project | None = None,
) -> list[Diagnostic]:
    """Run the enabled rules over an already-built astroid module (one walk).

    Never raises for the file's sake: a failing rule is NNX003 and skipped, any other
    failure is one NNX003 for the file. An analysis over its budget (:mod:`nnx_lint.base.bounds`)
    keeps the diagnostics found before it stopped and adds one NNX004 saying what was
    stopped; imported modules left unread for the budget add one NNX004 naming them.
    """
    budget = bounds.AnalysisBudget()
    try:
        with bounds.budget_in_force(budget):
            diagnostics = _walk(module, path, rule_classes, project or Project())
    except RecursionError:
        return [_linter_diagnostic("NNX004", _TOO_DEEP, path)]
    except Exception:  # a bug outside the rules must not cost the other files
        return [_internal_error(path)]
    finally:
        forget_file_memos()  # the memo tables hold this file's nodes: let its tree go
    skipped = budget.skipped_message()
    if skipped is not None:
        diagnostics.append(_linter_diagnostic("NNX004", skipped, path))
    return diagnostics


def _walk(module: nodes.Module, path: str, rule_classes: Iterable[type[Rule]], project: Project) -> list[Diagnostic]:
    context: FileContext | None = None
    rule_classes = list(rule_classes)  # read twice: the walk, then the stages
    try:
        context = FileContext(module, path, project)
        found = _run_rules(module, path, rule_classes, context)
        stages = {rule.code: rule.stage_order() for rule in rule_classes}
        return name_first_errors(found, stages.get)
    except bounds.BudgetExceeded as stop:
        # What the rules reported before the stop is kept: each finding stands on its own.
        found = context.diagnostics if context is not None else []
        return [*found, _linter_diagnostic("NNX004", stop.message, path)]
    finally:
        if context is not None:
            context.release()  # the file's analysis tables go now, not in the next collection


def _run_rules(module: nodes.Module, path: str, rule_classes: Iterable[type[Rule]], context: FileContext) -> list[Diagnostic]:
    check = bounds.checkpoint
    rules = [cls(context) for cls in rule_classes if not cls.engine_reported]
    visits, leaves = _dispatch_table(rules)
    tables = [*visits.values(), *leaves.values()]  # every list of handlers the walk reads

    def call_all(handlers: list[tuple[Rule, Callable]], node: nodes.NodeNG) -> None:
        # The hot loop of the run (one call per handler per node): a crashed rule is not
        # tested for here, its handlers are replaced by a no-op in every table instead.
        for rule, handler in handlers:
            try:
                handler(node)
            except Exception:  # a rule bug must not stop the other rules or files
                _disable(rule, tables)
                line = getattr(node, "lineno", None) or 1
                context.diagnostics.append(
                    _linter_diagnostic(
                        "NNX003",
                        f"rule {rule.code} ({rule.symbol}) failed on this file and was skipped for the rest of it",
                        path,
                        line,
                        rule=rule.code,
                        traceback=traceback.format_exc(),
                    )
                )

    index = module_index(module)
    by_type = index.by_type()
    # The nodes with handlers, in the walk's order (astroid's pre-order, which the index keeps).
    handled: dict[type, tuple[list | None, list | None]] = {}
    for kind in by_type:
        name = kind.__name__.lower()
        found = (visits.get(name) or None, leaves.get(name) or None)
        if found != (None, None):
            handled[kind] = found
    if any(leave is not None and kind not in SCOPE_TYPES for kind, (_visit, leave) in handled.items()):
        return _walk_tree(module, call_all, visits, leaves, context)
    # The visits of a call that is not of the flax.nnx API: those of the rules that look at
    # NNX calls only are left out (the others keep their order).
    call_visits = handled.get(nodes.Call, (None, None))[0]
    other_call_visits = [(rule, handler) for rule, handler in call_visits or []
                         if not (rule.visits_nnx_calls_only and handler.__name__ == "visit_call")]
    # Of those, the rules that look at transform applications only: the visits before the first
    # of them always run; from it on, a call that runs no transformed function skips them.
    first = next((i for i, (rule, handler) in enumerate(other_call_visits)
                  if rule.visits_transform_calls_only and handler.__name__ == "visit_call"), None)
    if call_visits is None or (len(other_call_visits) == len(call_visits) and first is None):
        call_visits = _NO_CALL_FILTER  # nothing to leave out: no test per call
    if first is not None:
        other_call_visits, applied_visits = other_call_visits[:first], other_call_visits[first:]
        unapplied_visits = [(rule, handler) for rule, handler in applied_visits
                            if not (rule.visits_transform_calls_only and handler.__name__ == "visit_call")]
        tables += [applied_visits, unapplied_visits]

        def application(call: nodes.Call) -> object:  # the fact index is built when first asked, as before
            return fact_index(context).application(call)
    else:
        applied_visits = unapplied_visits = None
    tables.append(other_call_visits)
    nnx_call = context.nnx_call
    lists = [by_type[kind] for kind in handled]  # each sorted: merged, they are the walk's order
    positions = lists[0] if len(lists) == 1 else sorted(i for found in lists for i in found)
    order, extents = index.order, index.extents
    # Nodes whose leave handlers run when the walk passes the end of their subtree.
    pending: list[tuple[int, nodes.NodeNG, list]] = []
    for position in positions:
        check(_WALK)
        while pending and pending[-1][0] <= position:
            _end, left, handlers = pending.pop()
            call_all(handlers, left)
        node = order[position]
        visit, leave = handled[node.__class__]
        if visit is call_visits and not _is_nnx_call(nnx_call, node):
            if other_call_visits:
                call_all(other_call_visits, node)
            visit = None
            if applied_visits is not None:
                visit = applied_visits if _is_application(application, node) else unapplied_visits
        if visit:
            call_all(visit, node)
        if leave is not None:
            pending.append((extents[id(node)][1], node, leave))
    while pending:
        check(_WALK)
        _end, left, handlers = pending.pop()
        call_all(handlers, left)
    return context.diagnostics


def _is_nnx_call(nnx_call: Callable[[nodes.NodeNG], object], node: nodes.NodeNG) -> bool:
    try:
        return nnx_call(node) is not None
    except Exception:  # every visit runs: the rules that ask meet the failure themselves (NNX003)
        return True


def _is_application(application: Callable[[nodes.Call], object], node: nodes.Call) -> bool:
    try:
        return application(node) is not None
    except Exception:  # every visit runs: the rules that ask meet the failure themselves (NNX003)
        return True


def _skip(_node: nodes.NodeNG) -> None:
    """The handler of a rule that crashed on this file: it is skipped for the rest of it."""


def _disable(rule: Rule, tables: list[list]) -> None:
    """Replace every handler of ``rule`` by :func:`_skip`, in place: the lists keep their
    length, so a loop over one of them (the one that just called the crashed handler) goes on."""
    for handlers in tables:
        for i, (owner, _handler) in enumerate(handlers):
            if owner is rule:
                handlers[i] = (owner, _skip)


def _walk_tree(
    module: nodes.Module, call_all: Callable[[list, nodes.NodeNG], None],
    visits: dict[str, list], leaves: dict[str, list], context: FileContext,
) -> list[Diagnostic]:
    """The walk over the tree itself, for rules that leave nodes whose subtree the module
    index does not delimit (only scopes have extents there)."""
    # Per node type: its visit and leave handlers (None when there are none).
    by_type: dict[type, tuple[list | None, list | None]] = {}
    # An explicit stack instead of recursion: deeply nested files must not crash the walk.
    # A node on it is to be visited; a 1-tuple ``(node,)`` is to be left.
    stack: list = [module]
    while stack:
        bounds.checkpoint(_WALK)
        node = stack.pop()
        if node.__class__ is tuple:
            node = node[0]
            call_all(by_type[node.__class__][1], node)  # only nodes with leave handlers are left
            continue
        handlers = by_type.get(node.__class__)
        if handlers is None:
            kind = node.__class__.__name__.lower()
            handlers = by_type[node.__class__] = (visits.get(kind) or None, leaves.get(kind) or None)
        if handlers[0] is not None:
            call_all(handlers[0], node)
        if handlers[1] is not None:
            stack.append((node,))
        children = [*node.get_children()]
        children.reverse()
        stack.extend(children)
    return context.diagnostics


def lint_source(
    text: str,
    path: str,
    rule_classes: Iterable[type[Rule]],
    *,
    project: Project | None = None,
    module_name: str | None = None,
    apply_suppressions: bool = True,
    target_version: tuple[int, int] | None = None,
    strict: bool = False,
    prefiltered: bool = False,
) -> list[Diagnostic]:
    """Lint source text. Never executes it; files that never name ``nnx`` are skipped
    (:mod:`nnx_lint.analysis.prefilter`), unless ``prefiltered``: the caller's pre-filter
    decided on the file's bytes (:func:`lint_bytes`: text that does not parse is analysed too).

    Text over the size limits (:mod:`nnx_lint.base.bounds`) is NNX004 and never parsed. Syntax newer
    than ``target_version`` is NNX002 (:func:`newer_than_target`); None: no syntax is too new.
    Unproven findings (audit mode) are kept only with ``strict`` (:func:`~nnx_lint.base.diagnostic.shown`).
    """
    rule_classes = list(rule_classes)
    enabled = {cls.code for cls in rule_classes}
    if not prefiltered and not mentions_nnx(text):
        return []
    try:
        diagnostics = _parse_and_lint(text, path, rule_classes, project or Project(), module_name or Path(path).stem,
                                      target_version)
    except Exception:  # a bug outside the rules must not cost the other files
        diagnostics = [_internal_error(path)]
    diagnostics = [d for d in diagnostics if d.code in enabled]
    if apply_suppressions:
        diagnostics = apply_noqa(diagnostics, text)
    return sorted(shown(diagnostics, strict), key=Diagnostic.sort_key)


def _parse_and_lint(text: str, path: str, rule_classes: list[type[Rule]], project: Project, module_name: str,
                    target_version: tuple[int, int] | None = None) -> list[Diagnostic]:
    try:
        bounds.check_source(text, "the notebook's code" if path.endswith(".ipynb") else "the file")
        module = project.tree_of_current_file(text, module_name) or \
            parsing.build(text, path, module_name, project.is_project_module)
    except parsing.ParseFailure as failure:
        return [_linter_diagnostic(failure.code, failure.message, path, failure.line, failure.column)]
    project.register(module_name, module)
    diagnostics = newer_than_target(text, path, target_version) + lint_module(module, path, rule_classes, project)
    if not analysed_whole(diagnostics):
        return diagnostics  # every noqa on a file not analysed whole would look unused
    enabled = {cls.code for cls in rule_classes}
    return diagnostics + unused_noqa([d for d in diagnostics if d.code in enabled], text, rule_classes, path)


def lint_bytes(
    data: bytes,
    path: str,
    rule_classes: Iterable[type[Rule]],
    *,
    project: Project | None = None,
    module_name: str | None = None,
    apply_suppressions: bool = True,
    target_version: tuple[int, int] | None = None,
    strict: bool = False,
) -> list[Diagnostic]:
    """Lint raw file bytes: decoding problems become an NNX001 diagnostic.

    ``.ipynb`` files are notebooks: their code cells are linted (see :mod:`nnx_lint.base.notebooks`);
    a malformed notebook is NNX001, an oversized one NNX004.
    """
    rule_classes = list(rule_classes)
    enabled = {cls.code for cls in rule_classes}
    if not must_analyse(data, notebook=path.endswith(".ipynb")):
        return []  # decided on the text Python reads, and whether it parses (nnx_lint.analysis.prefilter)
    try:
        if path.endswith(".ipynb"):
            text, origin = _notebook_text(data)
        else:
            text, origin = parsing.decode(data), None
    except parsing.ParseFailure as failure:
        found = [_linter_diagnostic(failure.code, failure.message, path, failure.line, failure.column)]
        return [d for d in found if d.code in enabled]
    except Exception:  # a bug outside the rules must not cost the other files
        return [d for d in [_internal_error(path)] if d.code in enabled]
    diagnostics = lint_source(
        text, path, rule_classes, project=project, module_name=module_name, apply_suppressions=apply_suppressions,
        target_version=target_version, strict=strict, prefiltered=True,
    )
    if origin is None:
        return diagnostics
    from nnx_lint.base.notebooks import map_to_cells

    # The notebook's own text, so github/sarif can point at the line of the .ipynb file.
    return map_to_cells(diagnostics, origin, data.decode("utf-8-sig", errors="replace"))


def _notebook_text(data: bytes) -> tuple[str, list]:
    """The code of a notebook and its line origins; ParseFailure when it is not usable."""
    from nnx_lint.base.notebooks import NotebookError, notebook_source

    bounds.check_bytes(data, bounds.LIMITS.notebook_bytes, "notebook")
    try:
        return notebook_source(data)
    except NotebookError as error:
        raise parsing.ParseFailure("NNX001", str(error)) from None
