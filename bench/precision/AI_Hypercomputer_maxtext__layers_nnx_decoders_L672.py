# finding: NNX105 AI-Hypercomputer+maxtext src/maxtext/layers/nnx_decoders.py:672
# message: `NNXDecoder` stores the same Rngs (`rngs`) at `self.rngs` and `self.layers_remainder.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: NNXDecoder.__init__ stores `self.rngs = rngs`; with scanned Gemma3 layers (`decoder_block: gemma3`,
# why: `scan_layers: True`, a shipped configuration) `_init_scanned_gemma3` builds
# why: `self.layers_remainder = Gemma3ScannableBlock(..., rngs=rngs)`, which stores `self.rngs = rngs`.
import jax.numpy as jnp
from flax import nnx


class Gemma3ScannableBlock(nnx.Module):
  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    self.kernel = nnx.Linear(4, 4, rngs=rngs)


class NNXDecoder(nnx.Module):
  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    self._init_scanned_gemma3(rngs)

  def _init_scanned_gemma3(self, rngs):
    self.layers_remainder = Gemma3ScannableBlock(config=self.config, rngs=rngs)


layer = NNXDecoder(config={}, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(layer)  # maxtext: NNXDecoder._apply_layer_with_remat, nnx_wrappers' nnx.state(module)
print('split ok')
