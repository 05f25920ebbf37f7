# finding: NNX105 erfanzar+EasyDeL easydel/modules/whisper/modeling_whisper.py:534
# message: `WhisperDecoderLayer` stores the same Rngs (`rngs`) at `self.self_attn.rngs` and `self.encoder_attn.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: WhisperDecoderLayer (nn.Module) builds two WhisperAttention (AttentionModule subclasses) with one
# why: `rngs`; WhisperAttention.__init__ stores `self.rngs = rngs` after `super().__init__(config=config)`.
# why: The layer sits in WhisperDecoder, an EasyDeLBaseModule that EasyDeL splits.
import jax.numpy as jnp
from flax import nnx


class AttentionModule(nnx.Module):
  """easydel/layers/attention/_flexible.py: the base keeps the config, no Rngs."""

  def __init__(self, config):
    self.config = config


class WhisperAttention(AttentionModule):
  def __init__(self, config, embed_dim, *, rngs):
    super().__init__(config=config)
    self.rngs = rngs
    self.q_proj = nnx.Linear(embed_dim, embed_dim, rngs=rngs)


class WhisperDecoderLayer(nnx.Module):
  def __init__(self, config, *, rngs):
    self.config = config
    self.embed_dim = 4
    self.self_attn = WhisperAttention(config=self.config, embed_dim=self.embed_dim, rngs=rngs)
    self.dropout_layer = nnx.Dropout(rate=0.1, rngs=rngs)
    self.encoder_attn = WhisperAttention(config=self.config, embed_dim=self.embed_dim, rngs=rngs)


layer = WhisperDecoderLayer(config={}, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(layer)  # EasyDeL splits the model that holds the layer
print('split ok')
