"""The cases of a parameterised test, and the branches of its body each case never runs.

absl makes one test method per case: ``test_x0``, ``test_x1`` (``parameters``, ``product``) or
``test_x_name`` (``named_parameters``); pytest makes ``test_x[id]`` (``pytest.mark.parametrize``,
:func:`pytest_cases`). A finding in the body of ``test_x`` holds in every case, unless it says
otherwise:

* its note names one case's value (:mod:`nnx_lint.analysis.case_notes`: "the case where
  `jit_fn` is `nnx.jit`"): it holds in the cases made with that value;
* it lies in a branch the case never runs, or it involves one (a related location there)::

      @parameterized.parameters(True, False)
      def test_issue(self, use_custom_vjp):
          if use_custom_vjp:
              linear = nnx.custom_vjp(linear)   # only test_issue0 runs this

The gate lists a finding under a passing test only when it holds in that test's case
(:meth:`nnx_lint.gate.attribution.Attributor.diagnostics_in_test`). The values are read as
:mod:`nnx_lint.analysis.test_cases` reads them (that module is the name resolver's, and so cannot
look names up; this one does).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from astroid import nodes

from nnx_lint.analysis.flow import lookup
from nnx_lint.analysis.test_cases import (
    ABSL_CASE_LISTS,
    MAX_CASES,
    PYTEST_PARAMETRIZE,
    absl_case_values,
    pytest_case_values,
)


@dataclass(frozen=True)
class TestCase:
    """One case of an absl-parameterised test: the name of the test method absl makes for it
    (``test_x0``, ``test_x_name``), what it gives each parameter, and the decorator's
    expressions that make it up (a case note points into one of them)."""

    __test__ = False  # not a pytest test class, whatever its name

    name: str
    values: dict[str, nodes.NodeNG]
    parts: tuple[nodes.NodeNG, ...]

    def holds(self, line: int, column: int) -> bool:
        """Whether the place ``(line, column)`` (1-based column) lies in one of the case's parts."""
        return any(_contains(part, line, column) for part in self.parts)


def absl_cases(function: nodes.FunctionDef, qualified_name) -> list[TestCase] | None:
    """The cases of a test method decorated with absl's ``parameters``, ``named_parameters`` or
    ``product``, in the order absl makes them, or None when they cannot all be read."""
    decorators = [d for d in (function.decorators.nodes if function.decorators else [])
                  if isinstance(d, nodes.Call) and (qualified_name(d.func) or "") in ABSL_CASE_LISTS]
    if len(decorators) != 1:
        return None
    kind = ABSL_CASE_LISTS[qualified_name(decorators[0].func)]
    decorator = decorators[0]
    arguments = function.args
    positional = [argument.name for argument in arguments.args or []]
    if positional and isinstance(function.parent, nodes.ClassDef) and positional[0] in ("self", "cls"):
        positional = positional[1:]
    if kind == "product":
        cases = _product_cases(decorator, function.name)
    else:
        cases = _listed_cases(decorator, function.name, positional, named=kind == "named_parameters")
    return cases if cases is not None and len(cases) <= MAX_CASES else None


def _product_cases(decorator: nodes.Call, test: str) -> list[TestCase] | None:
    grids = []
    for keyword in decorator.keywords or []:
        if keyword.arg is None or not isinstance(keyword.value, (nodes.List, nodes.Tuple)):
            return None
        grids.append([(keyword.arg, value) for value in keyword.value.elts])
    if decorator.args or not grids or any(isinstance(v, nodes.Starred) for g in grids for _k, v in g):
        return None
    combinations = 1
    for grid in grids:
        combinations *= len(grid)
    if combinations > MAX_CASES:
        return None
    return [TestCase(f"{test}{index}", dict(choice), tuple(value for _key, value in choice))
            for index, choice in enumerate(itertools.product(*grids))]


def _listed_cases(decorator: nodes.Call, test: str, positional: list[str], named: bool) -> list[TestCase] | None:
    if decorator.keywords:
        return None
    cases = []
    for index, case in enumerate(decorator.args):
        values = absl_case_values(case, positional, named)
        if values is None:
            return None
        suffix, given = values
        if named:
            if not isinstance(suffix, str):
                return None
            # absl's PEP 8 spelling: `test_x` and `name` make `test_x_name`.
            joiner = "_" if test.startswith("test_") and suffix and not suffix.startswith("_") else ""
            name = f"{test}{joiner}{suffix}"
        else:
            name = f"{test}{index}"
        cases.append(TestCase(name, given, (case,)))
    return cases


