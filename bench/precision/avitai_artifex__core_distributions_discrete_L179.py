# finding: NNX105 avitai+artifex src/artifex/generative_models/core/distributions/discrete.py:179
# message: `OneHotCategorical` stores the same Rngs (`rngs`) at `self._rngs` and `self.categorical._rngs`: Tree Mode raises ValueError
# verdict: latent
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: Distribution.__init__ stores `self._rngs = rngs`, and OneHotCategorical passes the same `rngs` to its
# why: inner Categorical. But `rngs` defaults to None and no caller in the project passes one (the tests build
# why: `OneHotCategorical(probs=...)`, `(logits=...)`, `(num_classes=3)`): then both hold None and nothing is
# why: shared. This program passes an Rngs, the reachable input under which the message holds.
import jax.numpy as jnp
from flax import nnx


class Distribution(nnx.Module):
  def __init__(self, *, rngs=None):
    super().__init__()
    self._rngs = rngs


class Categorical(Distribution):
  def __init__(self, probs=None, logits=None, num_classes=None, *, rngs=None):
    super().__init__(rngs=rngs)
    self.logits = nnx.Param(jnp.log(probs) if probs is not None else logits)
    self.num_classes = num_classes


class OneHotCategorical(Distribution):
  def __init__(self, probs=None, logits=None, num_classes=None, *, rngs=None):
    super().__init__(rngs=rngs)
    self.num_classes = num_classes
    self.categorical = Categorical(probs=probs, logits=logits, num_classes=num_classes, rngs=rngs)


dist = OneHotCategorical(probs=jnp.array([0.2, 0.3, 0.5]), rngs=nnx.Rngs(0))
graphdef, state = nnx.split(dist)
print('split ok')
