"""The rule framework: one class per rule, carrying its own examples.

A rule is one module of a family package (``checkers/<family>/nnx201_state_axes_prefix.py``).
It subclasses :class:`Rule` and sets ``code``, ``symbol``, ``message``, ``help``, ``kind``,
``facts_type`` (its frozen facts dataclass, :mod:`nnx_lint.base.facts`), a docstring with the
sections ``What it does``, ``Why is this bad?`` and ``References``, ``VALID`` / ``INVALID``
example cases, and either :meth:`Rule.reproduce` or ``no_reproduction_reason``. The docs page's ``Example`` and ``Use
instead`` sections are rendered from the first INVALID case and the first VALID case,
so every example shown to users is also a test.

Checking is done by ``visit_<node>`` / ``leave_<node>`` methods named after astroid
node classes in lower case (``visit_call``, ``leave_module``), called by the engine
during its single walk of the file. Rules never parse, resolve imports or decide the
graph/tree mode themselves: they ask ``self.context`` (a :class:`nnx_lint.analysis.context.FileContext`).
"""
from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from nnx_lint.base.diagnostic import UNPROVEN
from nnx_lint.base.facts import ABSENT, Facts, UnprovenFacts, facts_from_dict
from nnx_lint.base.fix_kinds import Rewrite
from nnx_lint.base.program_syntax import assign, literal

if TYPE_CHECKING:
    from collections.abc import Iterable

    from astroid import nodes

    from nnx_lint.analysis.context import FileContext

_CODE_PATTERN = re.compile(r"^NNX\d{3}$")
_SYMBOL_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
_MARKER_PATTERN = re.compile(r"#\s*(NNX\d{3}(?:\s*,\s*NNX\d{3})*)\b")


@dataclass(frozen=True)
class TreeModeOutcome:
    """What Tree Mode does with an INVALID case: the evidence a confirmer looks for.

    ``raises`` names the exception type and a fragment of its message;
    ``differs`` describes the observable silent difference.
    """

    raises: str | None = None
    match: str | None = None
    differs: str | None = None

    def describe(self) -> str:
        if self.raises:
            return f"raises `{self.raises}`" + (f" ({self.match})" if self.match else "")
        return f"runs, but {self.differs}"


@dataclass(frozen=True)
class Reproduction:
    """A minimal program that exhibits a diagnostic's pattern, and what Tree Mode does with it.

    ``body`` is the body of ``def run(nnx):`` — it may use only ``nnx`` (``tree_runtime`` or
    ``flax.nnx`` in Tree Mode), ``jax`` and ``jnp``, and returns a JSON-able observation.
    A ``raises`` reproduction names the error category Tree Mode raises
    (:func:`tree_runtime.error_category`); a ``silent`` one gives the observation Tree
    Mode produces and the one graph mode would. ``control`` is the body of the Tree Mode
    rewrite, which must not be confirmed (it guards against reproductions that "confirm"
    anything). ``traced``: run inside ``jax.make_jaxpr`` (abstract tracing); False only
    for patterns that need eager-only APIs such as ``jax.set_mesh``. ``stand_ins`` says
    where the program goes beyond the finding's facts (``nnx.jit`` standing for
    ``nnx.shard_map``, or for a use the file does not show): such a program confirms the
    pattern, not the finding, and its verdict is ``pattern-confirmed``.
    """

    body: str
    expect_error: str | None = None
    expect_tree: Any = None
    expect_graph: Any = None
    control: str | None = None
    traced: bool = True
    stand_ins: tuple[str, ...] = ()

    def program(self, body: str | None = None, title: str = "") -> str:
        """The complete, runnable program text (also what ``--show-repro`` prints).

        The expectations are written as literals (``TREE_MODE_RETURNS = [...]``), not in a
        comment, because they can hold fact text: a literal keeps it a string constant
        (:mod:`nnx_lint.base.program_text`).
        """
        title = title or "nnx-lint reproduction"
        if not title.isprintable():
            raise ValueError("a program title is one printable line, not %r" % title)
        code = textwrap.indent(textwrap.dedent(body if body is not None else self.body).strip(), "    ")
        if self.expect_error:
            expected = ["# Tree Mode raises an error of this category:",
                        assign("TREE_MODE_RAISES", literal(self.expect_error))]
        else:
            expected = ["# Tree Mode returns TREE_MODE_RETURNS; graph mode returns GRAPH_MODE_RETURNS:",
                        assign("TREE_MODE_RETURNS", literal(self.expect_tree)),
                        assign("GRAPH_MODE_RETURNS", literal(self.expect_graph))]
        # The frame is the builder's own text; the expectations are constants (program_syntax),
        # and ``code`` is the builder's body, itself built on syntax trees.
        return "\n".join([
            "# " + title,
            "# Run: python repro.py            (tree_runtime)",
            "#      python repro.py flax       (flax.nnx with graph mode and graph updates off)",
            "import jax",
            "import jax.numpy as jnp",
            "",
            *expected,
            assign("TRACED", literal(bool(self.traced))),
            "",
            "",
            "def run(nnx):",
            code,
            "",
            "",
            'if __name__ == "__main__":',
            "    import sys",
            "",
            '    if sys.argv[1:] == ["flax"]:',
            "        from flax import nnx",
            "",
            "        nnx.set_graph_mode(False)",
            "        nnx.set_graph_updates(False)",
            "    else:",
            "        import tree_runtime as nnx",
            "    print(run(nnx))",
            "",
        ])


