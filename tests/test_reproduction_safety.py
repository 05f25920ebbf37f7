"""Reproduction programs never carry text of the analysed code as code (docs/security.md).

Every string fact of every INVALID case's diagnostics is replaced by hostile text; each
builder must then give a reason (no reproduction) or programs that parse and hold the
hostile text only inside string literals. The check here is independent of the guard in
``nnx_lint.base.program_text``: it walks the parsed program's ``ast.Constant`` string nodes.

``NNX_LINT_FUZZ_EXAMPLES`` raises the number of random combinations hypothesis tries.
"""
from __future__ import annotations

import ast
import os

import pytest
from _support import outside_string_literals

from nnx_lint.confirmation.oracle import reproduction_for
from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.engine.walk import lint_bytes
from nnx_lint.base.program_text import UnsafeFact, replaced, string_leaves
from nnx_lint.engine.registry import all_rules
from nnx_lint.analysis.rule import Reproduction

MARKER = "PWNED"
#: Text that breaks out of every template form: names, keyword arguments, subscripts, string
#: quotes, comments, lines; attribute paths and ``['key']`` keys the builders parse.
HOSTILE = [
    f'x = 0; __import__("os").system("{MARKER}"); y',
    f"['x = 0; __import__(\"os\").system(\"{MARKER}\"); y']",
    f"a=0, b=__import__('os').system('{MARKER}') or 0, c",
    f"\n__import__('os').system('{MARKER}')\n",
    f"a'; {MARKER}(); b = '",
    f'a"; {MARKER}(); b = "',
    f"layers[0]; {MARKER}(1); x",
    f"self.a.b; {MARKER}.c",
    f"}}]); {MARKER}([{{",
    f"# {MARKER}\nimport os",
    f"\\'; {MARKER}; '",
    f"ｘ = {MARKER}\u202e()",
    "A" * 20_000 + f"; {MARKER}()",
    f"blocks['{MARKER}\\''].w",
    f"embed.embedding).{MARKER}(",
]
#: Text no builder may turn into a broken program (checked: reason, or the programs parse).
SHAPES = ["import", "lambda", "None", "class", "", " ", "é", "a" * 5000, "with"]

#: Every INVALID finding of a rule with a builder, except those the builder says it cannot reproduce
#: (``reproduce`` returns the reason: NNX708's reference maps; tests/test_confirmation.py checks them).
CASES = [
    (rule, diagnostic)
    for rule in all_rules()
    if rule.has_reproduction()
    for case in rule.INVALID
    for diagnostic in lint_bytes(case.source.encode(), "case.py", [rule])
    if not isinstance(rule.reproduce(rule.facts_from(diagnostic.facts)), str)
]
IDS = [f"{rule.code}-{i}" for i, (rule, _d) in enumerate(CASES)]


def _marker_outside_strings(program: str, tree: ast.Module | None = None) -> list[int]:
    return outside_string_literals(program, MARKER, tree)


def _built(rule, facts) -> Reproduction | str:
    """What the builder gives: a Reproduction, or the reason (a returned or raised one)."""
    try:
        return rule.reproduce(rule.facts_from(facts))
    except UnsafeFact as exc:
        return str(exc)


def _programs(reproduction: Reproduction) -> list[str]:
    programs = [reproduction.program()]
    if reproduction.control is not None:
        programs.append(reproduction.program(reproduction.control))
    return programs


def _assert_safe(rule, facts, payload_has_marker: bool = True) -> None:
    built = _built(rule, facts)
    if isinstance(built, str):
        return
    for program in _programs(built):
        try:
            tree = ast.parse(program)
        except SyntaxError as exc:
            pytest.fail(f"{rule.code}: hostile facts gave a program that does not parse ({exc}):\n{facts}")
        if payload_has_marker:
            outside = _marker_outside_strings(program, tree)
            assert not outside, (f"{rule.code}: analysed text became code at offsets {outside}:\n"
                                 f"{program[max(0, outside[0] - 200): outside[0] + 200]}\nfacts: {facts}")


