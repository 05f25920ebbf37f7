# finding: NNX105 AI-Hypercomputer+maxtext src/maxtext/models/gemma3.py:476
# message: `Encoder1DBlock` stores the same Rngs (`self.rngs`) at `self.rngs` and `self.MlpBlockViT_0.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: Encoder1DBlock stores `self.rngs = rngs` and builds `self.MlpBlockViT_0 = MlpBlockViT(..., rngs=self.rngs)`,
# why: which stores `self.rngs = rngs`.
import jax.numpy as jnp
from flax import nnx


class MlpBlockViT(nnx.Module):
  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    self.kernel = nnx.Linear(4, 4, rngs=rngs)


class Encoder1DBlock(nnx.Module):
  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    self.LayerNorm_0 = nnx.LayerNorm(4, rngs=self.rngs)
    self.MlpBlockViT_0 = MlpBlockViT(config=self.config, rngs=self.rngs)


layer = Encoder1DBlock(config={}, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(layer)  # maxtext: NNXDecoder._apply_layer_with_remat, nnx_wrappers' nnx.state(module)
print('split ok')
