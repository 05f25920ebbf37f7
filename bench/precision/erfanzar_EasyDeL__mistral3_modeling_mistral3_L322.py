# finding: NNX105 erfanzar+EasyDeL easydel/modules/mistral3/modeling_mistral3.py:322
# message: `Mistral3Model` stores the same Rngs (`rngs`) at `self.rngs` and `self.multi_modal_projector.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: Mistral3Model (EasyDeLBaseModule) stores `self.rngs`; Mistral3MultiModalProjector (nn.Module) stores
# why: `self.rngs = rngs` itself.
import jax.numpy as jnp
from flax import nnx


class EasyDeLBaseModule(nnx.Module):
  """easydel/infra/base_module.py: the base of every model stores the Rngs it is given."""

  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    # base_module.py reads `self.graphtree_shape` here: nn.eval_shape(lambda: nn.split(self)[1])
    nnx.eval_shape(lambda: nnx.split(self)[1])


class Mistral3MultiModalProjector(nnx.Module):
  """A plain nnx.Module that stores its Rngs itself (`self.rngs = rngs`)."""

  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    self.proj = nnx.Linear(4, 4, rngs=rngs)


class Mistral3Model(EasyDeLBaseModule):
  def __init__(self, config, *, rngs):
    super().__init__(config=config, rngs=rngs)
    self.multi_modal_projector = Mistral3MultiModalProjector(config=config, rngs=rngs)


model = Mistral3Model(config={}, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(model)  # EasyDeL's `graphtree_shape` / `parameters` after construction
print('split ok')
