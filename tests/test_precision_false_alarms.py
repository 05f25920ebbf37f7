"""The false alarms of the precision sample (bench/precision.md) that no rule-local change removes, and
their true look-alikes.

Each program is the sample's reduction of a real finding, run with flax 0.12.8 in both modes (the same
output: nothing breaks). The NNX301 one (a re-store of the expression __init__ stored) and the NNX105 one
with its argument passed plainly (a DropPath built only when drop_path > 0.0) are the rules' VALID cases
now; the tests here keep the look-alikes that do change state found. The NNX105 program as bonsai writes
it (a computed argument, ``float(np.linspace(0, drop_path_rate, depth)[i])``) is silent too: the model
evaluates such an argument (:mod:`nnx_lint.analysis.objects.numbers`).
"""
from __future__ import annotations

import textwrap


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


# The NNX301 false alarm is now the rule's VALID case `restore-of-init-expression`; its true look-alikes:

def test_restore_whose_input_the_transformed_method_writes_is_found():
    changed = RESTORE_OF_AN_INVARIANT.replace(
        "  def mla_query_projection(self, inputs_q):\n",
        "  def mla_query_projection(self, inputs_q):\n    self.qk_rope_head_dim = 2\n")
    assert [c.split(":")[0] for c in _codes(changed, "NNX301")] == ["15", "16"]


def test_restore_of_another_expression_is_found():
    changed = RESTORE_OF_AN_INVARIANT.replace(
        "    self.qk_head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim\n    return",
        "    self.qk_head_dim = self.qk_nope_head_dim * self.qk_rope_head_dim\n    return")
    assert [c.split(":")[0] for c in _codes(changed, "NNX301")] == ["15"]


def test_restore_whose_input_another_method_writes_is_found():
    changed = RESTORE_OF_AN_INVARIANT.replace(
        "    return self.query(inputs_q)\n",
        "    return self.query(inputs_q)\n\n  def grow(self):\n    self.qk_nope_head_dim = self.qk_nope_head_dim + 1\n")
    assert [c.split(":")[0] for c in _codes(changed, "NNX301")] == ["15"]


#: maxtext src/maxtext/layers/attention_mla.py:915-919, as the project writes it: `mla_query_projection`
#: re-runs, word for word, the four lines of `_init_projections` (called by the base's `__init__`) that set
#: softmax_scale. Both modes print `softmax_scale unchanged True` (flax 0.12.8).
REPLAYED_CONSTRUCTION = """
import math

import jax
import jax.numpy as jnp
from flax import nnx


class Attention(nnx.Module):
  def __init__(self, emb_dim, num_query_heads, *, rngs):
    self.num_query_heads = num_query_heads
    self._init_projections(emb_dim, rngs)

  def _init_projections(self, emb_dim, rngs):
    self.query = nnx.Linear(emb_dim, self.num_query_heads * 4, rngs=rngs)


class MLA(Attention):
  def __init__(self, emb_dim, num_query_heads, qk_nope_head_dim, qk_rope_head_dim, max_position_embeddings=16,
               original_max_position_embeddings=8, mscale=1.0, rope_factor=40.0, *, rngs):
    self.qk_nope_head_dim = qk_nope_head_dim
    self.qk_rope_head_dim = qk_rope_head_dim
    self.max_position_embeddings = max_position_embeddings
    self.original_max_position_embeddings = original_max_position_embeddings
    self.mscale = mscale
    self.rope_factor = rope_factor
    self.qk_head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
    super().__init__(emb_dim, num_query_heads, rngs=rngs)

  def _init_projections(self, emb_dim, rngs):
    self.query = nnx.Linear(emb_dim, self.num_query_heads * self.qk_head_dim, rngs=rngs)
    # Set softmax scaling.
    self.softmax_scale = self.qk_head_dim**-0.5
    if self.max_position_embeddings > self.original_max_position_embeddings:
      mscale = 0.1 * self.mscale * math.log(self.rope_factor) + 1.0
      self.softmax_scale = self.softmax_scale * mscale * mscale

  def mla_query_projection(self, inputs_q):
    # Set softmax scaling.
    self.qk_head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
    self.softmax_scale = self.qk_head_dim**-0.5
    if self.max_position_embeddings > self.original_max_position_embeddings:
      mscale = 0.1 * self.mscale * math.log(self.rope_factor) + 1.0
      self.softmax_scale = self.softmax_scale * mscale * mscale
    q = self.query(inputs_q)
    return q.reshape(q.shape[:-1] + (self.num_query_heads, self.qk_head_dim)) * self.softmax_scale


def loss_fn(inputs_q, mla):
  return jnp.sum(jax.lax.stop_gradient(mla.mla_query_projection(inputs_q)))


mla = MLA(emb_dim=8, num_query_heads=2, qk_nope_head_dim=16, qk_rope_head_dim=8, rngs=nnx.Rngs(0))
grads = nnx.grad(loss_fn, argnums=0)(jnp.ones((1, 3, 8)), mla)
"""