def raises(exception: str, match: str | None = None) -> TreeModeOutcome:
    """Tree Mode raises ``exception`` whose message contains ``match``."""
    return TreeModeOutcome(raises=exception, match=match)


def differs(observation: str) -> TreeModeOutcome:
    """Tree Mode runs but the observation differs from graph mode."""
    return TreeModeOutcome(differs=observation)


@dataclass(frozen=True)
class Case:
    """One example program. Lines that must fire end with ``# NNX201``-style markers."""

    id: str
    code: str
    tree_mode: TreeModeOutcome | None = None
    #: Extra files of a multi-file case, by relative path (for cross-file rules).
    files: dict[str, str] = field(default_factory=dict)
    #: The target version the case is linted with (``(3, 11)``: syntax added later is NNX002).
    target_version: tuple[int, int] | None = None

    @property
    def source(self) -> str:
        return textwrap.dedent(self.code).lstrip("\n")

    def expected(self) -> set[tuple[int, str]]:
        """The ``(line, code)`` pairs the markers in the source announce."""
        return expected_markers(self.source)


def expected_markers(source: str) -> set[tuple[int, str]]:
    """``(line, code)`` for every ``# NNX201`` marker comment in ``source``.

    >>> sorted(expected_markers("x = 1\\ny = f(x)  # NNX201, NNX202\\n"))
    [(2, 'NNX201'), (2, 'NNX202')]
    """
    found = set()
    from nnx_lint.base.lines import physical_lines

    for number, line in enumerate(physical_lines(source), start=1):
        for match in _MARKER_PATTERN.finditer(line):
            for code in match.group(1).split(","):
                found.add((number, code.strip()))
    return found


def Valid(id: str, code: str, **kwargs: Any) -> Case:  # noqa: N802 - reads like Fixit
    """A program on which the rule must stay silent."""
    return Case(id=id, code=code, **kwargs)


def Invalid(id: str, code: str, tree_mode: TreeModeOutcome | None = None, **kwargs: Any) -> Case:  # noqa: N802
    """A program on which the rule must fire exactly on the marked lines."""
    return Case(id=id, code=code, tree_mode=tree_mode, **kwargs)


#: The help of every unproven diagnostic: how to settle it either way.
_UNPROVEN_HELP = (
    "nnx-lint could not resolve `{value}` ({reason}). Check what it is at this line: annotate it "
    "(a parameter) or construct it where the analysis can see it, then the finding becomes proven "
    "or goes away; or suppress it with `# noqa: CODE` once checked"
)


