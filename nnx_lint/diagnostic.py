"""The one record every front-end reports."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from nnx_lint import DOCS_URL

#: What Tree Mode does with the flagged code (see the spec): it ``raises``, or it runs
#: and ``silent``-ly computes something else. ``linter`` marks NNX0xx (the file itself
#: could not be analysed), ``advisory`` marks NNX9xx (not a break, off by default).
KINDS = ("raises", "silent", "linter", "advisory")


@dataclass(frozen=True)
class Diagnostic:
    """One finding: where, which rule, what breaks, and the facts behind it.

    ``line`` and ``end_line`` are 1-based; ``column`` and ``end_column`` are 1-based
    too (Ruff's convention); flake8 and pylint get ``column - 1``.
    ``facts`` is a small JSON-able dict of what the rule saw, for confirmation and fixes.
    ``message`` says what breaks (one editor line); ``help`` says how to fix it, kept apart
    so that editors and flake8/pylint show a short message.
    """

    code: str
    symbol: str
    message: str
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    kind: str
    facts: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    help: str = ""

    @property
    def url(self) -> str:
        """The rule's documentation page."""
        return DOCS_URL.format(code=self.code)

    def sort_key(self) -> tuple:
        # A notebook's lines count from 1 in each cell: order by cell first.
        return (self.path, self.facts.get("cell", 0), self.line, self.column, self.code)

    def to_dict(self) -> dict[str, Any]:
        """The plain-data form used by the cache and by workers."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Diagnostic:
        return cls(**data)

    def with_path(self, path: str) -> Diagnostic:
        return Diagnostic(**{**asdict(self), "path": path})


def analysed_whole(diagnostics) -> bool:
    """Whether none of a file's ``diagnostics`` says it could not be analysed whole (kind
    ``linter``: unreadable, unparsable, over its budget, or a rule failed)."""
    return not any(d.kind == "linter" for d in diagnostics)