def test_there_are_cases_and_string_facts():
    assert len(CASES) >= 60
    assert sum(1 for _r, d in CASES for _ in string_leaves(d.facts)) >= 300


@pytest.mark.parametrize("index", range(len(CASES)), ids=IDS)
def test_unmodified_facts_still_give_a_guarded_reproduction(index):
    """Recall: every INVALID case's diagnostic has a reproduction, and the guard lets it run."""
    rule, diagnostic = CASES[index]
    assert isinstance(rule.reproduce(rule.facts_from(diagnostic.facts)), Reproduction)
    assert isinstance(reproduction_for(diagnostic), Reproduction), reproduction_for(diagnostic)


EXAMPLES = int(os.environ.get("NNX_LINT_FUZZ_EXAMPLES", "40"))


@pytest.mark.parametrize("index", range(len(CASES)), ids=IDS)
def test_every_string_fact_replaced_by_hostile_text(index):
    """Each string fact on its own: the builder never pastes hostile text as code.

    Every fact gets the two texts that broke the builders (a ``['key']`` path and a line
    break) and, in turn, one more hostile text and one odd shape; with
    ``NNX_LINT_FUZZ_EXAMPLES`` >= 1000 every fact gets every text.
    """
    rule, diagnostic = CASES[index]
    for number, (path, _text) in enumerate(string_leaves(diagnostic.facts)):
        turn = index + number
        hostile = HOSTILE if EXAMPLES >= 1000 else [HOSTILE[1], HOSTILE[3], HOSTILE[turn % len(HOSTILE)]]
        shapes = SHAPES if EXAMPLES >= 1000 else [SHAPES[turn % len(SHAPES)]]
        for payload in hostile:
            _assert_safe(rule, replaced(diagnostic.facts, path, payload))
        for payload in shapes:
            _assert_safe(rule, replaced(diagnostic.facts, path, payload), payload_has_marker=False)


@pytest.mark.parametrize("index", range(len(CASES)), ids=IDS)
def test_the_guard_refuses_what_the_builder_lets_through(index):
    """The single path (``reproduction_for``) never hands out a program carrying hostile text."""
    rule, diagnostic = CASES[index]
    for path, _text in list(string_leaves(diagnostic.facts)):
        for payload in (HOSTILE[1], HOSTILE[3]):
            facts = replaced(diagnostic.facts, path, payload)
            result = reproduction_for(Diagnostic(**{**diagnostic.to_dict(), "facts": facts}))
            if isinstance(result, Reproduction):
                for program in _programs(result):
                    assert not _marker_outside_strings(program)


try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - hypothesis is in the `test` extra
    st = None


if st is not None:
    _PAYLOADS = st.one_of(
        st.sampled_from(HOSTILE),
        # `;` keeps it from being a plain name or path, which may become a name
        st.builds(lambda a, b: f"{a}{MARKER};{b}", st.text(max_size=30), st.text(max_size=30)),
        st.builds(lambda a, b: f"{a}['{MARKER};{b}']", st.sampled_from(["", "x", "a.b", "layers[0]"]),
                  st.text(alphabet="'\"\\\n;()[]{}#. =", max_size=10)),
    )

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(st.integers(min_value=0, max_value=len(CASES) - 1), st.data())
    def test_hostile_text_in_many_facts_at_once(index, data):
        """Random subsets of a diagnostic's string facts replaced by random hostile text at once."""
        rule, diagnostic = CASES[index]
        facts = diagnostic.facts
        leaves = [path for path, _ in string_leaves(facts)]
        chosen = data.draw(st.lists(st.sampled_from(leaves), unique=True, min_size=1), "leaves") if leaves else []
        for path in sorted(chosen, key=len, reverse=True):  # nested dict keys first: paths stay valid
            facts = replaced(facts, path, data.draw(_PAYLOADS, "payload"))
        _assert_safe(rule, facts)
