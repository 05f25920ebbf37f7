# finding: NNX105 erfanzar+EasyDeL easydel/modules/whisper/modeling_whisper.py:2018
# message: `WhisperForAudioClassification` stores the same Rngs (`rngs`) at `self.rngs` and `self.encoder.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: EasyDeLBaseModule.__init__ (easydel/infra/base_module.py) stores `self.rngs = rngs`; WhisperForAudioClassification calls it,
# why: then builds `self.encoder` with the same `rngs`; WhisperEncoder is an EasyDeLBaseModule too, so its __init__ stores the same Rngs at `.rngs`.
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


class WhisperEncoder(EasyDeLBaseModule):
  def __init__(self, config, *, rngs):
    super().__init__(config=config, rngs=rngs)
    self.norm = nnx.LayerNorm(4, rngs=rngs)


class WhisperForAudioClassification(EasyDeLBaseModule):
  def __init__(self, config, *, rngs):
    super().__init__(config=config, rngs=rngs)
    self.encoder = WhisperEncoder(config=config, rngs=rngs)


model = WhisperForAudioClassification(config={}, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(model)  # EasyDeL's `graphtree_shape` / `parameters` after construction
print('split ok')
