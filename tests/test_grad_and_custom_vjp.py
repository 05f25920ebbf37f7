"""NNX4xx/NNX5xx: no rule crash (NNX003) on the fixtures and the catalogue's reproductions,
and the table of flax layers agrees with what the rules need."""
from __future__ import annotations

from pathlib import Path

import pytest
from _support import FIXTURES, REPO, family_rules, lint_fixture

from nnx_lint.engine import lint_source
from nnx_lint.registry import rule_by_code
from nnx_lint.variables import FLAX_LAYERS, NON_DIFFERENTIABLE

FAMILIES = ("grad_semantics", "custom_vjp")
_CANDIDATES = [REPO.parent / "shared" / "spec" / "repros", Path("/work/shared/spec/repros")]
REPROS = next((p for p in _CANDIDATES if p.is_dir()), _CANDIDATES[0])
_REPRO_EXPECTED = {
    "r30_grad_default_argnums_type.py": {"NNX402", "NNX403"},
    "r30_grad_default_argnums_type_fix.py": set(),
    "r31_grad_nonfloat_variables_fix.py": set(),
    "r40_custom_vjp_old_bwd.py": {"NNX501", "NNX502"},
    "r40_custom_vjp_fix.py": set(),
    "r41_custom_vjp_state_tangent.py": {"NNX502"},
    "r42_custom_vjp_variable_update.py": {"NNX503"},
    "r11_diffstate.py": set(),
    "r22_perturb_diffstate.py": set(),
    "r22_perturb_diffstate_fix.py": set(),
}


def _rules():
    return [rule for family in FAMILIES for rule in family_rules(family)] + [rule_by_code("NNX003")]


@pytest.mark.parametrize(
    "path", sorted(p for f in FAMILIES for p in (FIXTURES / f).rglob("*.py")), ids=lambda p: p.name
)
def test_no_rule_crash_on_fixtures(path):
    assert not [d for d in lint_fixture(path, _rules()) if d.code == "NNX003"]


@pytest.mark.parametrize("name", sorted(_REPRO_EXPECTED))
def test_catalogue_reproductions(name):
    path = REPROS / name
    if not path.exists():
        pytest.skip("the shared spec is not next to this checkout")
    found = {d.code for d in lint_source(path.read_text(), str(path), _rules())}
    assert found == _REPRO_EXPECTED[name]


def test_layer_table_rows():
    assert FLAX_LAYERS["flax.nnx.Dropout"].rng_when == "rngs-given"
    assert FLAX_LAYERS["flax.nnx.RNN"].rng_when == "unless-rngs-false"
    assert not any(category in NON_DIFFERENTIABLE for _, _, category in FLAX_LAYERS["flax.nnx.BatchNorm"].leaves)
