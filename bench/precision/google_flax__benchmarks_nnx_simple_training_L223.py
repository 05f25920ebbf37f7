# finding: NNX401 google+flax benchmarks/nnx_simple_training.py:223
# message: `nnx.grad` differentiates all of `model`, and `MLP` holds non-float state: Tree Mode raises TypeError
# verdict: true
# graph: prints times called: 2
# tree: raises TypeError: grad requires real- or complex-valued inputs
# why: The `jax` mode of the benchmark merges `(model, optimizer)` inside `jax.jit` and takes
# why: `nnx.grad(loss_fn)(model)`; MLP holds `Count(jnp.array(0))` and BatchNorm statistics. Tree Mode's jax.grad
# why: sees the int leaf.
from functools import partial

import jax
import jax.numpy as jnp
import optax
from flax import nnx


class Linear(nnx.Module):
  def __init__(self, din, dout, *, rngs):
    self.w = nnx.Param(jax.random.uniform(rngs.params(), (din, dout)))
    self.b = nnx.Param(jnp.zeros((dout,)))

  def __call__(self, x):
    return x @ self.w + self.b


class Block(nnx.Module):
  def __init__(self, din, dout, *, rngs):
    self.linear = Linear(din, dout, rngs=rngs)
    self.bn = nnx.BatchNorm(dout, rngs=rngs)

  def __call__(self, x):
    return nnx.relu(self.bn(self.linear(x)))


class Count(nnx.Variable):
  pass


class MLP(nnx.Module):
  def __init__(self, din, dhidden, dout, *, rngs):
    self.count = Count(jnp.array(0))
    self.linear_in = Block(din, dhidden, rngs=rngs)
    self.linear_out = Block(dhidden, dout, rngs=rngs)

  def __call__(self, x):
    self.count[...] += 1
    return self.linear_out(self.linear_in(x))


model = MLP(din=1, dhidden=8, dout=1, rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.sgd(1e-3), wrt=nnx.Param)


@partial(jax.jit, donate_argnums=0)
def train_step_jax(state, batch):
  model, optimizer = nnx.merge(graphdef, state)
  x, y = batch

  def loss_fn(model):
    return jnp.mean((y - model(x)) ** 2)

  grads = nnx.grad(loss_fn)(model)
  optimizer.update(model, grads)
  return nnx.state((model, optimizer))


graphdef, state = nnx.split((model, optimizer))
batch = (jnp.ones((4, 1)), jnp.zeros((4, 1)))
for _ in range(2):
  state = train_step_jax(state, batch)
nnx.update((model, optimizer), state)
print('times called:', int(model.count[...]))
