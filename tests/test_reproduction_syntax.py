"""Reproductions are built as syntax trees, not as program text in f-strings (issue 43).

A reproduction program is built from a finding's facts, which are text of the analysed code.
Text pasted into an f-string can become code; a builder that makes :mod:`ast` nodes
(``nnx_lint.base.program_syntax``) can only place a fact as a checked name or a string
constant. This test counts the f-strings (``ast.JoinedStr``) left where programs and their
confirmation are built, and holds them to a small number: the messages for people that remain.

Counted: every ``checkers/**/reproduction.py``; in every other rule module, the ``reproduce``
method and the module's functions and methods it calls (transitively); the program helpers of
``nnx_lint.base`` and ``nnx_lint.analysis.rule.Reproduction``; ``nnx_lint/confirmation/``;
``tree_runtime/confirm.py``.
"""
from __future__ import annotations

import ast
from pathlib import Path

from _support import REPO

#: The most f-strings the reproduction and confirmation modules may hold (76 when issue 43 was filed).
MOST_FSTRINGS = 10

WHOLE_MODULES = [
    *sorted((REPO / "checkers").rglob("reproduction.py")),
    *sorted((REPO / "nnx_lint" / "confirmation").glob("*.py")),
    REPO / "nnx_lint" / "base" / "program_text.py",
    REPO / "nnx_lint" / "base" / "program_syntax.py",
    REPO / "tree_runtime" / "confirm.py",
]


def fstrings(node: ast.AST) -> int:
    """The f-strings in ``node``, nested ones included."""
    return sum(isinstance(inner, ast.JoinedStr) for inner in ast.walk(node))


def _called_names(function: ast.AST) -> set[str]:
    """Names ``function`` calls as ``name(...)`` or ``self.name(...)`` / ``cls.name(...)``."""
    called = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                called.add(node.func.id)
            elif isinstance(node.func, ast.Attribute):
                called.add(node.func.attr)
    return called


def reproduction_functions(tree: ast.Module) -> list[ast.AST]:
    """A rule module's ``reproduce`` methods and the module's functions they call, transitively."""
    functions: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.setdefault(node.name, []).append(node)
    reached, pending = set(), ["reproduce"]
    while pending:
        name = pending.pop()
        if name in reached or name not in functions:
            continue
        reached.add(name)
        for function in functions[name]:
            pending.extend(_called_names(function))
    return [function for name in sorted(reached) for function in functions[name]]


def counted() -> dict[str, int]:
    """Where the counted f-strings are: a module (or ``module:function``) -> how many."""
    counts = {}
    for path in WHOLE_MODULES:
        if path.exists():
            counts[str(path.relative_to(REPO))] = fstrings(ast.parse(path.read_text(encoding="utf-8")))
    for path in sorted((REPO / "checkers").rglob("*.py")):
        if path.name == "reproduction.py":
            continue
        for function in reproduction_functions(ast.parse(path.read_text(encoding="utf-8"))):
            counts[f"{path.relative_to(REPO)}:{function.name}"] = fstrings(function)
    rule_module = ast.parse((REPO / "nnx_lint" / "analysis" / "rule.py").read_text(encoding="utf-8"))
    for node in rule_module.body:
        if isinstance(node, ast.ClassDef) and node.name == "Reproduction":
            counts["nnx_lint/analysis/rule.py:Reproduction"] = fstrings(node)
    return {where: number for where, number in counts.items() if number}


def test_the_counter_sees_fstrings_in_a_reproduce_method():
    tree = ast.parse("class R:\n    def reproduce(self, f):\n        return self._body(f)\n"
                     "    def _body(self, f):\n        return f'x = {f.name}'\n    def other(self):\n"
                     "        return f'{1}'\n")
    assert sum(fstrings(function) for function in reproduction_functions(tree)) == 1


def test_reproductions_are_not_built_in_fstrings():
    counts = counted()
    total = sum(counts.values())
    assert total <= MOST_FSTRINGS, (
        f"{total} f-strings in reproduction and confirmation code (at most {MOST_FSTRINGS}): build the program "
        "with nnx_lint.base.program_syntax, and messages with %-formatting: "
        + ", ".join(f"{where} {number}" for where, number in sorted(counts.items(), key=lambda item: -item[1])))
