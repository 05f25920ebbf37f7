# finding: NNX105 AI-Hypercomputer+maxtext src/maxtext/models/deepseek4.py:96
# message: `DeepSeek4DecoderLayer` stores the same Rngs (`rngs`) at `self.rngs` and `self.self_attention.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: DeepSeekGenericLayer.__init__ (deepseek.py:74) stores `self.rngs = rngs`; DeepSeek4DecoderLayer calls it, then
# why: builds `self.self_attention = CompressedAttention(..., rngs=rngs)`, an attentions.Attention, whose __init__
# why: stores `self.rngs = rngs` (attentions.py:425).
import jax.numpy as jnp
from flax import nnx


class Attention(nnx.Module):
  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    self.query = nnx.Linear(4, 4, rngs=rngs)


class CompressedAttention(Attention):
  pass


class DeepSeekGenericLayer(nnx.Module):
  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs


class DeepSeek4DecoderLayer(DeepSeekGenericLayer):
  def __init__(self, config, *, rngs):
    super().__init__(config=config, rngs=rngs)
    self.self_attention = CompressedAttention(config=self.config, rngs=rngs)


layer = DeepSeek4DecoderLayer(config={}, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(layer)  # maxtext: NNXDecoder._apply_layer_with_remat, nnx_wrappers' nnx.state(module)
print('split ok')
