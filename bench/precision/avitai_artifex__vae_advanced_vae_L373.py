# finding: NNX401 avitai+artifex examples/generative_models/image/vae/advanced_vae.py:373
# message: `nnx.value_and_grad` differentiates all of `model`, called with `BetaVAE` (call site line 433), which holds non-float state: Tree Mode raises TypeError
# verdict: true
# graph: prints total_loss ok
# tree: raises TypeError: grad requires real- or complex-valued inputs
# why: BetaVAE -> VAE -> GenerativeModel -> GenerativeModule, whose __init__ stores `self.rngs = rngs` (the model
# why: "uses its internal RNGs" for the reparameterisation). `train_step` takes `nnx.value_and_grad(loss_fn,
# why: has_aux=True)(model)` over the whole model, so Tree Mode's jax.grad sees the Rngs' uint32 count.
import jax
import jax.numpy as jnp
import optax
from flax import nnx


class GenerativeModule(nnx.Module):
  def __init__(self, *, rngs):
    super().__init__()
    self.rngs = rngs


class BetaVAE(GenerativeModule):
  def __init__(self, *, rngs, beta=4.0):
    super().__init__(rngs=rngs)
    self.encoder = nnx.Linear(4, 4, rngs=rngs)  # mean and log-variance, 2 each
    self.decoder = nnx.Linear(2, 4, rngs=rngs)
    self.beta = beta

  def __call__(self, x):
    h = self.encoder(x)
    mean, log_var = h[:, :2], h[:, 2:]
    z = mean + jnp.exp(0.5 * log_var) * jax.random.normal(self.rngs.sample(), mean.shape)
    return {'reconstructed': self.decoder(z), 'mean': mean, 'log_var': log_var}

  def loss_fn(self, x, outputs, step=0):
    recon = jnp.mean((outputs['reconstructed'] - x) ** 2)
    kl = -0.5 * jnp.mean(1 + outputs['log_var'] - outputs['mean'] ** 2 - jnp.exp(outputs['log_var']))
    return {'total_loss': recon + self.beta * kl, 'kl_loss': kl}


@nnx.jit
def train_step(model, optimizer, images, step):
  def loss_fn(model):
    outputs = model(images)
    losses = model.loss_fn(images, outputs, step=step)
    return losses['total_loss'], losses

  (_, losses), grads = nnx.value_and_grad(loss_fn, has_aux=True)(model)
  optimizer.update(model, grads)
  return losses


model = BetaVAE(rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
losses = train_step(model, optimizer, jnp.ones((2, 4)), 0)
print('total_loss ok')
