# finding: NNX105 jax-ml+bonsai bonsai/models/sam2/model_hiera_det.py:285
# message: `Hiera` stores the same Rngs (`rngs`) at `self.blocks[0].drop_path.rngs` and `self.blocks[1].drop_path.rngs`: Tree Mode raises ValueError
# verdict: false
# graph: prints split ok
# tree: prints split ok
# why: MultiScaleBlock stores `self.drop_path = DropPath(drop_prob=drop_path, rngs=rngs) if drop_path > 0.0
# why: else Identity()` (DropPath keeps `self.rngs = rngs`), and Hiera passes `drop_path=float(dpr[i])` with
# why: `dpr = np.linspace(0, drop_path_rate, depth)`. `dpr[0]` is always 0.0, so `blocks[0].drop_path` is always
# why: an Identity; and `drop_path_rate` defaults to 0.0, which the only caller (modeling.py:1321) keeps, so
# why: every block gets an Identity. No Rngs is stored twice. (Only with drop_path_rate > 0 would blocks[1:]
# why: share one Rngs, never blocks[0]; no caller passes it.)
import numpy as np
import jax.numpy as jnp
from flax import nnx


class Identity(nnx.Module):
  def __call__(self, x):
    return x


class DropPath(nnx.Module):
  def __init__(self, drop_prob, scale_by_keep=True, *, rngs):
    self.drop_prob = drop_prob
    self.dropout = nnx.Dropout(rate=self.drop_prob, deterministic=False, broadcast_dims=(1, 2, 3))
    self.scale_by_keep = scale_by_keep
    self.rngs = rngs


class MultiScaleBlock(nnx.Module):
  def __init__(self, dim, drop_path=0.0, *, rngs):
    self.norm1 = nnx.LayerNorm(dim, epsilon=1e-6, rngs=rngs)
    self.drop_path = DropPath(drop_prob=drop_path, rngs=rngs) if drop_path > 0.0 else Identity()


class Hiera(nnx.Module):
  def __init__(self, embed_dim=4, stages=(1, 2), drop_path_rate=0.0, *, rngs):
    depth = sum(stages)
    dpr = np.linspace(0, drop_path_rate, depth)
    self.blocks = nnx.List()  # bonsai writes `[]`: flax 0.12.8 rejects a plain list of Modules in both modes
    for i in range(depth):
      block = MultiScaleBlock(dim=embed_dim, drop_path=float(dpr[i]), rngs=rngs)
      self.blocks.append(block)


trunk = Hiera(embed_dim=4, stages=(1, 2), rngs=nnx.Rngs(0))  # modeling.py:1321 passes no drop_path_rate
graphdef, state = nnx.split(trunk)
print('split ok')
