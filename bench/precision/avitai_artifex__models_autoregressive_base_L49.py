# finding: NNX105 avitai+artifex src/artifex/generative_models/models/autoregressive/base.py:49
# message: `AutoregressiveModel` stores the same Rngs (`rngs`) at `self.rngs` and `self._rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: GenerativeModule.__init__ (core/base.py:122) stores `self.rngs = rngs`; AutoregressiveModel then keeps
# why: `self._rngs = rngs` "for later use". Artifex's trainers split and transform these models.
import jax
import jax.numpy as jnp
from flax import nnx


class GenerativeModule(nnx.Module):
  def __init__(self, *, rngs, precision=None):
    super().__init__()
    self.rngs = rngs
    self.precision = precision


class GenerativeModel(GenerativeModule):
  def __init__(self, *, rngs, precision=None):
    super().__init__(rngs=rngs, precision=precision)


class AutoregressiveModel(GenerativeModel):
  def __init__(self, vocab_size, sequence_length, *, rngs, precision=None):
    super().__init__(rngs=rngs, precision=precision)
    self.vocab_size = vocab_size
    self.sequence_length = sequence_length
    if rngs is not None:
      self._rngs = rngs
    else:
      self._rngs = nnx.Rngs(params=jax.random.key(0))
    self.embed = nnx.Embed(vocab_size, 4, rngs=rngs)


model = AutoregressiveModel(16, 8, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(model)
print('split ok')
