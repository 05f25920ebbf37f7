"""Choosing each diagnostic's fix and applying fixes to a fixed point (files, notebooks).

Like Ruff: each pass lints the text, takes the applicable fix of every diagnostic, applies
those whose edits do not overlap an already chosen one (the rest wait for the next pass,
when they are recomputed on the new text), and stops when a pass changes nothing or after
:data:`MAX_PASSES`. A fix whose result would not parse is never applied.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path


from nnx_lint.base.bounds import checkpoint
from nnx_lint.base.diagnostic import UNPROVEN, Diagnostic
from nnx_lint.base.facts import ABSENT
from nnx_lint.fixes.catalog import EVERY_USE_FACT
from nnx_lint.fixes.flax_target import UNKNOWN, ProjectFlax
from nnx_lint.fixes.line_length import DEFAULT as DEFAULT_LINE_LENGTH
from nnx_lint.fixes.model import DISPLAY_ONLY, PIN, SAFE, UNSAFE, Edit, Fix, apply_edits, overlaps
from nnx_lint.fixes.pin import CannotPin, pin_edit
from nnx_lint.fixes.rewrites import rewrite_fix
from nnx_lint.fixes.source import SourceIndex, index_for, parses, python_parses  # parses: part of this module's interface
from nnx_lint.fixes.tracking import gone
from nnx_lint.engine.registry import facts_of, pin_sites
from nnx_lint.analysis.rule import Rule

#: Bound on the passes of :func:`fix_text` (Ruff stops at 100; fixes here rarely nest deeper than 2).
MAX_PASSES = 10


def pin_fix(index: SourceIndex, diagnostic: Diagnostic, flax: ProjectFlax = UNKNOWN) -> Fix | None:
    """Keep graph mode at every call of the diagnostic's ``pin`` fact (safe: today's behaviour).

    Only with keywords the project's ``flax`` takes: otherwise a display-only fix says why."""
    facts = facts_of(diagnostic)
    sites = pin_sites(facts)
    every_use = getattr(facts, EVERY_USE_FACT, ABSENT)  # only the class-level rules declare it
    class_level = every_use is not ABSENT
    blocked = flax.why_no_pin(sites)
    if blocked is not None:
        return Fix(DISPLAY_ONLY, f"No pin: {blocked}")
    try:
        edits = [edit for edit in (_checked(pin_edit(index, site)) for site in sites) if edit is not None]
        if _any_touch(edits):
            # Nested pinned calls (`nnx.jit(nnx.grad(f))`): a wrapped outer call would rewrite the
            # inner one's text too, so both stay on their lines.
            edits = [edit for edit in (pin_edit(index, site, wrap=False) for site in sites) if edit is not None]
        pinnable = bool(sites)
    except CannotPin:
        edits, pinnable = [], False
    names = ", ".join(dict.fromkeys(f"`nnx.{site['api']}` (line {site['line']})" for site in sites))
    if class_level:
        owner = getattr(facts, "class_name", ABSENT) or getattr(facts, "container", ABSENT) or "this object"
        if not sites:
            return Fix(DISPLAY_ONLY, f"Every use of `{owner}` must keep graph mode (`graph=True` / `nnx.compat.*`); "
                                     "no use in a transform or graph API call is known in this file")
        if not pinnable or not edits or not every_use:
            return Fix(DISPLAY_ONLY, f"Every use of `{owner}` must keep graph mode (`graph=True` / `nnx.compat.*`); "
                                     f"{names} are known, but not every use here can be pinned (e.g. `.eval()`, "
                                     "`nnx.Optimizer`, a call that chooses its mode), and uses in other files need it too")
        return Fix(SAFE, f"Keep graph mode at every use of `{owner}` in this file: {names} "
                         f"(uses in other files need the same pin){flax.needs_note(sites)}", tuple(edits))
    if not pinnable or not edits:
        return None  # no pin possible, or already pinned: the diagnostic comes from elsewhere
    return Fix(SAFE, f"Keep graph mode at {names}{flax.needs_note(sites)}", tuple(edits))


def _checked(edit: Edit | None) -> Edit | None:
    """``edit``, once the file's fix budget is checked (a pin may have an edit for every use in the file)."""
    checkpoint("its fixes (a pin)")
    return edit


def _any_touch(edits: list[Edit]) -> bool:
    """Whether two of ``edits`` overlap or touch (share an end point): one sweep in start order,
    not a comparison of every pair (a class-level pin has an edit for every use in the file)."""
    reach = None
    distinct = {id(edit): edit for edit in edits}.values()  # an edit is not compared with itself
    for edit in sorted(distinct, key=lambda edit: edit.start):
        if reach is not None and edit.start <= reach:
            return True
        reach = edit.end if reach is None else max(reach, edit.end)
    return False