def test_block_that_replays_construction_is_silent():
    assert _codes(REPLAYED_CONSTRUCTION, "NNX301") == []


def test_block_that_differs_from_construction_is_found():
    changed = REPLAYED_CONSTRUCTION.replace(
        "      self.softmax_scale = self.softmax_scale * mscale * mscale\n    q =",
        "      self.softmax_scale = self.softmax_scale * mscale\n    q =")
    assert [c.split(":")[0] for c in _codes(changed, "NNX301")] == ["41", "44"]


def test_replay_whose_input_another_method_writes_is_found():
    changed = REPLAYED_CONSTRUCTION.replace(
        "  def mla_query_projection(self, inputs_q):\n",
        "  def set_rope_factor(self, factor):\n    self.rope_factor = factor\n\n"
        "  def mla_query_projection(self, inputs_q):\n")
    assert [c.split(":")[0] for c in _codes(changed, "NNX301")] == ["44", "47"]


def test_replay_whose_input_init_writes_after_delegating_is_found():
    changed = REPLAYED_CONSTRUCTION.replace(
        "    super().__init__(emb_dim, num_query_heads, rngs=rngs)\n",
        "    super().__init__(emb_dim, num_query_heads, rngs=rngs)\n    self.mscale = 2 * mscale\n")
    assert [c.split(":")[0] for c in _codes(changed, "NNX301")] == ["42", "45"]


def test_replay_of_a_value_construction_overwrites_is_found():
    changed = REPLAYED_CONSTRUCTION.replace(
        "    super().__init__(emb_dim, num_query_heads, rngs=rngs)\n",
        "    super().__init__(emb_dim, num_query_heads, rngs=rngs)\n    self.softmax_scale = 1.0\n")
    assert [c.split(":")[0] for c in _codes(changed, "NNX301")] == ["42", "45"]


#: A write under a comparison guard on a parameter that every analysed call leaves at its default.
COMPARISON_GUARDED_WRITE = """
from flax import nnx


class Counter(nnx.Module):
  def __init__(self):
    self.calls = 0

  def step(self, x, warmup=0):
    if warmup > 0:
      self.calls = warmup
    return x


@nnx.jit
def train(model, x):
  return model.step(x)


out = train(Counter(), 1.0)
"""


def test_write_under_a_comparison_no_call_makes_true_is_silent():
    assert _codes(COMPARISON_GUARDED_WRITE, "NNX301") == []


def test_write_under_a_comparison_a_call_makes_true_is_found():
    changed = COMPARISON_GUARDED_WRITE.replace("model.step(x)", "model.step(x, warmup=3)")
    assert [c.split(":")[0] for c in _codes(changed, "NNX301")] == ["11"]


def test_rngs_in_a_branch_never_taken_is_silent():
    # drop_path is float(np.linspace(0, drop_path_rate, n)[i]) and drop_path_rate keeps its default 0.0:
    # every element is 0.0, so no block builds a DropPath (both modes print the same, checked with flax 0.12.8)
    assert _codes(DROP_PATH_NEVER_BUILT, "NNX105") == []


