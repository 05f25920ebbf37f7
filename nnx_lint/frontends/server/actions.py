"""Code actions and hovers: the fixes, ``# noqa``, the reproduction, and the rule's advice.

Every action is built from the machinery the CLI uses: a finding's fixes are
:func:`nnx_lint.fixes.apply.candidate_fixes` (safe pins first, then unsafe rewrites, as
``--fix`` / ``--unsafe-fixes`` choose them), "fix all" is :func:`nnx_lint.fixes.apply.fix_file`
(``--fix``: safe fixes to a fixed point, each pass re-linted), both computed in the CLI's fix
worker (:mod:`nnx_lint.frontends.server.fixing`: isolated and bounded), the ``# noqa`` comment is
:func:`nnx_lint.frontends.add_noqa.plan_noqa` (``--add-noqa``), and the reproduction is
:func:`nnx_lint.confirmation.oracle.reproduction_for` (``--show-repro``, with its guard against
analysed text becoming code). Fixes need libcst (the ``server`` extra installs it); without
it the other actions are still offered.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from lsprotocol import types

from nnx_lint.frontends.add_noqa import plan_noqa
from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.fixes.model import SAFE, UNSAFE, Fix, source_lines
from nnx_lint.frontends.server.convert import Positions, text_edit

#: The code action kind of "apply every safe fix" (a client runs it on save when asked to).
FIX_ALL_KIND = "source.fixAll.nnx-lint"
#: The command that opens a finding's reproduction program.
SHOW_REPRODUCTION = "nnx-lint.showReproduction"


def fix_actions(uri: str, diagnostic: Diagnostic, published: types.Diagnostic, fixes: list[Fix],
                positions: Positions) -> list[types.CodeAction]:
    """The finding's safe and unsafe fixes as quick fixes (the safe one preferred); ``fixes``:
    what the fix worker computed for it (:func:`nnx_lint.fixes.editor.code_action_fixes`: the
    rule's candidates with edits, with the project's flax, as ``check --fix`` chooses among them)."""
    actions = []
    for fix in fixes:
        if fix.applicability not in (SAFE, UNSAFE) or not fix.edits:
            continue  # display-only: shown in the hover, never applied
        label = "" if fix.applicability == SAFE else " (unsafe: changes what the code means)"
        actions.append(types.CodeAction(
            title=f"{diagnostic.code}: {fix.message}{label}",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[published],
            is_preferred=fix.applicability == SAFE,
            edit=types.WorkspaceEdit(changes={uri: [text_edit(edit, positions) for edit in sorted(fix.edits)]}),
        ))
    return actions


def noqa_action(uri: str, diagnostic: Diagnostic, published: types.Diagnostic, text: str,
                positions: Positions) -> types.CodeAction | None:
    """``# noqa: NNXnnn`` on the line that suppresses the finding (merged into an existing
    ``# noqa: ...``); None where no comment can suppress it (inside a multi-line string)."""
    changes, _skipped = plan_noqa(text, [diagnostic])
    if len(changes) != 1:
        return None
    (line, (after, _count)), = changes.items()
    before = text.splitlines(keepends=True)[line - 1]
    lines = source_lines(text)
    if line > len(lines) or lines[line - 1] != before:
        return None  # a form feed or other line break Python does not count: no safe position
    old, new = before.rstrip("\r\n"), after.rstrip("\r\n")
    common = 0
    while common < min(len(old), len(new)) and old[common] == new[common]:
        common += 1
    edit = types.TextEdit(
        types.Range(positions.from_chars(line, common + 1), positions.from_chars(line, len(old) + 1)), new[common:])
    return types.CodeAction(
        title=f"{diagnostic.code}: suppress on line {line} with `# noqa: {diagnostic.code}`",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[published],
        edit=types.WorkspaceEdit(changes={uri: [edit]}),
    )


def reproduction_action(uri: str, diagnostic: Diagnostic, key: str) -> types.Command | None:
    """"Show the reproduction" for a finding whose rule builds one.

    A bare command (LSP allows them among code actions): a code action carrying a command is
    taken for a command by some clients' decoders (lsprotocol's among them), and loses it."""
    from nnx_lint.engine.registry import rule_by_code

    rule = rule_by_code(diagnostic.code)
    if rule is None or not rule.has_reproduction():
        return None
    title = f"{diagnostic.code}: show the reproduction (what Tree Mode does with this pattern)"
    return types.Command(title=title, command=SHOW_REPRODUCTION, arguments=[uri, key])


