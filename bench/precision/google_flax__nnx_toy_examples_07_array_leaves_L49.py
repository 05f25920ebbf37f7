# finding: NNX301 google+flax examples/nnx_toy_examples/07_array_leaves.py:49
# message: Augmented assignment of non-Variable attribute `self.count` under `nnx.grad`: Tree Mode silently drops it
# verdict: wrong-reason
# graph: prints count 2
# tree: raises ValueError: `argnums` cannot contain `DiffState` objects
# why: `self.count += 1` (a plain jax array attribute) runs under `nnx.grad(loss_fn, argnums=nnx.DiffState(0,
# why: is_param))`. Tree Mode never runs the body: it rejects the DiffState at that same call (flagged there as
# why: NNX202). Nor is the drop what a fix would meet: `count` is an int array, so differentiating the whole
# why: model (`argnums=0`) raises TypeError. The drop happens only with a float count and no DiffState
# why: (checked: graph 2, Tree Mode 0), which this program is not.
import jax
import jax.numpy as jnp
from flax import nnx


class Linear(nnx.Module):
  def __init__(self, din, dout, *, rngs):
    self.w = jax.random.normal(rngs.params(), (din, dout))
    self.b = jnp.zeros((dout,))

  def __call__(self, x):
    return x @ self.w + self.b


class MLP(nnx.Module):
  def __init__(self, din, dhidden, dout, *, rngs):
    self.count = jnp.array(0)
    self.linear1 = Linear(din, dhidden, rngs=rngs)
    self.linear2 = Linear(dhidden, dout, rngs=rngs)

  def __call__(self, x):
    self.count += 1
    return self.linear2(nnx.relu(self.linear1(x)))


def is_param(path, value):
  key = path[-1]
  return key == 'w' or key == 'b'


model = MLP(din=1, dhidden=8, dout=1, rngs=nnx.Rngs(0))


@nnx.jit
def train_step(model, batch):
  x, y = batch

  def loss_fn(model):
    return jnp.mean((y - model(x)) ** 2)

  diff_state = nnx.DiffState(0, is_param)
  grads = nnx.grad(loss_fn, argnums=diff_state)(model)
  return grads


batch = (jnp.ones((4, 1)), jnp.zeros((4, 1)))
train_step(model, batch)
train_step(model, batch)
print('count', int(model.count))
