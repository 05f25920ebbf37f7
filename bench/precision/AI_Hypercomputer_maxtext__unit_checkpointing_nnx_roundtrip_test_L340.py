# finding: NNX401 AI-Hypercomputer+maxtext tests/unit/checkpointing_nnx_roundtrip_test.py:340
# message: `nnx.grad` differentiates all of `resumed.model`, and `_Model` holds non-float state: Tree Mode raises TypeError
# verdict: true
# graph: prints count advanced True
# tree: raises TypeError: grad requires real- or complex-valued inputs
# why: `_Model` holds `nnx.Dropout(rate=0.5, rngs=rngs)` (an RngStream with a uint32 count and a key) and a BatchNorm;
# why: test_resume_continues_step_and_rng takes `nnx.grad(lambda m: jnp.mean(m(_TRAIN_X, deterministic=False) ** 2))
# why: (resumed.model)` over the whole model, then `resumed.apply_gradients(grads)` (TrainStateNNX: optimizer.update).
# why: In the test, `self._trained(...)` (line 155, the same grad over the whole model) runs first and stops Tree Mode
# why: there; the checkpoint save and restore between them are left out. This program runs the flagged step directly
# why: on a fresh model.
import jax.numpy as jnp
import optax
from flax import nnx

_TX = optax.adamw(1e-3)
_TRAIN_X = jnp.arange(8, dtype=jnp.float32).reshape(4, 2)


class _Model(nnx.Module):
  def __init__(self, rngs: nnx.Rngs):
    self.linear = nnx.Linear(2, 3, rngs=rngs)
    self.bn = nnx.BatchNorm(3, rngs=rngs)
    self.dropout = nnx.Dropout(rate=0.5, rngs=rngs)

  def __call__(self, x, deterministic=False):
    x = self.bn(self.linear(x), use_running_average=deterministic)
    return self.dropout(x, deterministic=deterministic)


model = _Model(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, _TX, wrt=nnx.Param)
count_at_save = int(model.dropout.rngs.count[...])
grads = nnx.grad(lambda m: jnp.mean(m(_TRAIN_X, deterministic=False) ** 2))(model)
optimizer.update(model, grads)  # resumed.apply_gradients(grads)
print('count advanced', int(model.dropout.rngs.count[...]) > count_at_save)
