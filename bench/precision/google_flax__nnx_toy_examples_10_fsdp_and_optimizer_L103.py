# finding: NNX403 google+flax examples/nnx_toy_examples/10_fsdp_and_optimizer.py:103
# message: `jax.tree.map(..., grads)` uses the `nnx.value_and_grad` result as an `nnx.State`: Tree Mode raises (it is a `MLP`)
# verdict: true
# graph: prints loss ok
# tree: raises ValueError: pytree structure error: different types
# why: train_step computes `loss, grad = nnx.value_and_grad(loss_fn)(model)` and calls `optimizer.update(grad)`;
# why: SGD.update maps `update_fn` over `self.params`, `self.momentum` (States) and `grads`. Graph mode's grad is a
# why: State; Tree Mode's is an MLP, whose tree structure differs from the States'.
# why: Two earlier breaks, each a finding of its own, stop the example in Tree Mode before this line: `create_model`
# why: under nnx.jit returns model and optimizer sharing Variables (NNX104 at line 116), and `train_step` takes both
# why: (NNX107 at line 154). So this program builds them without nnx.jit and runs train_step's body directly. The
# why: mesh and the out_sharding annotations are left out (they do not change the grads' type).
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx


class MLP(nnx.Module):
  def __init__(self, din, dmid, dout, rngs: nnx.Rngs):
    self.w1 = nnx.Param(nnx.initializers.lecun_normal()(rngs.params(), (din, dmid)))
    self.b1 = nnx.Param(jnp.zeros((dmid,)))
    self.w2 = nnx.Param(nnx.initializers.lecun_normal()(rngs.params(), (dmid, dout)))

  def __call__(self, x: jax.Array):
    return nnx.relu(x @ self.w1 + self.b1) @ self.w2


class SGDState(nnx.Variable):
  pass


class SGD(nnx.Pytree):
  def __init__(self, params: nnx.State, lr, decay=0.9):
    def init_optimizer_state(variable: nnx.Variable):
      return SGDState(jnp.zeros_like(variable[...]), **variable.get_metadata())

    self.lr = lr
    self.params = nnx.data(params)
    self.momentum: nnx.State = nnx.data(jax.tree.map(
      init_optimizer_state, self.params, is_leaf=lambda x: isinstance(x, nnx.Variable),
    ))
    self.decay = decay

  def update(self, grads: nnx.State):
    def update_fn(params: nnx.Variable, momentum: SGDState, grad: nnx.Variable):
      momentum[...] = self.decay * momentum[...] + (1 - self.decay) * grad[...]
      params[...] -= self.lr * momentum[...]

    jax.tree.map(
      update_fn, self.params, self.momentum, grads, is_leaf=lambda x: isinstance(x, nnx.Variable),
    )


model = MLP(1, 32, 1, rngs=nnx.Rngs(0))
optimizer = SGD(nnx.variables(model, nnx.Param), 0.01, decay=0.9)

X = np.linspace(-2, 2, 100)[:, None]
Y = 0.8 * X**2 + 0.1
x, y = X[:32], Y[:32]


def loss_fn(model):
  y_pred = model(x)
  return jnp.mean((y - y_pred) ** 2)


loss, grad = nnx.value_and_grad(loss_fn)(model)  # train_step's body, without its nnx.jit
optimizer.update(grad)
print('loss ok')
