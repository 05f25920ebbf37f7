"""Proof by running: a rule's reproduction, fixed by the rule's own fix, run on flax.

A reproduction body (``def run(nnx):``) is turned into a module that imports ``flax.nnx``
by name, so the linter sees the NNX calls; the fix is applied to that text, and both
programs run in the confirmation worker (:func:`nnx_lint.confirmation.oracle.run_programs`):
the original with flax in graph mode, the fixed one with flax in Tree Mode. A pin fix
must give the graph-mode outcome; a rewrite must give the outcome the rule's docs
promise for the Tree Mode rewrite (the reproduction's graph-mode observation).
Used by the tests; never on user code (reproductions are generated programs).
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.analysis.rule import Reproduction, Rule


def lintable_program(reproduction: Reproduction) -> str:
    """The reproduction as a module whose ``nnx`` is ``flax.nnx`` (the worker's ``run`` protocol)."""
    body = textwrap.indent(textwrap.dedent(reproduction.body).strip(), "    ")
    return (
        "import jax\n"
        "import jax.numpy as jnp\n"
        "from flax import nnx\n\n"
        f"TRACED = {reproduction.traced}\n\n\n"
        f"def run(_oracle_nnx):\n{body}\n"
    )


@dataclass
class Proof:
    """One reproduction of one rule, its fixed text, and the outcomes to compare."""

    code: str
    original: str
    fixed: str
    unsafe: bool


def proofs_for(rule: type[Rule], diagnostics: list[Diagnostic], unsafe: bool) -> list[Proof]:
    """Fixed reproductions for ``diagnostics`` of ``rule`` (those the fix changes)."""
    from nnx_lint.engine.walk import lint_source
    from nnx_lint.fixes.apply import fix_text

    found, seen = [], set()
    for diagnostic in diagnostics:
        try:
            reproduction = rule.reproduce(rule.facts_from(diagnostic.facts))
        except Exception:
            continue
        if not isinstance(reproduction, Reproduction):
            continue
        original = lintable_program(reproduction)
        if original in seen:
            continue
        seen.add(original)
        outcome = fix_text(original, lambda text: lint_source(text, "repro.py", [rule]), unsafe)
        if outcome.text != original and outcome.fixed.get(rule.code):
            found.append(Proof(rule.code, original, outcome.text, unsafe))
    return found


def case_program(source: str) -> str:
    """A rule's own example case as a worker program: its module body runs inside ``run``,
    eagerly, under the worker's mode (the cases are nnx-lint's test data, not user code)."""
    return (
        "TRACED = False\n"
        f"SOURCE = {source!r}\n\n\n"
        "def run(_oracle_nnx):\n"
        "    namespace = {'__name__': '__nnx_lint_case__'}\n"
        "    exec(compile(SOURCE, 'case.py', 'exec'), namespace)\n"
        "    return 'ran'\n"
    )