def pytest_cases(function: nodes.FunctionDef, qualified_name) -> list[TestCase] | None:
    """The cases pytest makes of a test decorated with ``pytest.mark.parametrize`` (one or
    several), each named by the id pytest puts between brackets (``test_x[1-nnx]``), or None
    when an id cannot be worked out exactly.

    pytest's ids: an explicit ``ids=[...]`` or ``pytest.param(..., id=...)``; else each value's
    own id joined by ``-``: a string as it is, a number, bool or None as ``str()`` gives it, a
    function or class of the file by its name, a lambda as ``<lambda>``, a literal list, tuple,
    dict or set as the parameter's name and the case's index (``sizes0``). Several decorators
    join their ids, the one nearest the function first. Where pytest's id is not certain (a
    non-ASCII string, a library object whose ``__name__`` the analysis cannot see, ids that
    repeat and pytest would number, a decorated class or a ``pytestmark`` that may add ids), the
    cases are not read: every finding then holds in every case, as before."""
    decorators = [d for d in (function.decorators.nodes if function.decorators else [])
                  if isinstance(d, nodes.Call) and qualified_name(d.func) == PYTEST_PARAMETRIZE]
    owner = function.parent
    if not decorators or (isinstance(owner, nodes.ClassDef) and owner.decorators is not None):
        return None  # a decorated class may be parametrized: it adds its own ids
    if "pytestmark" in function.root().locals or (
            isinstance(owner, nodes.ClassDef) and "pytestmark" in owner.locals):
        return None  # `pytestmark = pytest.mark.parametrize(...)` parametrizes every test it covers
    per_decorator = []
    for decorator in reversed(decorators):  # the id starts with the decorator nearest the function
        read = pytest_case_values(decorator)
        if read is None:
            return None
        names, cases = read
        made = []
        for index, (case, values, given) in enumerate(cases):
            ids = [given] if given is not None else [_value_id(value, name, index)
                                                     for name, value in zip(names, values)]
            if None in ids:
                return None
            made.append(("-".join(ids), dict(zip(names, values)), case))  # type: ignore[arg-type]
        per_decorator.append(made)
    combinations = 1
    for made in per_decorator:
        combinations *= len(made)
    if combinations > MAX_CASES:
        return None
    cases = [TestCase("-".join(part[0] for part in choice),
                      {name: value for part in choice for name, value in part[1].items()},
                      tuple(part[2] for part in choice))
             for choice in itertools.product(*per_decorator)]
    if len({case.name for case in cases}) != len(cases):
        return None  # pytest numbers repeated ids, in a way that changed across its versions
    return cases


def _value_id(value: nodes.NodeNG, parameter: str, index: int, depth: int = 0) -> str | None:
    """The id pytest gives one value of a case, or None when the analysis cannot be sure of it."""
    if isinstance(value, nodes.UnaryOp) and value.op == "-" and isinstance(value.operand, nodes.Const) \
            and type(value.operand.value) in (int, float):
        return str(-value.operand.value)
    if isinstance(value, nodes.Const):
        if isinstance(value.value, str):
            # pytest escapes non-ASCII and non-printable characters and backslashes: left alone
            plain = value.value.isascii() and value.value.isprintable() and "\\" not in value.value
            return value.value if plain and value.value else None
        if value.value is None or type(value.value) in (bool, int, float, complex):
            return str(value.value)
        return None  # bytes, Ellipsis
    if isinstance(value, nodes.Lambda):
        return "<lambda>"
    if isinstance(value, nodes.Name):
        if depth > 2:
            return None
        _scope, bindings = lookup(value)
        if len(bindings) != 1:
            return None
        binding = bindings[0]
        if isinstance(binding, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.ClassDef)):
            return binding.name
        assignment = binding.parent
        if isinstance(binding, nodes.AssignName) and isinstance(assignment, nodes.Assign) \
                and assignment.targets == [binding]:
            return _value_id(assignment.value, parameter, index, depth + 1)
        return None  # an import: a library object's `__name__` is not known here
    if isinstance(value, (nodes.Tuple, nodes.List, nodes.Dict, nodes.Set)):
        return f"{parameter}{index}"  # no `__name__`: pytest names it by the parameter
    return None


def _contains(node: nodes.NodeNG, line: int, column: int) -> bool:
    start = (node.fromlineno, (node.col_offset or 0) + 1)
    end = (node.end_lineno or node.tolineno, (node.end_col_offset or 0) + 1)
    return start <= (line, column) <= end


