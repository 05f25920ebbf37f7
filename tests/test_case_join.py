"""A finding in a parameterised test's body explains only the failures of the cases it holds in.

absl makes ``test_x0``, ``test_x1``... from ``test_x``. These tests lint a small absl test file
with the real linter and join its findings with test ids as the gate does
(:meth:`Attributor.diagnostics_in_test`): a finding in a branch a case never runs, one that
involves such a branch (a related location there), and one whose note names another case's
value, are not that case's.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import astroid
import pytest

from nnx_lint.analysis.names import NameResolver
from nnx_lint.analysis.parameterized_cases import absl_cases, dead_spans, decided, pytest_cases
from nnx_lint.gate.attribution import Attributor, lint_project

TESTS = textwrap.dedent('''\
    from functools import partial

    import jax
    from absl.testing import parameterized
    from flax import nnx


    class Test(parameterized.TestCase):

      @parameterized.parameters(True, False)
      def test_guarded(self, use_custom_vjp):
        def linear(m, x):
          return x

        def fwd(m, x):
          return linear(m, x), (m, x)

        def bwd(res, g):
          (m_g, x_g), out_g = g
          return m_g, x_g

        if use_custom_vjp:
          linear = nnx.custom_vjp(linear)
          linear.defvjp(fwd, bwd)
        return linear

      @parameterized.product(module_cls=[nnx.Linear], jit_decorator=[lambda f: f, nnx.jit, jax.jit])
      def test_branch(self, module_cls, jit_decorator):
        model = module_cls(2, 4, rngs=nnx.Rngs(0))
        if jit_decorator == jax.jit:
          return model
        else:
          grads = nnx.grad(lambda m: 0.0)(model)
          return grads['kernel']

      @parameterized.named_parameters(('jax_jit', jax.jit), ('nnx_jit', nnx.jit))
      def test_named(self, jit_fn):
        @partial(jit_fn, static_argnames=('n',))
        def f(m, n):
          m.count += 1
        return f
    ''')


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> tuple[Path, Attributor]:
    root = tmp_path_factory.mktemp("cases")
    (root / "cases_test.py").write_text(TESTS)
    return root, Attributor(lint_project(root, None), root)


def _codes(project, test: str) -> list[tuple[str, int]]:
    root, attributor = project
    return sorted((d.code, d.line) for d in attributor.diagnostics_in_test(f"cases_test.py::Test::{test}", root))


def test_a_finding_involving_a_branch_a_case_never_runs_is_not_that_case_s(project):
    assert ("NNX501", 19) in _codes(project, "test_guarded0")  # use_custom_vjp=True
    assert ("NNX501", 19) not in _codes(project, "test_guarded1")
    assert ("NNX501", 19) in _codes(project, "test_guarded")  # the function itself: every finding


def test_a_finding_in_a_branch_a_case_never_runs_is_not_that_case_s(project):
    assert [c for c in _codes(project, "test_branch0") if c[0] == "NNX403"]
    assert [c for c in _codes(project, "test_branch1") if c[0] == "NNX403"]
    assert not [c for c in _codes(project, "test_branch2") if c[0] == "NNX403"]  # jit_decorator=jax.jit


def test_a_finding_naming_one_case_is_that_case_s_alone(project):
    assert [c for c in _codes(project, "test_named_nnx_jit") if c[0] == "NNX301"]
    assert not [c for c in _codes(project, "test_named_jax_jit") if c[0] == "NNX301"]


def _cases(source: str):
    module = astroid.parse(source)
    function = next(module.nodes_of_class(astroid.nodes.FunctionDef))
    resolve = NameResolver(module).qualified_name
    return module, function, resolve, absl_cases(function, resolve)


@pytest.mark.parametrize("decorator, names", [
    ("@parameterized.parameters(1, 2)", ["test_x0", "test_x1"]),
    ("@parameterized.parameters((1,), (2,))", ["test_x0", "test_x1"]),
    ("@parameterized.parameters({'a': 1}, dict(a=2))", ["test_x0", "test_x1"]),
    ("@parameterized.named_parameters(('one', 1), ('_two', 2))", ["test_x_one", "test_x_two"]),
    ("@parameterized.named_parameters({'testcase_name': 'one', 'a': 1})", ["test_x_one"]),
    ("@parameterized.product(a=[1, 2], b=['x', 'y'])", ["test_x0", "test_x1", "test_x2", "test_x3"]),
])
def test_cases_are_named_as_absl_names_them(decorator, names):
    source = f"from absl.testing import parameterized\n\n{decorator}\ndef test_x(a, b=None):\n    pass\n"
    *_rest, cases = _cases(source)
    assert [case.name for case in cases] == names


@pytest.mark.parametrize("decorator", [
    "@parameterized.parameters(*CASES)",
    "@parameterized.product(a=VALUES)",
    "@parameterized.named_parameters((NAME, 1))",
    "@other.parameters(1, 2)",
])
def test_cases_that_cannot_be_read_are_none(decorator):
    source = f"from absl.testing import parameterized\nimport other\n\n{decorator}\ndef test_x(a):\n    pass\n"
    assert _cases(source)[3] is None


@pytest.mark.parametrize("condition, truths", [
    ("a", [True, False]),
    ("not a", [False, True]),
    ("a and b == 'x'", [True, False]),
    ("a or b == 'y'", [True, True]),
    ("b in ('x', 'z')", [True, False]),
    ("b != 'x'", [False, True]),
    ("fn is jax.jit", [True, False]),
    ("fn == nnx.jit", [False, True]),
    ("a and c", [None, False]),  # c is not a parameter
    ("fn == 3", [None, None]),  # a name and a constant are not compared
])
def test_conditions_a_case_decides(condition, truths):
    source = (f"import jax\nfrom flax import nnx\nfrom absl.testing import parameterized\n\n"
              f"@parameterized.parameters((True, 'x', jax.jit), (False, 'y', nnx.jit))\n"
              f"def test_x(a, b, fn):\n    if {condition}:\n        pass\n")
    _module, function, resolve, cases = _cases(source)
    test = next(function.nodes_of_class(astroid.nodes.If)).test
    assert [decided(test, function, case, resolve) for case in cases] == truths


def test_a_rebound_parameter_decides_nothing():
    source = ("from absl.testing import parameterized\n\n@parameterized.parameters(True, False)\n"
              "def test_x(a):\n    a = not a\n    if a:\n        x = 1\n    else:\n        x = 2\n")
    _module, function, resolve, cases = _cases(source)
    assert [dead_spans(function, case, resolve) for case in cases] == [[], []]


def test_dead_spans_are_the_branches_not_run():
    source = ("from absl.testing import parameterized\n\n@parameterized.parameters(True, False)\n"
              "def test_x(a):\n    if a:\n        x = 1\n        y = 2\n    else:\n        x = 3\n"
              "    if a: z = 1\n")
    _module, function, resolve, cases = _cases(source)
    assert [dead_spans(function, case, resolve) for case in cases] == [[(9, 9)], [(6, 7)]]


def test_dead_spans_of_a_conditional_expression_on_lines_of_its_own():
    source = ("from absl.testing import parameterized\n\n@parameterized.parameters(True, False)\n"
              "def test_x(a):\n    msg = (\n        'graph'\n        if a\n        else 'tree'\n    )\n"
              "    one_line = 'x' if a else 'y'\n")
    _module, function, resolve, cases = _cases(source)
    assert [dead_spans(function, case, resolve) for case in cases] == [[(8, 8)], [(6, 6)]]


PYTEST_CASES = textwrap.dedent('''\
    import pytest


    def helper():
        pass


    class Model:
        pass


    SIZE = 4


    @pytest.mark.parametrize("flag", [True, False])
    def test_flag(flag):
        pass


    @pytest.mark.parametrize("a, b", [(1, "x"), (-2.5, None), ([1], {"k": 1})])
    def test_pairs(a, b):
        pass


    @pytest.mark.parametrize(("fn", "cls"), [(helper, Model), (lambda: 0, SIZE)])
    def test_names(fn, cls):
        pass


    @pytest.mark.parametrize("n", [1, 2], ids=["one", None])
    @pytest.mark.parametrize("mode", [pytest.param("graph", id="g"), "tree"])
    def test_stacked(mode, n):
        pass


    @pytest.mark.parametrize(argnames="x", argvalues=[0, 1])
    def test_keywords(x):
        pass
    ''')


@pytest.mark.slow
def test_pytest_case_ids_are_the_ids_pytest_collects(tmp_path):
    """The ids are checked against pytest itself: a collection of the same file."""
    import subprocess
    import sys

    (tmp_path / "ids_test.py").write_text(PYTEST_CASES)
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                "-p", "no:xdist", "ids_test.py"], cwd=tmp_path, capture_output=True, text=True)
    expected = sorted(line.split("::", 1)[1] for line in collected.stdout.splitlines() if "::" in line)
    module = astroid.parse(PYTEST_CASES, module_name="ids_test")
    resolve = NameResolver(module).qualified_name
    found = sorted(f"{function.name}[{case.name}]" for function in module.body
                   if isinstance(function, astroid.nodes.FunctionDef) and function.name.startswith("test_")
                   for case in pytest_cases(function, resolve))
    assert found == expected and len(found) == 13


@pytest.mark.parametrize("decorator", [
    "@pytest.mark.parametrize('x', ['caf\\u00e9', 'b'])",  # pytest escapes non-ASCII
    "@pytest.mark.parametrize('x', [jax.jit, jax.grad])",  # a library object's __name__ is not seen
    "@pytest.mark.parametrize('x', [1, 1])",  # repeated ids: pytest numbers them
    "@pytest.mark.parametrize('x', CASES)",
    "@pytest.mark.parametrize('x', [1, 2], ids=str)",
    "@pytest.mark.parametrize('x', [1, 2], indirect=True)",
])
def test_pytest_cases_whose_ids_are_not_certain_are_not_read(decorator):
    source = f"import jax\nimport pytest\n\n{decorator}\ndef test_x(x):\n    pass\n"
    module = astroid.parse(source)
    assert pytest_cases(module.body[-1], NameResolver(module).qualified_name) is None


PYTEST_JOIN = textwrap.dedent('''\
    import jax
    import pytest
    from flax import nnx


    @pytest.mark.parametrize("use_grad", [True, False])
    def test_branch(use_grad):
        model = nnx.Linear(2, 4, rngs=nnx.Rngs(0))
        if use_grad:
            grads = nnx.grad(lambda m: 0.0)(model)
            return grads['kernel']
        return model
    ''')


def test_a_pytest_case_is_joined_only_with_the_findings_that_hold_in_it(tmp_path):
    (tmp_path / "join_test.py").write_text(PYTEST_JOIN)
    attributor = Attributor(lint_project(tmp_path, None), tmp_path)

    def codes(nodeid):
        return sorted(d.code for d in attributor.diagnostics_in_test(nodeid, tmp_path))

    assert codes("join_test.py::test_branch[True]") == ["NNX403"]
    assert codes("join_test.py::test_branch[False]") == []
    assert codes("join_test.py::test_branch") == ["NNX403"]  # not one case: every finding


def test_a_module_pytestmark_leaves_the_cases_unread():
    source = ("import pytest\n\npytestmark = pytest.mark.parametrize('y', [1, 2])\n\n"
              "@pytest.mark.parametrize('x', [1, 2])\ndef test_x(x, y):\n    pass\n")
    module = astroid.parse(source)
    assert pytest_cases(module.body[-1], NameResolver(module).qualified_name) is None


STATE_TANGENT = textwrap.dedent('''\
    import jax
    from absl.testing import parameterized
    from flax import nnx


    class Test(parameterized.TestCase):

      @parameterized.parameters(True, False)
      def test_issue(self, use_custom_vjp):
        class MyLinear(nnx.Module):
          def __init__(self, rngs):
            self.kernel = nnx.Param(jax.numpy.ones((2, 2)))

        def linear(m: MyLinear, x):
          return x @ m.kernel

        def linear_fwd(m: MyLinear, x):
          return linear(m, x), (m, x)

        def linear_bwd(res, g):
          m, x = res
          (m_g, _x_grad), outputs_g = g
          return (m_g, x)

        if use_custom_vjp:
          linear = nnx.custom_vjp(linear)
          linear.defvjp(linear_fwd, linear_bwd)
        return linear
    ''')


def test_a_state_tangent_of_a_custom_vjp_one_case_makes_is_that_case_s_alone(tmp_path):
    """flax's ``TestCustomVJP::test_issue``: the bwd returns the State tangent (NNX502) whatever the
    case, but only ``use_custom_vjp=True`` makes ``linear`` a custom_vjp. NNX502 names where the
    custom_vjp is made and registered, as NNX501 and NNX503 do, so the case that never makes it
    is not joined with the finding (the passing ``test_issue1`` was a false alarm of the recall run)."""
    (tmp_path / "cases_test.py").write_text(STATE_TANGENT)
    attributor = Attributor(lint_project(tmp_path, None), tmp_path)

    def codes(test: str) -> list[tuple[str, int]]:
        return sorted((d.code, d.line) for d in attributor.diagnostics_in_test(f"cases_test.py::Test::{test}", tmp_path))

    assert ("NNX502", 23) in codes("test_issue0")
    assert ("NNX502", 23) not in codes("test_issue1")
