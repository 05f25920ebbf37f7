"""Typed facts: what a rule saw at a finding, declared once per rule as a frozen dataclass.

A rule declares ``facts_type`` (a :class:`Facts` subclass) and reports with it; the
diagnostic stores its plain-data form (:meth:`Facts.as_dict`), which is what the JSON,
SARIF, cache and fixes read (and version 1 baselines, whose fingerprints hashed it), so the
stored shape is the one every consumer already knows. :func:`facts_from_dict` is the one way back from a stored dict (a cached
diagnostic, a worker's answer) to the typed facts, for reproduction builders and rendering.

Some facts only some findings carry (the ``pin`` sites of a use, but not of a bare
construction): such fields default to :data:`ABSENT` and are left out of the stored dict,
so a diagnostic's facts hold exactly the keys they held when they were a ``**kwargs`` dict.
A fact whose name is a Python keyword (``class``) is a field with a trailing underscore and
``metadata={"key": "class"}``.

Facts are read as attributes only (``facts.transform``; ``facts.pin is ABSENT`` for a fact the
finding lacks): they are no mapping, so a reader written against the stored dict
(``facts.get("pin")``) fails at once instead of reading a fact the rule does not declare.
A reader given a stored dict (a cached diagnostic, a worker's answer, JSON) converts it once,
at that boundary, with :func:`facts_from_dict` (``Rule.facts_from``).

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True, kw_only=True)
... class Example(Facts):
...     transform: str
...     pin: list = ABSENT
>>> Example(transform="vmap").as_dict()
{'transform': 'vmap'}
>>> facts_from_dict(Example, {"transform": "vmap", "pin": [], "cell": 2})
Example(transform='vmap', pin=[])
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeVar

#: Keys the engine adds to a stored diagnostic's facts after the rule reported it
#: (:mod:`nnx_lint.base.notebooks`: the cell of a notebook finding and its span in the file).
ADDED_AFTER_REPORT = frozenset({"cell", "ipynb"})


class _Absent:
    """The value of a fact this finding does not carry (never stored)."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Any = _Absent()

FactsT = TypeVar("FactsT", bound="Facts")


@dataclass(frozen=True, kw_only=True)
class Facts:
    """Base of every rule's facts dataclass (declare fields in the order they are stored)."""

    #: The paths, inside the objects a transform or graph API reads, of what the finding says is
    #: shared: each path is the concatenation of these stored facts' values (``("first_position",
    #: "first_part")`` gives ``args[0]`` + ``encoder``). flax names the same paths in its aliasing
    #: errors (``- .args[0].a.kernel``), so the gate matches a break to the finding by them
    #: (:mod:`nnx_lint.gate.alias_paths`). Empty for rules whose facts carry no such path.
    paths: ClassVar[tuple[tuple[str, ...], ...]] = ()

    @classmethod
    def keys_and_fields(cls) -> list[tuple[str, str]]:
        """``(stored key, field name)`` of every fact, in stored order."""
        return [(f.metadata.get("key", f.name), f.name) for f in fields(cls)]

    def as_dict(self) -> dict[str, Any]:
        """The stored form: every fact this finding carries, in declaration order."""
        found = {}
        for key, name in self.keys_and_fields():
            value = getattr(self, name)
            if value is not ABSENT:
                found[key] = value
        return found


def facts_from_dict(facts_type: type[FactsT], stored: Mapping[str, Any], *, reported: bool = True) -> FactsT:
    """The typed facts of a stored facts dict: the inverse of :meth:`Facts.as_dict`.

    Keys the engine adds after reporting (:data:`ADDED_AFTER_REPORT`) are not facts of the
    rule and are dropped from a ``reported`` dict (one a diagnostic held); any other unknown
    key, or a missing required fact, raises ``TypeError`` (the stored shape and the
    declaration disagree).
    """
    by_key = dict(facts_type.keys_and_fields())
    arguments = {}
    for key, value in stored.items():
        if key in by_key:
            arguments[by_key[key]] = value
        elif not (reported and key in ADDED_AFTER_REPORT):
            raise TypeError(f"{facts_type.__name__} has no fact {key!r}")
    return facts_type(**arguments)


@dataclass(frozen=True, kw_only=True)
class UnprovenFacts(Facts):
    """What an unproven diagnostic (audit mode, ``--strict``) reports: the value the decision
    hangs on, why the analysis could not resolve it, and the transform involved (if any)."""

    #: The value's source text (``model``).
    value: str
    #: Why it could not be resolved (``an unannotated parameter that no call in the project passes``).
    reason: str
    transform: str = ABSENT
