# finding: NNX401 google+qwix integration_tests/vae_qat_test.py:116
# message: `nnx.value_and_grad` differentiates all of `model`, and `VAE` holds non-float state: Tree Mode raises TypeError
# verdict: true
# graph: prints loss ok
# tree: raises TypeError: grad requires real- or complex-valued inputs
# why: The VAE's Encoder keeps `self.rngs = rngs` (RngCount and RngKey Variables), and `nnx.value_and_grad(loss_fn)
# why: (model, x)` differentiates the whole model. (In the test, `train_step(model, optimizer, x)` also passes an
# why: nnx.ModelAndOptimizer beside the model it holds, which Tree Mode rejects at the `nnx.jit` call first, and
# why: nnx-lint does not report; this program runs the step's body, where the finding is.)
import jax
import jax.numpy as jnp
import optax
from flax import nnx


class Loss(nnx.Variable):
  pass


class Encoder(nnx.Module):
  def __init__(self, din, dmid, dout, *, rngs):
    self.linear1 = nnx.Linear(din, dmid, rngs=rngs)
    self.linear_mean = nnx.Linear(dmid, dout, rngs=rngs)
    self.linear_std = nnx.Linear(dmid, dout, rngs=rngs)
    self.rngs = rngs

  def __call__(self, x):
    x = jax.nn.relu(self.linear1(x.reshape((x.shape[0], -1))))
    mean = self.linear_mean(x)
    std = jnp.exp(self.linear_std(x))
    self.kl_loss = Loss(jnp.mean(0.5 * jnp.mean(-jnp.log(std**2) - 1.0 + std**2 + mean**2, axis=-1)))
    key = self.rngs.noise()
    return mean + std * jax.random.normal(key, mean.shape)


class VAE(nnx.Module):
  def __init__(self, din, hidden_size, latent_size, *, rngs):
    self.encoder = Encoder(din, hidden_size, latent_size, rngs=rngs)
    self.decoder = nnx.Linear(latent_size, din, rngs=rngs)

  def __call__(self, x):
    return self.decoder(self.encoder(x))


def loss_fn(model, x):
  logits = model(x)
  losses = nnx.pop(model, Loss)
  kl_loss = sum(jax.tree_util.tree_leaves(losses), 0.0)
  return jnp.mean(optax.sigmoid_binary_cross_entropy(logits, x)) + 0.1 * kl_loss


model = VAE(4, 8, 2, rngs=nnx.Rngs(0))
optimizer = nnx.ModelAndOptimizer(model, optax.adam(1e-3))
x = jnp.ones((2, 4))
loss, grads = nnx.value_and_grad(loss_fn)(model, x)  # train_step's body
optimizer.update(grads)
print('loss ok')