def candidate_fixes(rule: type[Rule], index: SourceIndex, diagnostic: Diagnostic,
                    flax: ProjectFlax = UNKNOWN) -> list[Fix]:
    """Every fix the rule offers for this diagnostic, in the rule's order."""
    found = []
    for kind in rule.fixes:
        try:
            if kind == PIN:
                fix = pin_fix(index, diagnostic, flax)
            elif (blocked := flax.why_no_rewrite(kind.writes)) is not None:
                fix = Fix(DISPLAY_ONLY, f"No rewrite: {blocked}")
            else:
                fix = rewrite_fix(kind, index, diagnostic)
        except Exception:  # a fix bug must never break linting or the file: no fix then
            fix = None
        if fix is not None:
            found.append(fix)
    return found


def choose(fixes: list[Fix], unsafe: bool) -> Fix | None:
    """The fix to show and apply: with ``unsafe``, a tree-native rewrite before a pin;
    otherwise a safe fix first. Display-only fixes come last."""
    order = (UNSAFE, SAFE) if unsafe else (SAFE, UNSAFE)
    for applicability in (*order, DISPLAY_ONLY):
        for fix in fixes:
            if fix.applicability == applicability and (fix.edits or applicability == DISPLAY_ONLY):
                return fix
    return None


def fix_for(diagnostic: Diagnostic, index: SourceIndex, unsafe: bool = False,
            flax: ProjectFlax = UNKNOWN) -> Fix | None:
    """The fix of one diagnostic (None: the rule has none, or none applies here), for a
    project on ``flax``."""
    from nnx_lint.engine.registry import rule_by_code

    rule = rule_by_code(diagnostic.code)
    if rule is None or diagnostic.proof == UNPROVEN:  # an unproven finding: nothing known to fix
        return None
    return choose(candidate_fixes(rule, index, diagnostic, flax), unsafe)


@dataclass
class FixOutcome:
    """What fixing one text did."""

    text: str
    #: The findings the fixed text no longer has, by code.
    fixed: Counter = field(default_factory=Counter)
    passes: int = 0
    #: The findings of the text before (the first pass's lint).
    before: list[Diagnostic] = field(default_factory=list)
    #: Positions in ``before`` of the findings that are gone.
    gone: list[int] = field(default_factory=list)


def select_edits(text: str, index: SourceIndex, diagnostics: Iterable[Diagnostic], unsafe: bool,
                 flax: ProjectFlax = UNKNOWN) -> list[Edit]:
    """One pass: the edits of the applicable, non-overlapping fixes that keep ``text`` parsing."""
    chosen: list[Fix] = []
    edits: list[Edit] = []
    for diagnostic in diagnostics:
        checkpoint("its fixes (choosing them)")
        fix = fix_for(diagnostic, index, unsafe, flax)
        if fix is None or not fix.applies(unsafe):
            continue
        if set(fix.edits) <= set(edits):
            continue  # the same pin as an earlier diagnostic's
        if any(overlaps(fix, other) for other in chosen):
            continue  # recomputed on the next pass
        if not index.parses_after([*edits, *fix.edits]):
            continue
        chosen.append(fix)
        edits.extend(fix.edits)
    return edits


def fix_text(text: str, lint, unsafe: bool = False, flax: ProjectFlax = UNKNOWN,
             line_length: int = DEFAULT_LINE_LENGTH, indent_width: int | None = None,
             known: list[Diagnostic] | None = None) -> FixOutcome:
    """Fix ``text`` to a fixed point; ``lint(text)`` returns its diagnostics; pinned calls are
    wrapped to fit ``line_length``, indented by ``indent_width`` (None: the file's own indentation).
    ``known``: the diagnostics ``lint(text)`` gives, when the caller already has them (the first
    pass then lints nothing).

    ``fixed`` counts the findings of ``text`` that the fixed text no longer has
    (:mod:`nnx_lint.fixes.tracking`), not the fixes applied on the way."""
    outcome = FixOutcome(text)
    first = latest = None
    for _ in range(MAX_PASSES):
        checkpoint("its fixes (a pass)")
        if not python_parses(outcome.text):
            break
        latest = known if first is None and known is not None else lint(outcome.text)
        first = latest if first is None else first
        edits = select_edits(outcome.text, index_for(outcome.text, line_length, indent_width), latest, unsafe, flax)
        if not edits:
            break
        outcome.text = apply_edits(outcome.text, edits)
        outcome.passes += 1
        latest = None
    outcome.before = first or []
    if first is not None and outcome.passes:
        final = latest if latest is not None else lint(outcome.text)
        outcome.gone = gone(first, final, text, outcome.text)
        outcome.fixed = Counter(first[position].code for position in outcome.gone)
    return outcome


def linter_for(path: str, rules: list[type[Rule]], roots: list[str] | None = None):
    """``lint(text)`` for a file at ``path``, with the project's cross-file knowledge."""
    from nnx_lint.engine.walk import lint_source
    from nnx_lint.analysis.project import module_name_for, shared_project

    project = shared_project([Path(r) for r in roots or [str(Path.cwd())]])
    module_name, package_root = module_name_for(Path(path))

    def lint(text: str) -> list[Diagnostic]:
        project.start_file(path, package_root)
        return lint_source(text, path, rules, project=project, module_name=module_name)

    return lint


