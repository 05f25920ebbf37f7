# finding: NNX105 erfanzar+EasyDeL easydel/modules/qwen3_omni_moe/modeling_qwen3_omni_moe.py:4251
# message: `Qwen3OmniMoeThinkerForConditionalGeneration` stores the same Rngs (`rngs`) at `self.rngs` and `self.visual.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: The Thinker is a BaseVisionLanguageModule (-> BaseTaskModule -> EasyDeLBaseModule, which stores `self.rngs`);
# why: it builds `self.visual = Qwen3OmniMoeVisionEncoder(..., rngs=rngs)`, an EasyDeLBaseModule too. The task
# why: base classes between are left out: they only forward `rngs` to EasyDeLBaseModule.__init__.
import jax.numpy as jnp
from flax import nnx


class EasyDeLBaseModule(nnx.Module):
  """easydel/infra/base_module.py: the base of every model stores the Rngs it is given."""

  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    # base_module.py reads `self.graphtree_shape` here: nn.eval_shape(lambda: nn.split(self)[1])
    nnx.eval_shape(lambda: nnx.split(self)[1])


class Qwen3OmniMoeVisionEncoder(EasyDeLBaseModule):
  def __init__(self, config, *, rngs):
    super().__init__(config=config, rngs=rngs)
    self.norm = nnx.LayerNorm(4, rngs=rngs)


class Qwen3OmniMoeThinkerForConditionalGeneration(EasyDeLBaseModule):
  def __init__(self, config, *, rngs):
    super().__init__(config=config, rngs=rngs)
    self.visual = Qwen3OmniMoeVisionEncoder(config=config, rngs=rngs)


model = Qwen3OmniMoeThinkerForConditionalGeneration(config={}, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(model)  # EasyDeL's `graphtree_shape` / `parameters` after construction
print('split ok')
