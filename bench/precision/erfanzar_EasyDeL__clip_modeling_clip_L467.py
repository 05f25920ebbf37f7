# finding: NNX105 erfanzar+EasyDeL easydel/modules/clip/modeling_clip.py:467
# message: `CLIPEncoderLayer` stores the same Rngs (`rngs`) at `self.rngs` and `self.self_attn.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: CLIPEncoderLayer (an nn.Module) stores `self.rngs = rngs`, then builds `self.self_attn = CLIPAttention(..., rngs=rngs)`;
# why: CLIPAttention (an AttentionModule) stores `self.rngs = rngs` after `super().__init__(config=config)`.
# why: CLIPEncoder builds one layer per hidden layer, and EasyDeL splits every model (`graphtree_shape`, `parameters`).
import jax.numpy as jnp
from flax import nnx


class AttentionModule(nnx.Module):
  def __init__(self, config):
    self.config = config


class CLIPAttention(AttentionModule):
  def __init__(self, config, *, rngs):
    super().__init__(config=config)
    self.rngs = rngs
    self.q_proj = nnx.Linear(4, 4, rngs=rngs)


class CLIPEncoderLayer(nnx.Module):
  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    self.self_attn = CLIPAttention(config=config, rngs=rngs)
    self.layer_norm1 = nnx.LayerNorm(4, rngs=rngs)


class CLIPEncoder(nnx.Module):
  def __init__(self, config, *, rngs):
    self.layers = nnx.List([CLIPEncoderLayer(config=config, rngs=rngs) for _ in range(2)])


encoder = CLIPEncoder(config={}, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(encoder)  # EasyDeL's `graphtree_shape` / `parameters` after construction
print('split ok')