def fix_file(path: str, text: str, rules: list[type[Rule]] | None = None, unsafe: bool = False,
             roots: list[str] | None = None, flax: ProjectFlax = UNKNOWN,
             line_length: int = DEFAULT_LINE_LENGTH, indent_width: int | None = None,
             known: list[Diagnostic] | None = None) -> FixOutcome:
    """Fix one Python file's text; the outcome says what was fixed (``known``: see :func:`fix_text`)."""
    if rules is None:
        from nnx_lint.engine.registry import select_rules

        rules = list(select_rules(None, (), ()))
    return fix_text(text, linter_for(path, rules, roots), unsafe, flax, line_length, indent_width, known)


def fix_source(path: str, text: str, unsafe: bool = False) -> str:
    """The fixed text of one Python source with the default rules (what stdin input goes
    through: ``path`` names the file for the project's cross-file knowledge)."""
    return fix_file(path, text, None, unsafe).text


# -- notebooks ------------------------------------------------------------------------------


def fix_notebook(path: str, data: bytes, rules: list[type[Rule]], unsafe: bool = False,
                 roots: list[str] | None = None, flax: ProjectFlax = UNKNOWN,
                 line_length: int = DEFAULT_LINE_LENGTH, indent_width: int | None = None) -> tuple[bytes, Counter]:
    """Fix a notebook's code cells (linted as one module, edited cell by cell); everything
    else in the document is written back as it was. The counter has the findings gone, by code."""
    new, before, positions = fix_notebook_tracked(path, data, rules, unsafe, roots, flax, line_length,
                                                  indent_width)
    return new, Counter(before[position].code for position in positions)


def fix_notebook_tracked(path: str, data: bytes, rules: list[type[Rule]], unsafe: bool = False,
                         roots: list[str] | None = None,
                         flax: ProjectFlax = UNKNOWN,
                         line_length: int = DEFAULT_LINE_LENGTH,
                         indent_width: int | None = None,
                         known: list[Diagnostic] | None = None) -> tuple[bytes, list[Diagnostic], list[int]]:
    """:func:`fix_notebook` with the notebook's findings before (module coordinates) and the
    positions of those that are gone (``known``: the findings before, when the caller has them)."""
    from nnx_lint.base.notebooks import notebook_source

    document = json.loads(data.decode("utf-8"))
    lint = linter_for(path, rules, roots)
    changed = False
    first = latest = None
    first_text = text = ""
    for _ in range(MAX_PASSES):
        text, origin = notebook_source(json.dumps(document).encode("utf-8"))
        if not python_parses(text):
            latest = None
            break
        latest = known if first is None and known is not None else lint(text)
        if first is None:
            first, first_text = latest, text
        index = index_for(text, line_length, indent_width)
        by_cell = _edits_by_cell(select_edits(text, index, latest, unsafe, flax), origin, text)
        if not by_cell:
            break
        for cell_number, cell_edits in by_cell.items():
            cell = document["cells"][cell_number - 1]  # cells are numbered among all cells, as in Ruff
            source = cell.get("source", "")
            was_list = isinstance(source, list)
            new = apply_edits("".join(source) if was_list else str(source), cell_edits)
            cell["source"] = new.splitlines(keepends=True) if was_list else new
        changed = True
        latest = None
    if not changed or first is None:
        return data, first or [], []
    if latest is None:  # stopped after MAX_PASSES (or on a text that no longer parses)
        text, _origin = notebook_source(json.dumps(document).encode("utf-8"))
        latest = lint(text) if python_parses(text) else []
    # As for files: the findings gone, not the edits made.
    return _dump_like(document, data), first, gone(first, latest, first_text, text)


def _edits_by_cell(edits: list[Edit], origin, text: str) -> dict[int, list[Edit]]:
    """Module edits as edits of cell sources; edits on blanked magics or across cells are dropped."""
    by_cell: dict[int, list[Edit]] = {}
    for edit in edits:
        if edit.end_line > len(origin):
            continue
        start, end = origin[edit.line - 1], origin[edit.end_line - 1]
        if start.cell != end.cell:
            continue
        by_cell.setdefault(start.cell, []).append(
            Edit(start.line, edit.column, end.line, edit.end_column, edit.content))
    return by_cell


def cell_edits(fix: Fix, origin) -> Fix | None:
    """A module-coordinate fix of a notebook in cell coordinates (None if it spans cells)."""
    mapped = []
    for edit in fix.edits:
        if edit.end_line > len(origin) or origin[edit.line - 1].cell != origin[edit.end_line - 1].cell:
            return None
        mapped.append(Edit(origin[edit.line - 1].line, edit.column, origin[edit.end_line - 1].line,
                           edit.end_column, edit.content))
    return Fix(fix.applicability, fix.message, tuple(mapped))


def _dump_like(document: dict, original: bytes) -> bytes:
    """Serialise like the original file: its indentation and final newline (nbformat's style)."""
    text = original.decode("utf-8")
    indent = 1
    for line in text.splitlines()[1:2]:
        indent = len(line) - len(line.lstrip(" ")) or 1
    dumped = json.dumps(document, indent=indent, ensure_ascii=False)
    return (dumped + ("\n" if text.endswith("\n") else "")).encode("utf-8")
