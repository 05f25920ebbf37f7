# finding: NNX105 avitai+artifex src/artifex/generative_models/models/backbones/unet.py:208
# message: `DownBlock` stores the same Rngs (`rngs`) at `self.rngs` and `self.block2.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: DownBlock and ConvBlock are GenerativeModules, whose __init__ (core/base.py:122) stores `self.rngs = rngs`.
# why: DownBlock calls it with its `rngs`, then builds `self.block1` and `self.block2 = ConvBlock(..., rngs=rngs)`,
# why: each storing the same Rngs again. UNet builds its down path of DownBlocks; artifex's trainers split and
# why: transform these models.
import jax.numpy as jnp
from flax import nnx


class GenerativeModule(nnx.Module):
  def __init__(self, *, rngs, precision=None):
    super().__init__()
    self.rngs = rngs
    self.precision = nnx.Variable(precision) if precision is not None else None


class ConvBlock(GenerativeModule):
  def __init__(self, in_channels, out_channels, time_embedding_dim=None, *, rngs):
    super().__init__(rngs=rngs)
    self.conv1 = nnx.Conv(in_channels, out_channels, kernel_size=(3, 3), rngs=rngs)


class DownBlock(GenerativeModule):
  def __init__(self, in_channels, out_channels, time_embedding_dim=None, *, rngs):
    super().__init__(rngs=rngs)
    self.block1 = ConvBlock(in_channels, out_channels, time_embedding_dim, rngs=rngs)
    self.block2 = ConvBlock(out_channels, out_channels, time_embedding_dim, rngs=rngs)
    self.downsample = nnx.Conv(out_channels, out_channels, kernel_size=(3, 3), strides=(2, 2), padding=1, rngs=rngs)


block = DownBlock(2, 4, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(block)
print('split ok')
