# finding: NNX105 erfanzar+EasyDeL easydel/modules/glm4v/modeling_glm4v.py:1463
# message: `Glm4vModel` stores the same Rngs (`rngs`) at `self.rngs` and `self.language_model.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: EasyDeLBaseModule.__init__ (easydel/infra/base_module.py) stores `self.rngs = rngs`; Glm4vModel calls it,
# why: then builds `self.language_model` with the same `rngs`; Glm4vTextModel is an EasyDeLBaseModule too, so its __init__ stores the same Rngs at `.rngs`.
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


class Glm4vTextModel(EasyDeLBaseModule):
  def __init__(self, config, *, rngs):
    super().__init__(config=config, rngs=rngs)
    self.norm = nnx.LayerNorm(4, rngs=rngs)


class Glm4vModel(EasyDeLBaseModule):
  def __init__(self, config, *, rngs):
    super().__init__(config=config, rngs=rngs)
    self.language_model = Glm4vTextModel(config=config, rngs=rngs)


model = Glm4vModel(config={}, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(model)  # EasyDeL's `graphtree_shape` / `parameters` after construction
print('split ok')
