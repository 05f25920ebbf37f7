"""The fixes of the language server's code actions, computed in the fix worker.

libcst is native code (an 8,000-term ``and`` chain made it segfault), and fixing a large buffer
takes long and much memory: so the server computes no fix itself. It sends the open buffer to a
``fix`` worker (:class:`nnx_lint.fixes.isolated.IsolatedFixes`, the CLI's), which answers with
:func:`code_action_fixes`; the server bounds the buffer's size and the answer's time
(:mod:`nnx_lint.frontends.server.fixing`). The request is plain data:

``{"op": "actions", "path", "text", "diagnostics", "fix_all", "codes", "roots", "flax", "line_length",
"indent_width"}``: ``diagnostics`` are the findings the client asks about (``Diagnostic.to_dict``);
``fix_all``: whether to fix the whole text as ``--fix`` does, with the rules ``codes`` and the
analysis ``roots`` (imported modules are read from disk, as ``nnx-lint check --fix`` reads them).

The answer: ``{"quick": [[fix, ...] per diagnostic], "fix_all": {"after": text, "fixed": {code: n}} or
None}``, each fix as :meth:`nnx_lint.fixes.model.Fix.to_json` (only fixes with edits, safe and
unsafe, in the rule's order, as :func:`nnx_lint.fixes.apply.candidate_fixes` gives them).
"""
from __future__ import annotations

from typing import Any


def code_action_fixes(request: dict[str, Any]) -> dict[str, Any]:
    """In the fix worker: the quick fixes of each diagnostic, and the whole text fixed."""
    from nnx_lint.base.diagnostic import Diagnostic
    from nnx_lint.engine.registry import rule_by_code
    from nnx_lint.fixes.apply import candidate_fixes, fix_file
    from nnx_lint.fixes.request_settings import flax_of, indent_width_of, line_length_of
    from nnx_lint.fixes.model import SAFE, UNSAFE
    from nnx_lint.fixes.source import index_for

    text, path = request["text"], request["path"]
    flax, width, indent = flax_of(request), line_length_of(request), indent_width_of(request)
    index = index_for(text, width, indent)
    quick: list[list[dict[str, Any]]] = []
    for stored in request["diagnostics"]:
        diagnostic = Diagnostic.from_dict(stored)
        rule = rule_by_code(diagnostic.code)
        fixes = candidate_fixes(rule, index, diagnostic, flax) if rule is not None and rule.fixes else []
        # Display-only fixes are shown in the hover, never offered as edits.
        quick.append([fix.to_json() for fix in fixes if fix.applicability in (SAFE, UNSAFE) and fix.edits])
    fix_all = None
    if request.get("fix_all"):
        from nnx_lint.analysis.project import forget_shared_projects

        forget_shared_projects()  # the worker outlives edits on disk: read imported modules afresh
        rules = [rule for rule in (rule_by_code(code) for code in request["codes"]) if rule is not None]
        try:
            outcome = fix_file(path, text, rules, False, request["roots"], flax, width, indent)
            fix_all = {"after": outcome.text, "fixed": dict(outcome.fixed)}
        except (UnicodeDecodeError, ValueError):
            fix_all = None
    return {"quick": quick, "fix_all": fix_all}
