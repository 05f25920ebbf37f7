# finding: NNX105 erfanzar+EasyDeL easydel/modules/deepseek_v3/modeling_deepseek.py:779
# message: `DeepseekV3DecoderLayer` stores the same Rngs (`rngs`) at `self.rngs` and `self.mlp.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: DeepseekV3DecoderLayer stores `self.rngs = rngs`; `self.mlp = DeepseekV3MoE(...)` (the MoE branch of a
# why: conditional expression, taken for MoE layers) stores `self.rngs = rngs` after BaseMoeModule.__init__.
import jax.numpy as jnp
from flax import nnx


class EasyDeLBaseModule(nnx.Module):
  """easydel/infra/base_module.py: the base of every model stores the Rngs it is given."""

  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    # base_module.py reads `self.graphtree_shape` here: nn.eval_shape(lambda: nn.split(self)[1])
    nnx.eval_shape(lambda: nnx.split(self)[1])


class DeepseekV3MoE(nnx.Module):
  """A plain nnx.Module that stores its Rngs itself (`self.rngs = rngs`)."""

  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    self.proj = nnx.Linear(4, 4, rngs=rngs)


class DeepseekV3DecoderLayer(nnx.Module):
  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    self.mlp = DeepseekV3MoE(config=config, rngs=rngs)


model = DeepseekV3DecoderLayer(config={}, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(model)  # EasyDeL's `graphtree_shape` / `parameters` after construction
print('split ok')
