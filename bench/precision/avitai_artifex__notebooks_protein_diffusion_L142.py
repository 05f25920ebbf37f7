# finding: NNX104 avitai+artifex notebooks/protein_diffusion.ipynb:142
# message: `nnx.jit`-transformed `train_step` returns `model`, (part of) its input `model`: Tree Mode raises ValueError
# verdict: latent
# graph: prints step ok
# tree: raises ValueError: Duplicate Param
# why: The notebook's `train_step` (code cell 25, `@nnx.jit(static_argnames=["diffusion"])`) takes `model` and
# why: `optimizer`, runs `nnx.value_and_grad(loss_fn)(model)` and `optimizer.update(grads)`, and returns
# why: `loss, model, optimizer, rng_key`: input Variables leave nnx.jit as outputs, which Tree Mode rejects. The same
# why: line has a second finding for `optimizer`; this program shows both (the model's Params come first).
# why: Latent: the notebook defines train_step but never calls it (its loop uses compute_grads_step, whose own
# why: `return loss, grads, model, rng_key` is a separate finding at line 80). This program calls it.
# why: Changed so that it runs with flax 0.12.8 at all: the notebook's `nnx.Optimizer(model, tx)` and
# why: `optimizer.update(grads)` are the pre-0.11 API, which 0.12.8 rejects in both modes; here `wrt=nnx.Param` and
# why: `optimizer.update(model, grads)`. The diffusion loss is reduced to a squared error with dropout.
import functools

import jax
import jax.numpy as jnp
import jax.random as jrandom
import optax
from flax import nnx


class ProteinDiffusionModel(nnx.Module):
  def __init__(self, rngs):
    self.linear = nnx.Linear(3, 3, rngs=rngs)
    self.dropout = nnx.Dropout(0.1)

  def __call__(self, x, t, mask, deterministic=False, rngs=None):
    return self.dropout(self.linear(x), deterministic=deterministic, rngs=rngs) * mask[..., None]


@functools.partial(nnx.jit, static_argnames=["diffusion"])
def train_step(model, optimizer, diffusion, batch, rng_key):
  x_start = batch["positions"]
  point_mask = batch["mask"]
  rng_key, timestep_key, noise_key, dropout_key = jrandom.split(rng_key, 4)
  t = jrandom.randint(timestep_key, (x_start.shape[0],), 0, diffusion, dtype=jnp.int32)
  noise = jrandom.normal(noise_key, shape=x_start.shape)

  def loss_fn(model):
    fn_rngs = nnx.Rngs(dropout=dropout_key)
    return jnp.mean((model(x_start + noise, t, point_mask, deterministic=False, rngs=fn_rngs) - noise) ** 2)

  loss, grads = nnx.value_and_grad(loss_fn)(model)
  optimizer.update(model, grads)
  return loss, model, optimizer, rng_key


model = ProteinDiffusionModel(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)
batch = {"positions": jnp.ones((2, 5, 3)), "mask": jnp.ones((2, 5))}
loss, model, optimizer, rng_key = train_step(model, optimizer, 1000, batch, jrandom.key(0))
print('step ok')
