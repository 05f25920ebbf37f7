"""The false alarms of the precision sample (bench/precision.md) that no rule-local change removes.

Each program is the sample's reduction of a real finding, run with flax 0.12.8 in both modes (the same
output: nothing breaks). The rule still reports it, for a reason that lies in the object-flow model, not in
the rule, so each test is an expected failure, strict: when the model learns the fact, the test passes,
pytest reports the XPASS as a failure, and the program belongs in the rule's VALID cases.
"""
from __future__ import annotations

import textwrap

import pytest

from nnx_lint.base.diagnostic import shown
from nnx_lint.engine.registry import all_rules
from nnx_lint.engine.walk import lint_bytes

#: maxtext tests/unit/attention_test.py:4049 (bench/precision/AI_Hypercomputer_maxtext__unit_attention_test_L4049.py)
RESTORE_OF_AN_INVARIANT = """
import jax
import jax.numpy as jnp
from flax import nnx


class MLA(nnx.Module):
  def __init__(self, qk_nope_head_dim, qk_rope_head_dim, *, rngs):
    self.qk_nope_head_dim = qk_nope_head_dim
    self.qk_rope_head_dim = qk_rope_head_dim
    self.qk_head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
    self.query = nnx.Linear(8, self.qk_head_dim, rngs=rngs)

  def mla_query_projection(self, inputs_q):
    self.qk_head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
    return self.query(inputs_q)


def run(inputs_q, mla: MLA):
  def loss_fn(inputs_q, mla):
    return jnp.sum(jax.lax.stop_gradient(mla.mla_query_projection(inputs_q)))

  return nnx.grad(loss_fn, argnums=0)(inputs_q, mla)
"""

#: bonsai bonsai/models/sam2/model_hiera_det.py:285 (bench/precision/jax_ml_bonsai__sam2_model_hiera_det_L285.py)
DROP_PATH_NEVER_BUILT = """
import numpy as np
from flax import nnx


class Identity(nnx.Module):
  def __call__(self, x):
    return x


class DropPath(nnx.Module):
  def __init__(self, drop_prob, *, rngs):
    self.drop_prob = drop_prob
    self.rngs = rngs


class MultiScaleBlock(nnx.Module):
  def __init__(self, dim, drop_path=0.0, *, rngs):
    self.norm1 = nnx.LayerNorm(dim, rngs=rngs)
    self.drop_path = DropPath(drop_prob=drop_path, rngs=rngs) if drop_path > 0.0 else Identity()


class Hiera(nnx.Module):
  def __init__(self, embed_dim=4, stages=(1, 2), drop_path_rate=0.0, *, rngs):
    dpr = np.linspace(0, drop_path_rate, sum(stages))
    self.blocks = nnx.List()
    for i in range(sum(stages)):
      self.blocks.append(MultiScaleBlock(dim=embed_dim, drop_path=float(dpr[i]), rngs=rngs))


def build():
  return nnx.split(Hiera(embed_dim=4, stages=(1, 2), rngs=nnx.Rngs(0)))
"""


def _codes(source: str, code: str) -> list[str]:
    rule = next(r for r in all_rules() if r.code == code)
    diagnostics = lint_bytes(textwrap.dedent(source).encode(), "case.py", [rule])
    return [f"{d.line}: {d.code} {d.message}" for d in shown(diagnostics, strict=False)]


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "NNX301: the write re-stores `self.qk_nope_head_dim + self.qk_rope_head_dim`, the expression __init__ stores, "
    "over attributes only __init__ writes; object_flow.restores_constant answers only for literals"))
def test_restore_of_an_invariant_expression_is_silent():
    assert _codes(RESTORE_OF_AN_INVARIANT, "NNX301") == []


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "NNX105: the DropPath that keeps `rngs` is one branch of `... if drop_path > 0.0 else Identity()`; "
    "drop_path is linspace(0, drop_path_rate)[i], 0.0 for blocks[0] always and for every block at the default "
    "drop_path_rate=0.0 that no caller overrides; the replay keeps both branches as may-flows"))
def test_rngs_in_a_branch_never_taken_is_silent():
    assert _codes(DROP_PATH_NEVER_BUILT, "NNX105") == []
