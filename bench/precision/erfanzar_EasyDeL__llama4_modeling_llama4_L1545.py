# finding: NNX105 erfanzar+EasyDeL easydel/modules/llama4/modeling_llama4.py:1545
# message: `Llama4VisionEncoderLayer` stores the same Rngs (`rngs`) at `self.self_attn.rngs` and `self.mlp.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: Llama4VisionEncoderLayer builds `self.self_attn = Llama4VisionAttention(..., rngs=rngs)` and
# why: `self.mlp = Llama4VisionMLP(..., rngs=rngs)`. Llama4VisionAttention (an AttentionModule) stores `self.rngs = rngs`
# why: after `super().__init__(config=config)`; Llama4VisionMLP (an nn.Module) stores `self.rngs = rngs` too.
# why: Every Llama4ForConditionalGeneration builds them (vision_model -> Llama4VisionEncoder's nn.List of layers), and
# why: EasyDeL splits every model (`graphtree_shape`, `parameters`).
import jax.numpy as jnp
from flax import nnx


class AttentionModule(nnx.Module):
  def __init__(self, config):
    self.config = config


class Llama4VisionAttention(AttentionModule):
  def __init__(self, config, *, rngs, layer_idx):
    super().__init__(config=config)
    self.layer_idx = layer_idx
    self.rngs = rngs
    self.q_proj = nnx.Linear(4, 4, rngs=rngs)


class Llama4VisionMLP(nnx.Module):
  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    self.fc1 = nnx.Linear(4, 8, rngs=rngs)
    self.fc2 = nnx.Linear(8, 4, rngs=rngs)


class Llama4VisionEncoderLayer(nnx.Module):
  def __init__(self, config, *, rngs, layer_idx):
    self.config = config
    self.layer_idx = layer_idx
    self.self_attn = Llama4VisionAttention(config=config, rngs=rngs, layer_idx=layer_idx)
    self.mlp = Llama4VisionMLP(config=config, rngs=rngs)
    self.input_layernorm = nnx.LayerNorm(4, rngs=rngs)


class Llama4VisionEncoder(nnx.Module):
  def __init__(self, config, *, rngs):
    self.layers = nnx.List([Llama4VisionEncoderLayer(config=config, layer_idx=i, rngs=rngs) for i in range(2)])


encoder = Llama4VisionEncoder(config={}, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(encoder)  # EasyDeL's `graphtree_shape` / `parameters` after construction
print('split ok')