class Rule:
    """Base class of every nnx-lint rule. Subclasses are discovered, never listed."""

    code: ClassVar[str]
    symbol: ClassVar[str]
    #: ``str.format`` template over the diagnostic's facts: what breaks, short enough for an
    #: editor's problem panel (at most ~120 characters for typical facts).
    message: ClassVar[str]
    #: ``str.format`` template over the same facts: how to fix it. Kept apart from the message
    #: (JSON ``help``, SARIF ``help``, ``--show-fixes``, the rule page's "How to fix").
    help: ClassVar[str] = ""
    kind: ClassVar[str]
    #: Ids of the patterns the rule covers, as in ``docs/catalogue.md`` (:mod:`nnx_lint.base.catalogue`).
    catalogue: ClassVar[tuple[str, ...]] = ()
    default_enabled: ClassVar[bool] = True
    #: NNX0xx rules are reported by the engine itself, not by visit methods.
    engine_reported: ClassVar[bool] = False
    #: True when ``visit_call`` does nothing for a call that is not of the flax.nnx API
    #: (``context.nnx_call(node)`` is None): the engine then skips it for such calls, which
    #: are most calls of a file. Only an optimisation: the same findings either way.
    visits_nnx_calls_only: ClassVar[bool] = False
    #: True when ``visit_call`` does nothing for a call that is neither of the flax.nnx API nor
    #: a call of a transformed function (the fact index's ``application(node)`` is None, as it
    #: is for most calls): the engine then skips it for such calls. The walk asks for the
    #: application only when it reaches the first such rule's handler, whose first question it
    #: is, so the questions are asked in the same order. Only an optimisation, as above.
    visits_transform_calls_only: ClassVar[bool] = False
    VALID: ClassVar[list[Case]] = []
    INVALID: ClassVar[list[Case]] = []
    #: The fixes this rule offers (:mod:`nnx_lint.fixes`), computed from each diagnostic:
    #: ``"pin"`` keeps graph mode at the calls of its ``pin`` fact; a :class:`Rewrite` declared
    #: beside the rule is a tree-native rewrite (:mod:`nnx_lint.base.fix_kinds`). Empty:
    #: ``no_fix_reason`` says why.
    fixes: ClassVar[tuple[str | Rewrite, ...]] = ()
    no_fix_reason: ClassVar[str] = ""
    #: The rule's facts dataclass (:mod:`nnx_lint.base.facts`); None only for engine-reported rules.
    facts_type: ClassVar[type[Facts] | None] = None
    #: When Tree Mode's check behind this rule fires on a line, a key of
    #: :data:`nnx_lint.analysis.first_error.STAGES` (``"inputs-flattened"`` for aliasing); a silent rule
    #: is ``"silent"``. None: not measured, and no message names a first error against it.
    stage: ClassVar[str | None] = None
    #: Why ``--confirm`` has no reproduction for this rule's diagnostics: set exactly when the
    #: rule does not override :meth:`reproduce` (a test keeps the two in step).
    no_reproduction_reason: ClassVar[str] = ""
    #: ``str.format`` template over :class:`~nnx_lint.base.facts.UnprovenFacts` (``value``,
    #: ``reason``, ``transform``): what would break if the unresolved value is what the rule
    #: looks for. Set by rules that report unproven diagnostics (:meth:`report_unproven`).
    unproven_message: ClassVar[str] = ""

    def __init__(self, context: FileContext) -> None:
        self.context = context

    @classmethod
    def rewrites(cls) -> tuple[Rewrite, ...]:
        """The tree-native rewrites among the rule's ``fixes``, in its order."""
        return tuple(kind for kind in cls.fixes if isinstance(kind, Rewrite))

    @classmethod
    def stage_order(cls) -> int | None:
        """The rule's place in the order Tree Mode's checks fire (None: no place)."""
        from nnx_lint.analysis.first_error import STAGES

        stage = cls.stage if cls.stage is not None else ("silent" if cls.kind == "silent" else None)
        return STAGES.get(stage) if stage is not None else None

    def report(
        self, node: nodes.NodeNG, facts: Facts | None = None, *, message: str | None = None,
        help: str | None = None, related: Iterable[tuple[Any, str]] | None = None, **fields: Any,
    ) -> None:
        """Report a diagnostic of this rule at ``node``, with its typed facts.

        The facts are a ``facts_type`` instance, or the facts by their stored names as
        keywords (the dataclass is built here, so a fact the rule does not declare, or a
        missing one, fails loudly). Message and help are
        formatted from the facts; ``message`` / ``help`` replace the class templates for this
        one diagnostic. ``related``: the other lines the finding involves,
        ``[(node, "what happens there"), ...]`` (:mod:`nnx_lint.base.related`).
        """
        if facts is None:
            if self.facts_type is None:
                raise TypeError(f"{type(self).__name__} declares no facts_type")
            facts = facts_from_dict(self.facts_type, fields, reported=False)
        elif fields:
            raise TypeError("report() takes a facts instance or fact keywords, not both")
        self.context.report(self, node, facts, message=message, help=help, related=related)

    def report_unproven(
        self, node: nodes.NodeNG, *, value: str, reason: str, transform: str = ABSENT,
        related: Iterable[tuple[Any, str]] | None = None,
    ) -> None:
        """Report that this rule's decision at ``node`` hangs on ``value``, which the analysis
        could not resolve (``reason``): an *unproven* diagnostic, shown only in audit mode
        (``--strict``), where staying silent would read as "safe". Its message is
        :attr:`unproven_message`; it has no fix and no reproduction (nothing is known to run)."""
        if not self.unproven_message:
            raise TypeError(f"{type(self).__name__} declares no unproven_message")
        facts = UnprovenFacts(value=value, reason=reason, transform=transform)
        self.context.report(self, node, facts, message="unproven: " + self.unproven_message,
                            help=_UNPROVEN_HELP.replace("CODE", self.code), related=related, proof=UNPROVEN)

    @classmethod
    def facts_from(cls, stored: Mapping[str, Any]) -> Facts:
        """The typed facts of a stored diagnostic's ``facts`` dict (a cached or worker
        diagnostic): the one way back from the stored form (:func:`nnx_lint.base.facts.facts_from_dict`)."""
        if cls.facts_type is None:
            raise TypeError(f"{cls.__name__} declares no facts_type")
        return facts_from_dict(cls.facts_type, stored)

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction | str | None:
        """A minimal program showing this diagnostic's pattern under Tree Mode (``--confirm``).

        ``facts`` are the diagnostic's typed facts (:meth:`facts_from`); builders read them
        as attributes (``facts.transform``; :data:`~nnx_lint.base.facts.ABSENT` for a fact this
        finding does not carry). A rule with a builder overrides this; it may return a
        string, the reason this one diagnostic has no reproduction. The base returns None:
        the rule has no builder, and ``no_reproduction_reason`` says why.
        """
        return None

    @classmethod
    def has_reproduction(cls) -> bool:
        """Whether the rule has a reproduction builder (overrides :meth:`reproduce`)."""
        return getattr(cls.reproduce, "__func__", None) is not Rule.reproduce.__func__

    @classmethod
    def render(cls, facts: Facts | Mapping[str, Any], message: str | None = None,
               help: str | None = None) -> tuple[str, str]:
        """The ``(message, help)`` of a diagnostic, formatted from its facts: the one place that does it.

        ``facts`` are the rule's typed facts; an engine-reported rule (NNX0xx, no ``facts_type``)
        gives its stored facts dict. The templates name facts by their stored keys.

        >>> from checkers.prefix_filters.nnx201_state_axes_prefix import StateAxesPrefix
        >>> facts = StateAxesPrefix.facts_type(filter="nnx.StateAxes(...)", transform="vmap", argument="in_axes",
        ...                                    position=0, filter_args=[], form="keyword", line_constructed=3)
        >>> message, help = StateAxesPrefix.render(facts)
        >>> message
        '`nnx.StateAxes` in `in_axes` of `nnx.vmap`: Tree Mode raises ValueError (prefix filters are rejected)'
        """
        if isinstance(facts, Facts):
            stored = facts.as_dict()
        elif cls.facts_type is None:
            stored = dict(facts)
        else:
            raise TypeError(f"{cls.__name__}.render() takes its {cls.facts_type.__name__}, not a dict")
        message_template = message if message is not None else cls.message
        help_template = help if help is not None else cls.help
        return message_template.format_map(stored), help_template.format_map(stored)

    @classmethod
    def generic_help(cls) -> str:
        """The help template with each fact shown as ``<name>`` (rule pages, SARIF rule help).

        >>> from checkers.prefix_filters.nnx201_state_axes_prefix import StateAxesPrefix
        >>> "nnx.compat.<transform>" in StateAxesPrefix.generic_help()
        True
        """
        return cls.help.format_map(_FactPlaceholders())

    @classmethod
    def family(cls) -> str:
        """``NNX2xx`` for ``NNX201``."""
        return cls.code[:4] + "xx"

    @classmethod
    def summary(cls) -> str:
        """The docstring's first paragraph as one line (it may wrap over several lines)."""
        paragraph = (cls.__doc__ or cls.symbol).strip().split("\n\n", 1)[0]
        return " ".join(line.strip() for line in paragraph.splitlines())

    @classmethod
    def docs_sections(cls) -> dict[str, str]:
        """The docstring split into its ``Section:``-free Markdown sections by heading."""
        return parse_docstring_sections(cls.__doc__ or "")


class _FactPlaceholders(dict):
    """Formats every ``{fact}`` of a template as ``<fact>``."""

    def __missing__(self, key: str) -> str:
        return f"<{key}>"


SECTION_TITLES = ("What it does", "Why is this bad?", "References")


def parse_docstring_sections(doc: str) -> dict[str, str]:
    """Split a rule docstring into ``{title: body}`` by the known section titles.

    >>> parse_docstring_sections('''Short.
    ...
    ... What it does:
    ...     Flags things.
    ... ''')
    {'What it does': 'Flags things.'}
    """
    doc = textwrap.dedent("\n".join(doc.splitlines()[1:])) if "\n" in doc else ""
    sections: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in doc.splitlines():
        title = line.strip().rstrip(":")
        if line.strip().endswith(":") and title in SECTION_TITLES and not line.startswith(" "):
            if current:
                sections[current] = textwrap.dedent("\n".join(lines)).strip()
            current, lines = title, []
        elif current:
            lines.append(line)
    if current:
        sections[current] = textwrap.dedent("\n".join(lines)).strip()
    return sections
