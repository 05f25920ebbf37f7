# finding: NNX105 erfanzar+EasyDeL easydel/modules/llava/modeling_llava.py:215
# message: `LlavaModel` stores the same Rngs (`rngs`) at `self.rngs` and `self.multi_modal_projector.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: EasyDeLBaseModule.__init__ (easydel/infra/base_module.py) stores `self.rngs = rngs`; LlavaModel calls it,
# why: then builds `self.multi_modal_projector` with the same `rngs`; LlavaMultiModalProjector (an nn.Module) stores `self.rngs = rngs` in its own __init__.
# why: EasyDeL splits every model (`graphtree_shape`, `parameters`): Tree Mode rejects the Rngs reached at two paths.
import jax.numpy as jnp
from flax import nnx


class EasyDeLBaseModule(nnx.Module):
  """easydel/infra/base_module.py: the base of every model stores the Rngs it is given."""

  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    # base_module.py reads `self.graphtree_shape` here: nn.eval_shape(lambda: nn.split(self)[1])
    nnx.eval_shape(lambda: nnx.split(self)[1])


class LlavaMultiModalProjector(nnx.Module):
  def __init__(self, config, *, rngs):
    self.linear = nnx.Linear(4, 4, rngs=rngs)
    self.rngs = rngs


class LlavaModel(EasyDeLBaseModule):
  def __init__(self, config, *, rngs):
    super().__init__(config=config, rngs=rngs)
    self.multi_modal_projector = LlavaMultiModalProjector(config=config, rngs=rngs)


model = LlavaModel(config={}, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(model)  # EasyDeL's `graphtree_shape` / `parameters` after construction
print('split ok')
