"""Tree-native rewrites: the machinery that runs the builders rules declare.

A rule offers a rewrite by naming a :class:`~nnx_lint.base.fix_kinds.Rewrite` in its ``fixes``,
declared beside the rule (its module, or its family package), so a new rule's rewrite needs no
edit here. Its builder gets a :class:`Site`: one diagnostic of the file's :class:`SourceIndex`,
with libcst and the helpers below, and returns a :class:`Fix` or None (the pattern is not the
mechanical case: another fix of the rule applies, or none). Rewrites are ``unsafe``: they
change what the code does in graph mode (that is their point); the tests run each on flax in
Tree Mode. Where a rewrite needs judgement, the fix is ``display-only``: a ``# TODO(nnx-lint)``
comment above the line, shown and never applied (as bump-pydantic does).
"""
from __future__ import annotations

from functools import cached_property
from types import ModuleType

import libcst as cst

from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.base.facts import Facts
from nnx_lint.base.fix_kinds import Rewrite
from nnx_lint.engine.registry import facts_of, pin_sites
from nnx_lint.fixes.model import DISPLAY_ONLY, UNSAFE, Edit, Fix
from nnx_lint.fixes.source import SourceIndex


class Site:
    """One diagnostic in one file's text, as a rewrite's builder sees it
    (:class:`nnx_lint.base.fix_kinds.RewriteSite`)."""

    #: libcst, handed to builders so that rule modules never import it (linting does not need it).
    cst: ModuleType = cst

    def __init__(self, index: SourceIndex, diagnostic: Diagnostic) -> None:
        self.index = index
        self.diagnostic = diagnostic

    @cached_property
    def facts(self) -> Facts | None:
        """The diagnostic's typed facts."""
        return facts_of(self.diagnostic)

    @cached_property
    def pin(self) -> list:
        """The diagnostic's ``pin`` fact (``[]`` without one)."""
        return pin_sites(self.facts)

    def node_at_diagnostic(self) -> cst.CSTNode | None:
        """The libcst node spanning the diagnostic's range, if one does."""
        d = self.diagnostic
        return self.index.node_at(d.line, d.column, d.end_line, d.end_column)

    def is_name_chain(self, node: cst.BaseExpression) -> bool:
        """Whether ``node`` is a bare name or attribute chain (``rngs``, ``self.rngs``), unparenthesised."""
        if isinstance(node, cst.Name):
            return not node.lpar
        return isinstance(node, cst.Attribute) and not node.lpar and self.is_name_chain(node.value)

    def unsafe(self, message: str, *edits: Edit | None) -> Fix | None:
        """An unsafe fix of ``edits``; None when one of them could not be made."""
        if not edits or any(edit is None for edit in edits):
            return None
        return Fix(UNSAFE, message, tuple(edits))

    def todo(self, advice: str) -> Fix | None:
        """A display-only fix: a TODO comment above the diagnostic's line, with the advice."""
        diagnostic, index = self.diagnostic, self.index
        if diagnostic.line < 1 or diagnostic.line > len(index.lines):
            return None
        line_text = index.lines[diagnostic.line - 1]
        indent = line_text[: len(line_text) - len(line_text.lstrip())]
        comment = f"{indent}# TODO(nnx-lint {diagnostic.code}): {advice}\n"
        edit = index.edit(index.offsets[diagnostic.line - 1], index.offsets[diagnostic.line - 1], comment)
        return Fix(DISPLAY_ONLY, advice[0].upper() + advice[1:], (edit,) if edit else ())


def rewrite_fix(rewrite: Rewrite, index: SourceIndex, diagnostic: Diagnostic) -> Fix | None:
    """The fix ``rewrite`` makes for ``diagnostic`` in the text of ``index`` (None: none here)."""
    fix = rewrite.build(Site(index, diagnostic))
    if fix is not None and fix.applicability not in (rewrite.applicability, DISPLAY_ONLY):
        raise ValueError(f"{rewrite.name} made a {fix.applicability} fix; it is declared {rewrite.applicability}")
    return fix
