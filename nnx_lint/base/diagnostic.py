"""The one record every front-end reports."""
from __future__ import annotations

import os

from dataclasses import asdict, dataclass, field, fields, replace

# Type checkers take TYPE_CHECKING as true; a run never imports typing for annotations (start-up).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


#: What Tree Mode does with the flagged code (see the spec): it ``raises``, or it runs
#: and ``silent``-ly computes something else. ``linter`` marks NNX0xx (the file itself
#: could not be analysed), ``advisory`` marks NNX9xx (not a break, off by default).
KINDS = ("raises", "silent", "linter", "advisory")

#: The keys the engine adds to a notebook finding's stored facts after its rule reported it
#: (:data:`nnx_lint.base.facts.ADDED_AFTER_REPORT`): its cell, and its span in the JSON text.
NOTEBOOK_CELL = "cell"
NOTEBOOK_SPAN = "ipynb"


@dataclass(frozen=True)
class Related:
    """Another place a finding involves (the issue's "related locations"): a store site, the
    ``StateAxes`` built here and used there, the ``grad`` created here whose result is used there.

    The diagnostic itself is reported where the fix goes; these are the other lines a reader
    needs. ``path`` is displayed like the diagnostic's own (another project file is named
    relative in the same way); ``line``/``column`` are 1-based as in :class:`Diagnostic`.
    In a notebook, ``cell`` is the cell (counted as for the diagnostic), ``line`` the line in
    it, and ``ipynb`` the span ``(line, column, end line, end column)`` in the ``.ipynb`` JSON
    text where GitHub and SARIF point; both are None elsewhere. ``message`` says what
    happens here, in a few words; it may quote analysed text, so every reporter escapes it.
    """

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    cell: int | None = None
    ipynb: tuple[int, int, int, int] | None = None

    def __post_init__(self) -> None:
        if self.ipynb is not None and not isinstance(self.ipynb, tuple):
            object.__setattr__(self, "ipynb", tuple(self.ipynb))  # a JSON list from the cache

    def file_span(self) -> tuple[int, int, int, int]:
        """(line, column, end line, end column) in the file as stored (a notebook's JSON text)."""
        return self.ipynb if self.ipynb is not None else (self.line, self.column, self.end_line, self.end_column)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (cache, workers)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Related:
        return cls(**data)


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
    #: The other lines the finding involves (:class:`Related`); like ``facts``, they take no part
    #: in equality, so deduplication, noqa and baselines see the same findings as without them.
    related: tuple[Related, ...] = field(default=(), compare=False, hash=False)
    #: The classes and functions the flagged code is written in (``Tied.__init__``; ``""`` at
    #: module level or for a file-level NNX0xx finding). A baseline fingerprint names it, so
    #: identical lines in two functions stay apart without depending on any other line.
    scope: str = field(default="", compare=False, hash=False)
    #: ``proven``: the analysis resolved every value the finding hangs on. ``unproven``: it could
    #: not (the class of an argument is unknown, ...), and the finding says which value and why;
    #: reported only in audit mode (``--strict``, ``strict = true``; :func:`shown`).
    proof: str = "proven"

    def __post_init__(self) -> None:
        # Accept the plain-data form too (``Diagnostic(**d.to_dict())``, a JSON list of dicts).
        related = tuple(r if isinstance(r, Related) else Related.from_dict(r) for r in self.related)
        object.__setattr__(self, "related", related)

    @property
    def url(self) -> str:
        """The rule's documentation page as shipped in the installed package (a ``file://``
        URI; reporters given a configured ``rule-url-base`` use :func:`~nnx_lint.base.links.rule_url`)."""
        from nnx_lint.base.links import rule_url

        return rule_url(self.code)

    @property
    def cell(self) -> int | None:
        """The notebook cell the finding is in (1-based, as editors count), None outside a notebook.

        The engine adds it to the stored facts after the rule reported (:mod:`nnx_lint.base.notebooks`;
        not a fact of the rule), so this is the one reader of that key."""
        return self.facts.get(NOTEBOOK_CELL)

    @property
    def ipynb_span(self) -> dict[str, int] | None:
        """A notebook finding's span in the ``.ipynb`` JSON text (``line``, ``column``, ``end_line``,
        ``end_column``) when the engine knew it, else None (added after reporting, like :attr:`cell`)."""
        span = self.facts.get(NOTEBOOK_SPAN)
        return span if isinstance(span, dict) else None

    def sort_key(self) -> tuple:
        # A notebook's lines count from 1 in each cell: order by cell first.
        return (self.path, self.cell or 0, self.line, self.column, self.code)

    def to_dict(self) -> dict[str, Any]:
        """The plain-data form used by the cache and by workers: what ``dataclasses.asdict``
        gives, built directly (asdict walks every value generically; a warm run's fix-cache keys
        convert every finding, and asdict was a tenth of that run)."""
        data = {name: getattr(self, name) for name in _DIAGNOSTIC_FIELDS}
        data["facts"] = _plain_copy(self.facts)
        data["related"] = tuple(related.to_dict() for related in self.related)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Diagnostic:
        return cls(**data)

    def with_path(self, path: str) -> Diagnostic:
        """The same finding reported under ``path`` (the same file named another way): related
        locations in this file follow it, those in other files are re-based alike."""
        related = tuple(replace(r, path=rebase(r.path, self.path, path)) for r in self.related)
        return replace(self, path=path, facts=dict(self.facts), related=related)


