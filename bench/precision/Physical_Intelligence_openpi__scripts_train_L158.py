# finding: NNX202 Physical-Intelligence+openpi scripts/train.py:158
# message: `nnx.DiffState` in `argnums` of `nnx.value_and_grad`: Tree Mode raises ValueError (prefix filters are rejected)
# verdict: true
# graph: prints loss ok
# tree: raises ValueError: `argnums` cannot contain `DiffState` objects
# why: train_step merges the model from the TrainState, builds `diff_state = nnx.DiffState(0, config.trainable_filter)`
# why: (TrainConfig.trainable_filter, config.py:550: `nnx.All(nnx.Param, nnx.Not(self.freeze_filter))`, freeze_filter
# why: defaults to nnx.Nothing) and calls `nnx.value_and_grad(loss_fn, argnums=diff_state)(model, train_rng, ...)`;
# why: train_step runs under jax.jit (train.py: `jax.jit(functools.partial(train_step, config), ...)`).
import functools

import jax
import jax.numpy as jnp
from flax import nnx


class Model(nnx.Module):
  def __init__(self, rngs):
    self.linear = nnx.Linear(3, 2, rngs=rngs)

  def compute_loss(self, rng, observation, actions, train=False):
    return (self.linear(observation) - actions) ** 2


def trainable_filter(freeze_filter=nnx.Nothing):
  return nnx.All(nnx.Param, nnx.Not(freeze_filter))


def train_step(model_def, params, rng, step, batch):
  model = nnx.merge(model_def, params)
  model.train()

  def loss_fn(model, rng, observation, actions):
    chunked_loss = model.compute_loss(rng, observation, actions, train=True)
    return jnp.mean(chunked_loss)

  train_rng = jax.random.fold_in(rng, step)
  observation, actions = batch
  diff_state = nnx.DiffState(0, trainable_filter())
  loss, grads = nnx.value_and_grad(loss_fn, argnums=diff_state)(model, train_rng, observation, actions)
  return loss, grads


model_def, params = nnx.split(Model(nnx.Rngs(0)))
batch = (jnp.ones((4, 3)), jnp.zeros((4, 2)))
loss, grads = jax.jit(functools.partial(train_step, model_def))(params, jax.random.key(0), 0, batch)
print('loss ok')
