# finding: NNX105 erfanzar+EasyDeL easydel/modules/dbrx/modeling_dbrx.py:614
# message: `DbrxExperts` stores the same Rngs (`rngs`) at `self.rngs` and `self.mlp.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: DbrxExperts (an nn.Module) stores `self.rngs = rngs`, then builds `self.mlp = DbrxExpertGLU(..., rngs=rngs)`;
# why: DbrxExpertGLU (an nn.Module) stores `self.rngs = rngs` too (modeling_dbrx.py:509). Every DbrxFFN builds
# why: `self.experts = DbrxExperts(...)` (line 841), and EasyDeL splits every model (`graphtree_shape`, `parameters`).
import jax.numpy as jnp
from flax import nnx


class DbrxExpertGLU(nnx.Module):
  def __init__(self, config, *, rngs):
    super().__init__()
    self.config = config
    self.rngs = rngs
    self.w1 = nnx.Param(jnp.zeros((2, 4, 4)))


class DbrxExperts(nnx.Module):
  def __init__(self, config, *, rngs):
    super().__init__()
    self.config = config
    self.rngs = rngs
    self.mlp = DbrxExpertGLU(config=config, rngs=rngs)


class DbrxFFN(nnx.Module):
  def __init__(self, config, *, rngs):
    self.router = nnx.Linear(4, 2, rngs=rngs)
    self.experts = DbrxExperts(config=config, rngs=rngs)


ffn = DbrxFFN(config={}, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(ffn)  # EasyDeL's `graphtree_shape` / `parameters` after construction
print('split ok')
