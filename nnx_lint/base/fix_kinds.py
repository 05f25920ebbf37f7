"""What a rule declares about the fixes it offers (``Rule.fixes``), no libcst needed.

A rule's ``fixes`` names :data:`PIN` (keep graph mode at the calls of its ``pin`` fact; the
machinery is :mod:`nnx_lint.fixes.pin`) and the tree-native rewrites it offers, each a
:class:`Rewrite` declared in the rule's own module (or its family package). The declaration
carries what the rule pages and ``nnx-lint rule`` say about the rewrite, so they need no
libcst; its builder runs only when a fix is asked for, on a :class:`RewriteSite` the fixes
machinery (:mod:`nnx_lint.fixes.rewrites`) hands it, libcst included. So a rule module never
imports libcst (linting does not need it), and a new rule's rewrite needs no central edit.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

# The applicability levels and the pin kind, re-exported for the rules' surface (nnx_lint.api).
from nnx_lint.base.applicability import APPLICABILITIES, DISPLAY_ONLY, PIN, SAFE, UNSAFE  # noqa: F401

if TYPE_CHECKING:
    from types import ModuleType

    from nnx_lint.base.diagnostic import Diagnostic
    from nnx_lint.base.facts import Facts


_NAME = r"[a-z][a-z0-9]*(-[a-z0-9]+)+"


class RewriteSite(Protocol):
    """What a rewrite's builder works on: one diagnostic in one file's text.

    The concrete class is :class:`nnx_lint.fixes.rewrites.Site`; a builder reads it and returns
    the fix its helpers make, or None (not the mechanical case here: no fix).
    """

    #: The ``libcst`` module (the builder matches and builds nodes with it).
    cst: ModuleType
    #: The text's :class:`nnx_lint.fixes.source.SourceIndex` (nodes at positions, their code, edits).
    index: Any
    diagnostic: Diagnostic
    #: The diagnostic's typed facts (its rule's ``facts_type``).
    facts: Facts | None
    #: The diagnostic's ``pin`` fact (``[]`` when it has none): the calls that decide the finding.
    pin: list

    def node_at_diagnostic(self) -> Any:
        """The libcst node spanning the diagnostic's range, if one does."""

    def is_name_chain(self, node: Any) -> bool:
        """Whether ``node`` is a bare name or attribute chain (``rngs``, ``self.rngs``)."""

    def unsafe(self, message: str, *edits: Any) -> Any:
        """An unsafe fix of these edits (None if an edit is None: it could not be made)."""

    def todo(self, advice: str) -> Any:
        """A display-only fix: a ``# TODO(nnx-lint CODE)`` comment with ``advice`` above the line."""


@dataclass(frozen=True)
class Rewrite:
    """A tree-native rewrite a rule offers: change the code to what Tree Mode means.

    ``name`` is the fix kind shown to users (lower-case words joined by ``-``);
    ``applicability`` is the best the builder makes (``unsafe``: it changes what the code does in
    graph mode, which is its point; ``display-only``: a TODO comment, where a rewrite needs
    judgement); ``does`` says what it does, for the rule page (a sentence without its final
    full stop); ``build`` is the builder, called with a :class:`RewriteSite` and returning a fix
    or None; ``writes`` names the ``flax.nnx`` name the rewrite writes that older flax releases
    lack (the flax table dates it), so that it is not offered to a project on an older flax.
    """

    name: str
    applicability: str
    does: str
    build: Callable[[RewriteSite], Any]
    writes: str = ""

    def __post_init__(self) -> None:
        if not re.fullmatch(_NAME, self.name) or self.name == PIN:
            raise ValueError(f"{self.name!r}: a rewrite's name is lower-case words joined by '-'")
        if self.applicability not in (UNSAFE, DISPLAY_ONLY):
            raise ValueError(f"{self.name}: a rewrite is {UNSAFE} or {DISPLAY_ONLY} (a pin is the safe fix)")
        if not self.does or self.does.endswith("."):
            raise ValueError(f"{self.name}: `does` is a sentence without its final full stop")
