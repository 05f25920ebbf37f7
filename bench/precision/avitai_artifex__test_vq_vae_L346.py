# finding: NNX301 avitai+artifex tests/artifex/generative_models/models/vae/test_vq_vae.py:346
# message: Rebinding container attribute `self._last_quantize_aux` under `nnx.jit` (vq_vae.py:102, reached through this call): Tree Mode silently drops it
# verdict: true
# graph: prints after jit: ['codebook_loss', 'encoding_indices']
# tree: prints after jit: []
# why: VQVAE.__init__ stores `self._last_quantize_aux = nnx.Dict({})` and `quantize` rebinds it to the aux dict
# why: ("for later use in __call__ and loss_fn"). The test calls `model.quantize` under `nnx.jit`: graph mode
# why: writes the new dict back to `vqvae`, Tree Mode keeps the empty nnx.Dict. (The test itself only reads the
# why: returned aux, so it passes in both modes; the program reads the attribute, as the comment says callers do.)
import jax
import jax.numpy as jnp
from flax import nnx


class VQVAE(nnx.Module):
  def __init__(self, *, rngs):
    self.embeddings = nnx.Embed(num_embeddings=8, features=4, rngs=rngs)
    self._last_quantize_aux = nnx.Dict({})

  def quantize(self, encoding):
    distances = jnp.sum((encoding[:, None, :] - self.embeddings.embedding[...][None]) ** 2, axis=-1)
    encoding_indices = jnp.argmin(distances, axis=-1)
    quantized = self.embeddings(encoding_indices)
    aux = {
        "codebook_loss": jnp.mean((quantized - jax.lax.stop_gradient(encoding)) ** 2),
        "encoding_indices": encoding_indices,
    }
    # Store auxiliary info for later use in __call__ and loss_fn
    self._last_quantize_aux = aux
    return encoding + jax.lax.stop_gradient(quantized - encoding), aux


vqvae = VQVAE(rngs=nnx.Rngs(0))
embeddings = jnp.ones((2, 4))


@nnx.jit
def quantize_fn(model, embeddings):
  return model.quantize(embeddings)


quantized, aux = quantize_fn(vqvae, embeddings)
print('after jit:', sorted(vqvae._last_quantize_aux.keys()))
