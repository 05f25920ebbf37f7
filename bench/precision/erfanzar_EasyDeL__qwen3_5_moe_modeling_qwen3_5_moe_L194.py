# finding: NNX105 erfanzar+EasyDeL easydel/modules/qwen3_5_moe/modeling_qwen3_5_moe.py:194
# message: `Qwen3_5MoeModel` stores the same Rngs (`rngs`) at `self.rngs` and `self.visual.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: Qwen3_5MoeModel extends Qwen3VLMoeModel, an EasyDeLBaseModule, whose __init__ (easydel/infra/base_module.py:284)
# why: stores `self.rngs = rngs`. After `super().__init__(..., rngs=rngs)` it rebuilds `self.visual =
# why: Qwen3VLMoeVisionTransformerPretrainedModel(..., rngs=rngs)`, an EasyDeLBaseModule too, which stores the same Rngs.
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


class Qwen3VLMoeVisionTransformerPretrainedModel(EasyDeLBaseModule):
  def __init__(self, config, *, rngs):
    super().__init__(config=config, rngs=rngs)
    self.patch_embed = nnx.Linear(4, 4, rngs=rngs)


class Qwen3VLMoeModel(EasyDeLBaseModule):
  def __init__(self, config, *, rngs):
    super().__init__(config=config, rngs=rngs)


class Qwen3_5MoeModel(Qwen3VLMoeModel):
  def __init__(self, config, *, rngs):
    super().__init__(config=config, rngs=rngs)
    self.config = config
    self.visual = Qwen3VLMoeVisionTransformerPretrainedModel(config=config, rngs=rngs)
    self.language_model = nnx.Linear(4, 4, rngs=rngs)


model = Qwen3_5MoeModel(config={}, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(model)  # EasyDeL's `graphtree_shape` / `parameters` after construction
print('split ok')
