# finding: NNX105 AI-Hypercomputer+maxtext src/maxtext/models/qwen3.py:1604
# message: `Qwen3MoeDecoderLayer` stores the same Rngs (`rngs`) at `self.self_attention.rngs` and `self.moe_block.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: Qwen3MoeDecoderLayer calls AttentionWithNorm.__init__, which builds `self.self_attention = Attention(..., rngs=rngs)`;
# why: attentions.Attention stores `self.rngs = rngs` (attentions.py:425). It then builds
# why: `self.moe_block = RoutedMoE(..., rngs=rngs)`, and moe.RoutedMoE stores `self.rngs = rngs` (moe.py:439).
import jax.numpy as jnp
from flax import nnx


class Attention(nnx.Module):
  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    self.query = nnx.Linear(4, 4, rngs=rngs)


class RoutedMoE(nnx.Module):
  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    self.kernel = nnx.Linear(4, 4, rngs=rngs)


class AttentionWithNorm(nnx.Module):
  def __init__(self, config, mesh, model_mode, quant, rngs):
    self.config = config
    self.pre_self_attention_layer_norm = nnx.RMSNorm(4, rngs=rngs)
    self.self_attention = Attention(config=config, rngs=rngs)


class Qwen3MoeDecoderLayer(AttentionWithNorm):
  def __init__(self, config, mesh, model_mode, quant, rngs):
    super().__init__(config, mesh, model_mode, quant, rngs)
    self.moe_block = RoutedMoE(config=config, rngs=rngs)


layer = Qwen3MoeDecoderLayer(config={}, mesh=None, model_mode='train', quant=None, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(layer)  # maxtext: NNXDecoder._apply_layer_with_remat, nnx_wrappers' nnx.state(module)
print('split ok')
