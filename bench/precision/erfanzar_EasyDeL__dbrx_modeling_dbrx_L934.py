# finding: NNX105 erfanzar+EasyDeL easydel/modules/dbrx/modeling_dbrx.py:934
# message: `DbrxBlock` stores the same Rngs (`rngs`) at `self.rngs` and `self.ffn.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: DbrxBlock stores `self.rngs = rngs` and builds DbrxFFN, which stores `self.rngs = rngs`.
import jax.numpy as jnp
from flax import nnx


class EasyDeLBaseModule(nnx.Module):
  """easydel/infra/base_module.py: the base of every model stores the Rngs it is given."""

  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    # base_module.py reads `self.graphtree_shape` here: nn.eval_shape(lambda: nn.split(self)[1])
    nnx.eval_shape(lambda: nnx.split(self)[1])


class DbrxFFN(nnx.Module):
  """A plain nnx.Module that stores its Rngs itself (`self.rngs = rngs`)."""

  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    self.proj = nnx.Linear(4, 4, rngs=rngs)


class DbrxBlock(nnx.Module):
  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    self.ffn = DbrxFFN(config=config, rngs=rngs)


model = DbrxBlock(config={}, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(model)  # EasyDeL's `graphtree_shape` / `parameters` after construction
print('split ok')
