# finding: NNX403 google+tunix tunix/experimental/train/peft_trainer_v2.py:313
# message: `jax.tree.map(..., grads)` uses the `nnx.value_and_grad` result as an `nnx.State`: Tree Mode raises (it is a `Module`, call site line 686)
# verdict: latent
# graph: prints accumulated 2.0
# tree: raises ValueError: pytree structure error: different types
# why: `_fwd_bwd_step` passes `nnx.value_and_grad(diff_fn, argnums=0)(model)`'s grads to `GradientAccumulator.add`,
# why: whose `jax.tree_util.tree_map(_add, self.grads, grads)` needs them to be a State like `self.grads`. That
# why: line runs only when a gradient buffer was allocated (`allocate_grads=not self._is_single_microstep()`,
# why: i.e. `gradient_accumulation_steps > 1`); the default (1) takes the `else` branch and only stores the grads.
# why: The message's call site (line 686, the fused single-microstep step) reaches only that `else` branch.
# why: This program sets the documented `gradient_accumulation_steps=2`, under which Tree Mode raises.
import jax
import jax.numpy as jnp
from flax import nnx


class GradientAccumulator(nnx.Module):
  def __init__(self, model, wrt, *, allocate_grads=True):
    state = nnx.state(model, wrt)
    if allocate_grads:
      self.grads = nnx.data(jax.tree_util.tree_map(lambda x: jnp.zeros_like(x, dtype=jnp.float32), state))
    else:
      self.grads = nnx.data({})
    self.denom = nnx.Variable(jnp.zeros((), dtype=jnp.float32))

  def add(self, grads, denom=None):
    def _add(acc_var, g_var):
      g = g_var[...] if isinstance(g_var, nnx.Variable) else g_var
      acc_var.set_value(acc_var[...] + g)

    if jax.tree_util.tree_leaves(self.grads):
      jax.tree_util.tree_map(_add, self.grads, grads, is_leaf=lambda x: isinstance(x, nnx.Variable))
    else:
      self.grads = nnx.data(grads)
    denom_val = jnp.asarray(1.0, jnp.float32) if denom is None else denom.astype(jnp.float32)
    self.denom.set_value(self.denom[...] + denom_val)


def _default_loss_fn(model, x, y):
  return jnp.mean((model(x) - y) ** 2)


gradient_accumulation_steps = 2
model = nnx.Linear(4, 2, rngs=nnx.Rngs(0))
grad_accumulator = GradientAccumulator(model, nnx.Param, allocate_grads=gradient_accumulation_steps != 1)


def _fwd_bwd_step(model, grad_accumulator, x, y):
  grad_fn = nnx.value_and_grad(lambda model, x, y: (_default_loss_fn(model, x, y), None), argnums=0, has_aux=True)
  (loss_val, aux), grads = grad_fn(model, x, y)
  grad_accumulator.add(grads, denom=jnp.asarray(1.0, dtype=jnp.float32))
  return loss_val


for _ in range(gradient_accumulation_steps):
  _fwd_bwd_step(model, grad_accumulator, jnp.ones((2, 4)), jnp.zeros((2, 2)))
print('accumulated', float(grad_accumulator.denom[...]))
