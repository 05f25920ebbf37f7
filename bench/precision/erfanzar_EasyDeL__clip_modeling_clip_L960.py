# finding: NNX105 erfanzar+EasyDeL easydel/modules/clip/modeling_clip.py:960
# message: `CLIPTextModel` stores the same Rngs (`rngs`) at `self.rngs` and `self.text_model.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: EasyDeLBaseModule.__init__ stores `self.rngs = rngs`; CLIPTextModel calls it, then builds
# why: CLIPTextTransformer (also an EasyDeLBaseModule) with the same `rngs`. EasyDeL splits every model
# why: (`graphtree_shape`, `parameters`): Tree Mode rejects the Rngs reached at two paths.
import jax.numpy as jnp
from flax import nnx


class EasyDeLBaseModule(nnx.Module):
  """easydel/infra/base_module.py: the base of every model stores the Rngs it is given."""

  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs
    # base_module.py reads `self.graphtree_shape` here: nn.eval_shape(lambda: nn.split(self)[1])
    nnx.eval_shape(lambda: nnx.split(self)[1])


class CLIPTextTransformer(EasyDeLBaseModule):
  def __init__(self, config, *, rngs):
    super().__init__(config=config, rngs=rngs)
    self.final_layer_norm = nnx.LayerNorm(4, rngs=rngs)


class CLIPTextModel(EasyDeLBaseModule):
  def __init__(self, config, *, rngs):
    super().__init__(config=config, rngs=rngs)
    self.text_model = CLIPTextTransformer(config=config, rngs=rngs)


model = CLIPTextModel(config={}, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(model)  # EasyDeL's `graphtree_shape` / `parameters` after construction
print('split ok')
