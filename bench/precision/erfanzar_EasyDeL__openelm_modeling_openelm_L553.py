# finding: NNX105 erfanzar+EasyDeL easydel/modules/openelm/modeling_openelm.py:553
# message: `OpenELMDecoderLayer` stores the same Rngs (`rngs`) at `self.rngs` and `self.ffn.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: OpenELMDecoderLayer (nn.Module) stores `self.rngs = rngs` and builds OpenELMFeedForwardNetwork, which
# why: stores `self.rngs = rngs` too. The layer lives in an EasyDeL model that EasyDeL splits.
import jax.numpy as jnp
from flax import nnx


class EasyDeLBaseModule(nnx.Module):
  """easydel/infra/base_module.py: the base of every model stores the Rngs it is given."""

  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    # base_module.py reads `self.graphtree_shape` here: nn.eval_shape(lambda: nn.split(self)[1])
    nnx.eval_shape(lambda: nnx.split(self)[1])


class OpenELMFeedForwardNetwork(nnx.Module):
  """A plain nnx.Module that stores its Rngs itself (`self.rngs = rngs`)."""

  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    self.proj = nnx.Linear(4, 4, rngs=rngs)


class OpenELMDecoderLayer(nnx.Module):
  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    self.ffn = OpenELMFeedForwardNetwork(config=config, rngs=rngs)


model = OpenELMDecoderLayer(config={}, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(model)  # EasyDeL's `graphtree_shape` / `parameters` after construction
print('split ok')