def dead_spans(function: nodes.FunctionDef, case: TestCase, qualified_name) -> list[tuple[int, int]]:
    """The line spans of ``function``'s ``if`` branches that ``case`` never runs: a branch
    whose condition the case's values decide (``if use_custom_vjp:``, ``if jit_fn == jax.jit:``,
    ``if not graph_updates:``), and a branch of a conditional expression on lines of its own.
    Conditions on anything else decide nothing."""
    spans = []
    for branch in function.nodes_of_class(nodes.If):
        taken = decided(branch.test, function, case, qualified_name)
        dead = branch.orelse if taken is True else branch.body if taken is False else []
        if dead and dead[0].fromlineno > branch.test.tolineno:  # not `if x: y` on one line
            spans.append((dead[0].fromlineno, dead[-1].tolineno))
    for choice in function.nodes_of_class(nodes.IfExp):
        # `a if flag else b` written over several lines: a branch on lines of its own
        taken = decided(choice.test, function, case, qualified_name)
        dead, live = (choice.orelse, choice.body) if taken is True else \
            (choice.body, choice.orelse) if taken is False else (None, None)
        if dead is not None and not any(_lines_meet(dead, other) for other in (choice.test, live)):
            spans.append((dead.fromlineno, dead.tolineno))
    return spans


def _lines_meet(first: nodes.NodeNG, second: nodes.NodeNG) -> bool:
    """Whether two nodes share a line (a line span cannot tell them apart)."""
    return first.fromlineno <= second.tolineno and second.fromlineno <= first.tolineno


_UNKNOWN = object()


def decided(test: nodes.NodeNG, function: nodes.FunctionDef, case: TestCase, qualified_name) -> bool | None:
    """The truth of the condition ``test`` in ``case``, or None when the case does not decide it."""
    value = _evaluate(test, function, case, qualified_name, depth=0)
    if value is _UNKNOWN:
        return None
    kind, content = value
    return bool(content) if kind == "constant" else None


def _evaluate(node: nodes.NodeNG, function, case: TestCase, qualified_name, depth: int):
    """``("constant", value)``, ``("name", qualified name)`` or ``_UNKNOWN``."""
    if depth > 8:
        return _UNKNOWN
    if isinstance(node, nodes.Name) and node.name in case.values and _is_parameter(node, function):
        return _evaluate(case.values[node.name], function, case, qualified_name, depth + 1)
    if isinstance(node, nodes.Const):
        return "constant", node.value
    if isinstance(node, (nodes.Name, nodes.Attribute)):
        name = qualified_name(node)
        return ("name", name) if name else _UNKNOWN
    if isinstance(node, nodes.UnaryOp) and node.op == "not":
        operand = decided(node.operand, function, case, qualified_name)
        return _UNKNOWN if operand is None else ("constant", not operand)
    if isinstance(node, nodes.BoolOp):
        truths = [decided(value, function, case, qualified_name) for value in node.values]
        if node.op == "and":
            return ("constant", False) if False in truths else ("constant", True) if None not in truths else _UNKNOWN
        return ("constant", True) if True in truths else ("constant", False) if None not in truths else _UNKNOWN
    if isinstance(node, nodes.Compare) and len(node.ops) == 1:
        operator, right = node.ops[0]
        left = _evaluate(node.left, function, case, qualified_name, depth + 1)
        if operator in ("in", "not in") and isinstance(right, (nodes.Tuple, nodes.List, nodes.Set)):
            options = [_evaluate(e, function, case, qualified_name, depth + 1) for e in right.elts]
            if left is _UNKNOWN or _UNKNOWN in options or any(o[0] != left[0] for o in options):
                return _UNKNOWN
            found = left in options
            return "constant", found if operator == "in" else not found
        other = _evaluate(right, function, case, qualified_name, depth + 1)
        # Two constants compare as Python compares them; two names as names (two different
        # qualified names are two objects); a constant and a name are not compared.
        if left is _UNKNOWN or other is _UNKNOWN or left[0] != other[0]:
            return _UNKNOWN
        if operator in ("==", "is"):
            return "constant", left == other
        if operator in ("!=", "is not"):
            return "constant", left != other
    return _UNKNOWN


def _is_parameter(name: nodes.Name, function: nodes.FunctionDef) -> bool:
    """Whether ``name`` can only be ``function``'s parameter of that name (never rebound)."""
    _scope, assignments = lookup(name)
    return bool(assignments) and all(
        isinstance(a, nodes.AssignName) and a.parent is function.args for a in assignments)
