"""``nnx_lint.base.program_text`` and the guard on the one path every reproduction takes."""
from __future__ import annotations

import doctest

from checkers.shared_references.nnx101_aliased_module_attribute import AliasedAttribute
from checkers.shared_references.nnx105_shared_rngs import SharedRngs
from nnx_lint.confirmation import oracle as confirmation
from nnx_lint.base import program_syntax, program_text
from nnx_lint.confirmation.oracle import confirm, reproduction_for
from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.analysis.rule import Reproduction

# Every fact a class-alias diagnostic carries (reproduction_for reads them as typed facts).
_ALIAS_FACTS = {"class_name": "Tied", "first_path": "a", "second_path": "b", "kind": "Module",
                "shared": "nnx.Linear(...)", "container": None, "conditional": False, "stored_in": "__init__",
                "confidence": "static", "first_part": "", "second_part": "", "container_type": None,
                "used_with": "jit", "pin": [], "pin_every_use": False}


def _diagnostic(rule, facts) -> Diagnostic:
    return Diagnostic(rule.code, rule.symbol, "message", "m.py", 1, 1, 1, 2, rule.kind, facts)


def test_doctests():
    result = doctest.testmod(program_text)
    assert result.failed == 0 and result.attempted >= 20
    result = doctest.testmod(program_syntax)
    assert result.failed == 0 and result.attempted >= 20


def test_a_non_name_setattr_path_is_stored_by_setattr_with_a_literal():
    hostile = "['x = 0; __import__(\"os\").system(\"id\"); y']"
    reproduction = reproduction_for(_diagnostic(AliasedAttribute, {**_ALIAS_FACTS, "second_path": hostile}))
    assert isinstance(reproduction, Reproduction)
    assert "setattr(self, 'x = 0; __import__(\"os\").system(\"id\"); y', shared)" in reproduction.body


def test_an_unusable_stream_key_is_no_reproduction_and_never_runs(monkeypatch):
    facts = {**_ALIAS_FACTS, "class_name": "Model", "first_path": "rngs", "second_path": "noise.rngs",
             "kind": "Rngs", "first_part": "", "second_part": "['a=0, b=__import__(\"os\").system(\"id\") or 0, c']"}
    diagnostic = _diagnostic(SharedRngs, facts)
    reason = reproduction_for(diagnostic)
    assert isinstance(reason, str) and reason.startswith("no reproduction: the Rngs stream")
    ran = []
    monkeypatch.setattr(confirmation, "check_oracle", lambda oracle: None)
    monkeypatch.setattr(confirmation, "oracle_version", lambda oracle: "test")
    monkeypatch.setattr(confirmation, "run_programs", lambda programs, oracle, timeout=None: ran.extend(programs) or [])
    (verdict,) = confirm([diagnostic]).values()
    assert verdict.status == "unavailable" and verdict.program is None and ran == []


def test_the_guard_refuses_a_builder_that_pastes_a_fact(monkeypatch):
    """Defence in depth: a builder bug that pastes fact text gives no reproduction, never a run."""

    def pasting(cls, facts):
        return Reproduction(f"m = {facts.second_path}\nreturn 'ran'\n", expect_error="aliasing")

    monkeypatch.setattr(AliasedAttribute, "reproduce", classmethod(pasting))
    facts = {**_ALIAS_FACTS, "second_path": "0; __import__('os').system('id')"}
    reason = reproduction_for(_diagnostic(AliasedAttribute, facts))
    assert isinstance(reason, str) and "refused to run a program built from the analysed code" in reason
    # a plain name is no danger: the same builder with a plain path is let through
    assert isinstance(reproduction_for(_diagnostic(AliasedAttribute, {**_ALIAS_FACTS, "second_path": "b"})),
                      Reproduction)


def test_the_guard_refuses_a_paste_of_a_piece_of_a_key(monkeypatch):
    def pasting_key(cls, facts):
        key = facts.second_path[2:-2]  # ['...'] -> ...
        return Reproduction(f"self_{key} = 1\nreturn 'ran'\n", expect_error="aliasing")

    monkeypatch.setattr(AliasedAttribute, "reproduce", classmethod(pasting_key))
    facts = {**_ALIAS_FACTS, "second_path": "['x = 0; open(\"f\", \"w\"); y']"}
    assert "refused" in reproduction_for(_diagnostic(AliasedAttribute, facts))


def test_the_guard_refuses_a_fact_in_a_comment(monkeypatch):
    def commenting(cls, facts):
        return Reproduction(f"# found: {facts.used_with}\nreturn 'ran'\n", expect_error="aliasing")

    monkeypatch.setattr(AliasedAttribute, "reproduce", classmethod(commenting))
    facts = {**_ALIAS_FACTS, "used_with": "jit\nimport os"}
    assert "refused" in reproduction_for(_diagnostic(AliasedAttribute, facts))


def test_expectations_are_literals_not_comments():
    def build(facts):
        return [Reproduction("return 1", expect_tree=[facts["p"]], expect_graph=[2]).program()]

    (program,) = build({"p": "x'\n# y"})
    assert "TREE_MODE_RETURNS = [\"x'\\n# y\"]" in program
    assert program_text.carried_fact_text([program], {"p": "x'\n# y"}, build) is None
