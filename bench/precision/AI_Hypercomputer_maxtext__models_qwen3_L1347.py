# finding: NNX105 AI-Hypercomputer+maxtext src/maxtext/models/qwen3.py:1347
# message: `Qwen3NextDecoderLayer` stores the same Rngs (`rngs`) at `self.attention.attention.rngs` and `self.mlp.routed_experts.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: On a full-attention layer (every `inhomogeneous_layer_cycle_interval`-th), `self.attention =
# why: Qwen3NextFullAttention(rngs=rngs)` holds `attentions.Attention(rngs=rngs)` (stores `self.rngs`), and
# why: `self.mlp = Qwen3NextSparseMoeBlock(rngs=rngs)` holds `moe.RoutedMoE(rngs=rngs)` (stores `self.rngs`).
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


class Qwen3NextFullAttention(nnx.Module):
  def __init__(self, config, *, rngs):
    self.attention = Attention(config=config, rngs=rngs)


class Qwen3NextSparseMoeBlock(nnx.Module):
  def __init__(self, config, *, rngs):
    self.routed_experts = RoutedMoE(config=config, rngs=rngs)


class Qwen3NextDecoderLayer(nnx.Module):
  def __init__(self, config, *, rngs, is_full_attention_layer=True):
    self.config = config
    self.input_layernorm = nnx.RMSNorm(4, rngs=rngs)
    if is_full_attention_layer:
      self.attention = Qwen3NextFullAttention(config=config, rngs=rngs)
    self.mlp = Qwen3NextSparseMoeBlock(config=config, rngs=rngs)


layer = Qwen3NextDecoderLayer(config={}, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(layer)  # maxtext: NNXDecoder._apply_layer_with_remat, nnx_wrappers' nnx.state(module)
print('split ok')
