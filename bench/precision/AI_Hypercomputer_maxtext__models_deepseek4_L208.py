# finding: NNX105 AI-Hypercomputer+maxtext src/maxtext/models/deepseek4.py:208
# message: `DeepSeek4ScannableBlock` stores the same Rngs (`self.rngs`) at `self.rngs` and `self.layers_1.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: DeepSeek4ScannableBlock stores `self.rngs = rngs` (deepseek4.py:194) and builds `self.layers_0` and `self.layers_1`,
# why: two DeepSeek4DecoderLayer, with `rngs=self.rngs`; DeepSeek4DecoderLayer calls DeepSeekGenericLayer.__init__,
# why: which stores `self.rngs = rngs` (deepseek.py:74). One Rngs at three paths.
import jax.numpy as jnp
from flax import nnx


class DeepSeekGenericLayer(nnx.Module):
  def __init__(self, config, model_mode, mesh, rngs, quant=None, layer_idx=-1):
    self.config = config
    self.model_mode = model_mode
    self.rngs = rngs
    self.layer_idx = layer_idx


class DeepSeek4DecoderLayer(DeepSeekGenericLayer):
  def __init__(self, config, model_mode, mesh, rngs, quant=None, layer_idx=-1, compress_ratio=None, is_hash_routing=None):
    super().__init__(config=config, model_mode=model_mode, mesh=mesh, rngs=rngs, quant=quant, layer_idx=layer_idx)
    self.compress_ratio = compress_ratio
    self.kernel = nnx.Linear(4, 4, rngs=rngs)


class DeepSeek4ScannableBlock(nnx.Module):
  def __init__(self, config, mesh, model_mode, rngs, quant=None):
    self.config = config
    self.mesh = mesh
    self.model_mode = model_mode
    self.quant = quant
    self.rngs = rngs
    self.layers_0 = DeepSeek4DecoderLayer(
        config=self.config, mesh=self.mesh, model_mode=self.model_mode, rngs=self.rngs, quant=self.quant,
        compress_ratio=128, is_hash_routing=False,
    )
    self.layers_1 = DeepSeek4DecoderLayer(
        config=self.config, mesh=self.mesh, model_mode=self.model_mode, rngs=self.rngs, quant=self.quant,
        compress_ratio=4, is_hash_routing=False,
    )


block = DeepSeek4ScannableBlock(config={}, mesh=None, model_mode='train', rngs=nnx.Rngs(0))
graphdef, state = nnx.split(block)  # maxtext: the scanned blocks go through nnx.split / nnx.state (nnx_decoders)
print('split ok')