def fix_all_action(uri: str, text: str, fixed: tuple[str, int] | None, positions: Positions) -> types.CodeAction | None:
    """Every safe fix of the file at once (``nnx-lint check --fix`` on the buffer, with the
    project's flax, line length and indent width, computed by the fix worker: ``fixed`` is
    ``(the fixed text, the findings fixed)``), as one edit of the whole text; None when
    nothing changes."""
    if fixed is None or fixed[0] == text:
        return None
    after, count = fixed
    edit = types.TextEdit(types.Range(types.Position(0, 0), positions.end()), after)
    return types.CodeAction(
        title=f"nnx-lint: apply {count} safe fix{'es' * (count != 1)}",
        kind=FIX_ALL_KIND,
        edit=types.WorkspaceEdit(changes={uri: [edit]}),
    )


def unavailable_action(reason: str) -> types.CodeAction:
    """A disabled code action saying why no fix is offered (for clients that show them)."""
    return types.CodeAction(title="nnx-lint: no fix offered", kind=types.CodeActionKind.QuickFix,
                            disabled=types.CodeActionDisabled(reason=f"nnx-lint: {reason}"))


def reproduction_program(diagnostic: Diagnostic) -> tuple[str | None, str]:
    """``(program, "")`` for a finding with a reproduction, or ``(None, why not)``.

    The program is what ``nnx-lint check --show-repro`` prints: built from the finding's
    facts as an AST, refused if analysed text would appear in it as code. Nothing is run.
    """
    from nnx_lint.confirmation.oracle import program_title, reproduction_for
    from nnx_lint.engine.registry import rule_by_code

    reproduction = reproduction_for(diagnostic)
    if isinstance(reproduction, str):
        return None, reproduction
    return reproduction.program(title=program_title(rule_by_code(diagnostic.code))), ""


def reproduction_file(program: str, code: str) -> Path | None:
    """The program written to nnx-lint's own cache directory (never the project), for a
    client without virtual documents to open; the same program gives the same file."""
    from nnx_lint.base.cache_store import _owned_private_directory, user_cache_root, write_atomically

    directory = user_cache_root() / "reproductions"
    if not _owned_private_directory(directory):
        return None
    path = directory / f"{code}-{hashlib.sha256(program.encode()).hexdigest()[:16]}.py"
    return path if write_atomically(path, program.encode("utf-8")) else None


_KIND = {
    "raises": "Tree Mode **raises** here",
    "silent": "Tree Mode runs this but **silently computes something else**",
    "linter": "nnx-lint could not analyse this file whole",
    "advisory": "advisory (not a break)",
}


def hover_markdown(diagnostics: list[Diagnostic]) -> str:
    """The rule's "why" and "how to fix" for each finding under the cursor (Markdown).

    The message and help quote analysed text (a ``setattr`` name, a file name), so both pass
    through :func:`~nnx_lint.base.escaping.markdown_inline`: every Markdown-active character is
    escaped, and the only link is nnx-lint's own, to the rule page."""
    from nnx_lint.base.escaping import markdown_inline
    from nnx_lint.engine.registry import rule_by_code

    parts = []
    for diagnostic in diagnostics:
        rule = rule_by_code(diagnostic.code)
        why = rule.docs_sections().get("Why is this bad?", "").strip() if rule else ""
        lines = [f"**{diagnostic.code}** `{diagnostic.symbol}`: {_KIND.get(diagnostic.kind, diagnostic.kind)}", "",
                 markdown_inline(diagnostic.message), ""]
        if why:
            lines += ["**Why is this bad?**", "", why, ""]
        if diagnostic.help:
            lines += ["**How to fix**", "", markdown_inline(diagnostic.help), ""]
        lines.append(f"[{diagnostic.code} rule page]({diagnostic.url})")
        parts.append("\n".join(lines))
    return "\n\n---\n\n".join(parts)
