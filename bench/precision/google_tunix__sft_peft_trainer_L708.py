# finding: NNX706 google+tunix tunix/sft/peft_trainer.py:708
# message: `nnx.cached_partial(...)`: Tree Mode raises ValueError (cached_partial is a graph-mode-only API)
# verdict: true
# graph: prints loss ok
# tree: raises ValueError: cached_partial is a graph-mode-only API
# why: PeftTrainer.train(..., cache_nnx_graph=True) (True is train's default, peft_trainer.py:904) calls
# why: jit_train_and_eval_step, which wraps `nnx.jit(train_step, donate_argnames=("optimizer", "grad_accumulator"))`
# why: in `functools.partial(nnx.cached_partial(f, self.model, self.optimizer, self.grad_accumulator))` and calls it
# why: per step. The grad accumulator is reduced to a Module holding a Variable.
import functools

import jax.numpy as jnp
import optax
from flax import nnx


class GradientAccumulator(nnx.Module):
  def __init__(self):
    self.count = nnx.Variable(jnp.zeros(()))


def train_step(model, optimizer, grad_accumulator, inputs, is_update_step):
  def loss_fn(model, x):
    return jnp.mean(model(x) ** 2)

  loss, grads = nnx.value_and_grad(loss_fn)(model, inputs)
  optimizer.update(model, grads)
  grad_accumulator.count[...] += 1
  return loss


model = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
grad_accumulator = GradientAccumulator()
jitted = nnx.jit(train_step, donate_argnames=("optimizer", "grad_accumulator"))
jitted = functools.partial(nnx.cached_partial(jitted, model, optimizer, grad_accumulator))
loss = jitted(jnp.ones((4, 3)), jnp.array(True))
print('loss ok')
