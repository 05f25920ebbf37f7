# finding: NNX105 AI-Hypercomputer+maxtext src/maxtext/models/mixtral.py:108
# message: `MixtralDecoderLayer` stores the same Rngs (`self.rngs`) at `self.rngs` and `self.MoeBlock_0.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: MixtralDecoderLayer stores `self.rngs = rngs` and builds `self.MoeBlock_0 = moe.RoutedMoE(..., rngs=self.rngs)`;
# why: RoutedMoE.__init__ stores `self.rngs = rngs` (moe.py:439).
import jax.numpy as jnp
from flax import nnx


class RoutedMoE(nnx.Module):
  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    self.kernel = nnx.Linear(4, 4, rngs=rngs)


class MixtralDecoderLayer(nnx.Module):
  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    self.MoeBlock_0 = RoutedMoE(config=self.config, rngs=self.rngs)


layer = MixtralDecoderLayer(config={}, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(layer)  # maxtext: NNXDecoder._apply_layer_with_remat, nnx_wrappers' nnx.state(module)
print('split ok')