def test_rngs_in_a_branch_a_computed_argument_takes_is_found():
    # drop_path_rate=0.1: linspace(0, 0.1, 3) is [0.0, 0.05, 0.1], the later blocks build a DropPath each
    taken = DROP_PATH_NEVER_BUILT.replace("stages=(1, 2), rngs=nnx.Rngs(0)", "stages=(1, 2), drop_path_rate=0.1, rngs=nnx.Rngs(0)")
    assert [c.split(":")[0] for c in _codes(taken, "NNX105")] == ["28"]


def test_rngs_in_a_branch_an_unevaluated_argument_takes_is_found():
    # a computed argument outside the evaluator (a call it does not know) leaves the guard undecided
    unknown = DROP_PATH_NEVER_BUILT.replace("drop_path=float(dpr[i])", "drop_path=float(np.random.rand())")
    assert [c.split(":")[0] for c in _codes(unknown, "NNX105")] == ["28"]


def test_rngs_in_a_branch_its_default_never_takes_is_silent():
    passed = DROP_PATH_NEVER_BUILT.replace("drop_path=float(dpr[i]), ", "drop_path=drop_path_rate, ")
    assert _codes(passed, "NNX105") == []
    assert _codes(DROP_PATH_NEVER_BUILT.replace("drop_path=float(dpr[i]), ", ""), "NNX105") == []


def test_rngs_in_a_branch_a_call_takes_is_found():
    # Tree Mode raises `Duplicate RngCount` for drop_path_rate=0.1 (checked with flax 0.12.8)
    passed = DROP_PATH_NEVER_BUILT.replace("drop_path=float(dpr[i]), ", "drop_path=drop_path_rate, ")
    taken = passed.replace("stages=(1, 2), rngs=nnx.Rngs(0)", "stages=(1, 2), drop_path_rate=0.1, rngs=nnx.Rngs(0)")
    assert [c.split(":")[0] for c in _codes(taken, "NNX105")] == ["28"]


def test_rngs_in_a_guarded_branch_of_an_entry_no_call_reaches_is_found():
    # no analysed call makes Hiera: drop_path_rate is unknown, the default alone does not decide
    passed = DROP_PATH_NEVER_BUILT.replace("drop_path=float(dpr[i]), ", "drop_path=drop_path_rate, ")
    uncalled = passed.replace("  return nnx.split(Hiera(embed_dim=4, stages=(1, 2), rngs=nnx.Rngs(0)))", "  pass")
    assert [c.split(":")[0] for c in _codes(uncalled, "NNX105")] == ["28"]


#: bonsai's layout: Hiera is built only in another file (sam2/modeling.py), which leaves drop_path_rate out.
HIERA_BUILDER = """
from flax import nnx
from hiera import Hiera


def build(cfg):
  return Hiera(embed_dim=cfg.dim, stages=cfg.stages{argument}, rngs=nnx.Rngs(0))
"""


def _project_codes(tmp_path, monkeypatch, argument: str) -> list[tuple[str, int]]:
    from pathlib import Path

    from nnx_lint.engine.config import load_settings
    from nnx_lint.engine.runner import run

    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    hiera = textwrap.dedent(DROP_PATH_NEVER_BUILT)
    (tmp_path / "hiera.py").write_text(hiera[:hiera.index("\ndef build():")])
    (tmp_path / "modeling.py").write_text(HIERA_BUILDER.format(argument=argument))
    monkeypatch.chdir(tmp_path)
    result = run([Path(".")], load_settings(Path(".")), jobs=1)
    return [(d.path, d.line) for d in result.diagnostics if d.code == "NNX105"]


def test_rngs_in_a_branch_the_other_files_callers_never_take_is_silent(tmp_path, monkeypatch):
    assert _project_codes(tmp_path, monkeypatch, "") == []


def test_rngs_in_a_branch_another_files_caller_takes_is_found(tmp_path, monkeypatch):
    assert _project_codes(tmp_path, monkeypatch, ", drop_path_rate=0.2") == [("hiera.py", 28)]


def test_rngs_in_a_branch_another_files_caller_decides_at_run_time_is_found(tmp_path, monkeypatch):
    assert _project_codes(tmp_path, monkeypatch, ", drop_path_rate=cfg.rate") == [("hiera.py", 28)]
