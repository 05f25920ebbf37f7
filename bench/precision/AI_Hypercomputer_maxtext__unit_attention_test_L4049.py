# finding: NNX301 AI-Hypercomputer+maxtext tests/unit/attention_test.py:4049
# message: Assigning non-Variable attribute `self.qk_head_dim` under `nnx.grad` (attention_mla.py:915, reached through this call): Tree Mode silently drops it
# verdict: false
# graph: prints qk_head_dim 24 grads zero True
# tree: prints qk_head_dim 24 grads zero True
# why: MLA.__init__ sets `self.qk_head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim` (attention_mla.py:679)
# why: and `mla_query_projection` stores the same expression again (line 915) on every call: a re-store of the
# why: value the attribute already holds (Python ints that nothing else changes). Dropping it changes nothing.
import jax
import jax.numpy as jnp
from flax import nnx


class MLA(nnx.Module):
  def __init__(self, emb_dim, num_query_heads, qk_nope_head_dim, qk_rope_head_dim, *, rngs):
    self.num_query_heads = num_query_heads
    self.qk_nope_head_dim = qk_nope_head_dim
    self.qk_rope_head_dim = qk_rope_head_dim
    self.qk_head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
    self.query = nnx.Linear(emb_dim, num_query_heads * self.qk_head_dim, rngs=rngs)
    self.softmax_scale = self.qk_head_dim**-0.5

  def mla_query_projection(self, inputs_q):
    # Set softmax scaling.
    self.qk_head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
    self.softmax_scale = self.qk_head_dim**-0.5
    q = self.query(inputs_q)
    return q.reshape(q.shape[:-1] + (self.num_query_heads, self.qk_head_dim)) * self.softmax_scale


mla = MLA(emb_dim=8, num_query_heads=2, qk_nope_head_dim=16, qk_rope_head_dim=8, rngs=nnx.Rngs(0))
inputs_q = jnp.ones((1, 3, 8))
inputs_kv = jnp.ones((1, 3, 8))
low_rank_q = jnp.ones((1, 3, 4))


def full_indexer_loss_fn(inputs_q, inputs_kv, low_rank_q, mla):
  query = mla.mla_query_projection(inputs_q)
  return jnp.sum(jax.lax.stop_gradient(query)) + 0.0 * jnp.sum(inputs_kv) * 0.0 + 0.0 * jnp.sum(low_rank_q)


grad_fn = nnx.grad(full_indexer_loss_fn, argnums=(0, 1, 2))
grad_q, grad_kv, grad_low_rank_q = grad_fn(inputs_q, inputs_kv, low_rank_q, mla)
print('qk_head_dim', mla.qk_head_dim, 'grads zero', bool(jnp.all(grad_q == 0.0)))
