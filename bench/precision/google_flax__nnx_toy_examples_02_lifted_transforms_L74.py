# finding: NNX401 google+flax examples/nnx_toy_examples/02_lifted_transforms.py:74
# message: `nnx.grad` differentiates all of `model`, and `MLP` holds non-float state: Tree Mode raises TypeError
# verdict: true
# graph: prints count 2
# tree: raises TypeError: grad requires real- or complex-valued inputs
# why: MLP holds `self.count = Count(jnp.array(0))` (an int Variable) and `nnx.grad(loss_fn)(model)` differentiates
# why: the whole model: Tree Mode's jax.grad sees the int leaf. (The script wraps train_step in
# why: `nnx.cached_partial`, which Tree Mode rejects first with a ValueError, flagged separately as NNX706; this
# why: program calls train_step directly, as the cached partial does.)
import jax
import jax.numpy as jnp
import optax
from flax import nnx


class Linear(nnx.Module):
  def __init__(self, din, dout, *, rngs):
    self.w = nnx.Param(jax.random.uniform(rngs.params(), (din, dout)))
    self.b = nnx.Param(jnp.zeros((dout,)))

  def __call__(self, x):
    return x @ self.w.value + self.b.value


class Count(nnx.Variable):
  pass


class MLP(nnx.Module):
  def __init__(self, din, dhidden, dout, *, rngs):
    self.count = Count(jnp.array(0))
    self.linear1 = Linear(din, dhidden, rngs=rngs)
    self.linear2 = Linear(dhidden, dout, rngs=rngs)

  def __call__(self, x):
    self.count.value += 1
    return self.linear2(jax.nn.relu(self.linear1(x)))


model = MLP(din=1, dhidden=8, dout=1, rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.sgd(1e-3), wrt=nnx.Param)


@nnx.jit
def train_step(model, optimizer, batch):
  x, y = batch

  def loss_fn(model):
    return jnp.mean((y - model(x)) ** 2)

  grads = nnx.grad(loss_fn)(model)
  optimizer.update(model, grads)


batch = (jnp.ones((4, 1)), jnp.zeros((4, 1)))
train_step(model, optimizer, batch)
train_step(model, optimizer, batch)
print('count', int(model.count.value))
