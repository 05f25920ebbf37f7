# finding: NNX401 AI-Hypercomputer+maxtext tests/unit/checkpointing_nnx_load_test.py:62
# message: `nnx.grad` differentiates all of `state.model`, and `_ModelDropout` holds non-float state: Tree Mode raises TypeError
# verdict: true
# graph: prints step 1
# tree: raises TypeError: grad requires real- or complex-valued inputs
# why: `_ModelDropout` holds `nnx.Dropout(rate=0.5, rngs=rngs)`, whose RngStream has a uint32 count and a key;
# why: `_dropout_state` takes `nnx.grad(lambda m: ...)(state.model)` over the whole model.
import jax.numpy as jnp
import optax
from flax import nnx


class _ModelDropout(nnx.Module):
  def __init__(self, rngs):
    self.linear = nnx.Linear(2, 1, rngs=rngs)
    self.dropout = nnx.Dropout(rate=0.5, rngs=rngs)

  def __call__(self, x, deterministic=False):
    return self.dropout(self.linear(x), deterministic=deterministic)


class TrainStateNNX(nnx.Module):
  def __init__(self, model, optimizer):
    self.model = model
    self.optimizer = optimizer

  def apply_gradients(self, grads):
    self.optimizer.update(self.model, grads)


model = _ModelDropout(nnx.Rngs(0))
state = TrainStateNNX(model, nnx.Optimizer(model, optax.scale_by_adam(), wrt=nnx.Param))
grads = nnx.grad(lambda m: jnp.mean(m(jnp.ones((4, 2)), deterministic=False) ** 2))(state.model)
state.apply_gradients(grads)
print('step', int(state.optimizer.step[...]))