#: The ``proof`` of a finding the analysis could not prove (audit mode, ``--strict``).
UNPROVEN = "unproven"


def shown(diagnostics, strict: bool) -> list:
    """The diagnostics a run reports: unproven ones only in audit mode (``strict``). Every
    front-end filters here, after the cache, so one cached analysis serves both modes."""
    return [d for d in diagnostics if strict or d.proof != UNPROVEN]


def analysed_whole(diagnostics) -> bool:
    """Whether none of a file's ``diagnostics`` says it could not be analysed whole (kind
    ``linter``: unreadable, unparsable, over its budget, or a rule failed). Syntax newer than
    the target version (NNX002 with a ``target_version`` fact) is reported on a file that was
    analysed whole."""
    return not any(d.kind == "linter" and "target_version" not in d.facts for d in diagnostics)


def rebase(related_path: str, old: str, new: str) -> str:
    """A related location's path once its finding's path ``old`` is displayed as ``new``
    (a cached finding read from another working directory): the linted file itself
    becomes ``new``, another file keeps its place relative to it.

    >>> rebase("src/base.py", "src/model.py", "/p/src/model.py")
    '/p/src/base.py'
    >>> rebase("src/model.py", "src/model.py", "model.py")
    'model.py'
    """
    if related_path == old or old == new:
        return new if related_path == old else related_path
    try:
        relative = os.path.relpath(related_path, os.path.dirname(old) or os.curdir)
    except ValueError:
        return related_path
    return os.path.normpath(os.path.join(os.path.dirname(new), relative))


#: The fields of :class:`Diagnostic`, in declaration order (as ``asdict`` lists them).
_DIAGNOSTIC_FIELDS = tuple(f.name for f in fields(Diagnostic))


def _plain_copy(value: Any) -> Any:
    """A copy of JSON-like data as ``dataclasses.asdict`` copies a field's value: containers
    copied (same types), dataclasses as dicts, anything else deep-copied."""
    if isinstance(value, dict):
        return type(value)((_plain_copy(k), _plain_copy(v)) for k, v in value.items())
    if isinstance(value, list):
        return [_plain_copy(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return _asdict_value(value)


def _asdict_value(value: Any) -> Any:
    import copy
    from dataclasses import is_dataclass

    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_plain_copy(v) for v in value)
    return copy.deepcopy(value)
