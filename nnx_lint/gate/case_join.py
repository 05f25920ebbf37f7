"""Which findings in the body of a parameterised test hold in one of its cases.

absl makes ``test_x0``, ``test_x1``... (or ``test_x_name``) from ``test_x``, pytest makes
``test_x[id]`` (``pytest.mark.parametrize``). A finding in
``test_x``'s body explains a failure of ``test_x1`` unless the finding belongs to another case
(:mod:`nnx_lint.analysis.parameterized_cases`): its case note names another case's value, or it
lies, or involves a place (a related location), in a branch that ``test_x1``'s values never run.

The test file is parsed with astroid as the linter parses it (never imported or executed).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from astroid import nodes

from nnx_lint.base.diagnostic import Diagnostic


class CaseJoin:
    """Per test file: its astroid tree, and the cases of its parameterised tests (memoised)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self._modules: dict[str, nodes.Module | None] = {}

    def holds_in(self, file: str, qualified: str, method: str) -> Callable[[Diagnostic], bool] | None:
        """For the test ``method`` that absl (``test_x0``) or pytest (``test_x[id]``) made from the
        function ``qualified`` of ``file``: whether a finding of that function's body holds in its
        case; None when ``method`` is the function itself or its case cannot be read (every
        finding then holds)."""
        from nnx_lint.analysis.names import NameResolver
        from nnx_lint.analysis.parameterized_cases import absl_cases, dead_spans, pytest_cases

        _name, bracket, case_id = method.partition("[")
        if not bracket and method == qualified.rpartition(".")[2]:
            return None
        module = self._module(file)
        function = _function(module, qualified) if module is not None else None
        if function is None:
            return None
        resolve = NameResolver(module).qualified_name
        if bracket:  # pytest's `test_x[id]`
            wanted, cases = case_id.removesuffix("]"), pytest_cases(function, resolve) or []
        else:  # absl's `test_x0`, `test_x_name`
            wanted, cases = method, absl_cases(function, resolve) or []
        case = next((case for case in cases if case.name == wanted), None)
        if case is None:
            return None
        dead = dead_spans(function, case, resolve)
        decorators = function.decorators

        def holds(diagnostic: Diagnostic) -> bool:
            if any(first <= diagnostic.line <= last for first, last in dead):
                return False
            for related in diagnostic.related:
                if str((self.base / related.path).resolve()) != file:
                    continue
                if any(first <= related.line <= last for first, last in dead):
                    return False  # it involves a place this case never runs
                in_decorator = decorators is not None and \
                    decorators.fromlineno <= related.line <= (decorators.end_lineno or decorators.tolineno)
                if in_decorator and related.message.startswith("the case where") and \
                        not case.holds(related.line, related.column):
                    return False  # it names another case's value
            return True

        return holds

    def _module(self, file: str) -> nodes.Module | None:
        if file not in self._modules:
            from nnx_lint.analysis.parsing import build
            from nnx_lint.base.bounds import ParseFailure

            try:
                text = Path(file).read_text(encoding="utf-8")
                self._modules[file] = build(text, file, Path(file).stem)
            except (OSError, UnicodeDecodeError, ParseFailure, RecursionError, ValueError):
                self._modules[file] = None
        return self._modules[file]


def _function(module: nodes.Module, qualified: str) -> nodes.FunctionDef | None:
    """The function ``Class.name`` (or ``name``) defined in ``module``'s classes, or at its top."""
    scope: nodes.NodeNG = module
    parts = qualified.split(".")
    for position, part in enumerate(parts):
        last = position == len(parts) - 1
        wanted = nodes.FunctionDef if last else nodes.ClassDef
        found = [node for node in getattr(scope, "body", []) if isinstance(node, wanted) and node.name == part]
        if not found:
            return None
        scope = found[-1]  # the definition in force, as absl sees the class
    return scope if isinstance(scope, nodes.FunctionDef) else None
