"""NNX4xx/NNX5xx: no rule crash (NNX003) on the fixtures and the flip scripts,
and the table of flax layers agrees with what the rules need."""
from __future__ import annotations


import pytest
from _support import FIXTURES, REPO, family_rules, lint_fixture

from nnx_lint.engine.walk import lint_source
from nnx_lint.engine.registry import rule_by_code
from nnx_lint.analysis.variables import FLAX_LAYERS, NON_DIFFERENTIABLE

FAMILIES = ("grad_semantics", "custom_vjp")
#: Complete scripts that run each pattern with flax in graph mode or Tree Mode
#: (`python tests/flip_scripts/diffstate.py tree`), linted here as whole programs.
SCRIPTS = REPO / "tests" / "flip_scripts"
_SCRIPT_EXPECTED = {
    "grad_default_argnums_type.py": {"NNX402", "NNX403", "NNX404"},
    "grad_default_argnums_type_fix.py": set(),
    "grad_nonfloat_variables_fix.py": set(),
    "custom_vjp_old_bwd.py": {"NNX501", "NNX502"},
    "custom_vjp_fix.py": set(),
    "custom_vjp_state_tangent.py": {"NNX502"},
    "custom_vjp_variable_update.py": {"NNX503"},
    "diffstate.py": set(),
    "perturb_diffstate.py": set(),
    "perturb_diffstate_fix.py": set(),
}


def _rules():
    return [rule for family in FAMILIES for rule in family_rules(family)] + [rule_by_code("NNX003")]


@pytest.mark.parametrize(
    "path", sorted(p for f in FAMILIES for p in (FIXTURES / f).rglob("*.py")), ids=lambda p: p.name
)
def test_no_rule_crash_on_fixtures(path):
    assert not [d for d in lint_fixture(path, _rules()) if d.code == "NNX003"]


@pytest.mark.parametrize("name", sorted(_SCRIPT_EXPECTED))
def test_flip_scripts(name):
    path = SCRIPTS / name
    found = {d.code for d in lint_source(path.read_text(), str(path), _rules())}
    assert found == _SCRIPT_EXPECTED[name]


def test_every_flip_script_has_an_expectation():
    assert {p.name for p in SCRIPTS.glob("*.py")} == set(_SCRIPT_EXPECTED)


@pytest.mark.parametrize("path", sorted(SCRIPTS.glob("*.py")), ids=lambda p: p.name)
def test_flip_scripts_import_only_flax_jax_and_the_standard_library(path):
    """A flip script runs with only flax installed: no helper module beside it."""
    import ast
    import sys

    tree = ast.parse(path.read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= {"flax", "jax", "optax"} | set(sys.stdlib_module_names), imported


def test_layer_table_rows():
    assert FLAX_LAYERS["flax.nnx.Dropout"].rng_when == "rngs-given"
    assert FLAX_LAYERS["flax.nnx.RNN"].rng_when == "unless-rngs-false"
    assert not any(category in NON_DIFFERENTIABLE for _, _, category in FLAX_LAYERS["flax.nnx.BatchNorm"].leaves)


def test_nnx403_names_the_call_that_passes_the_class():
    """A class known only from a caller: the message says which call passes it (issue 26)."""
    source = '''
from flax import nnx


def step(model, x):
    grads = nnx.grad(lambda m: m(x).sum())(model)
    return grads['kernel']


step(nnx.Linear(2, 2, rngs=nnx.Rngs(0)), 1.0)
'''
    found = [d for d in lint_source(source, "module.py", [rule_by_code("NNX403")]) if d.code == "NNX403"]
    assert [d.message for d in found] == [
        "`grads['kernel']` uses the `nnx.grad` result as an `nnx.State`: Tree Mode raises "
        "(it is a `Linear`, call site line 10)"]
