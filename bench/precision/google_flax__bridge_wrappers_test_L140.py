# finding: NNX301 google+flax tests/nnx/bridge/wrappers_test.py:140
# message: First call (lazy init) of `nnx.bridge.ToNNX` `inner(x)` under `nnx.vmap`: Tree Mode silently drops it
# verdict: true
# graph: prints kernel (5, 4, 3) bias (5, 3)
# tree: raises AttributeError: 'ToNNX' object has no attribute 'kernel'
# why: test_linen_to_nnx_transform as flax writes it: `nnx.bridge.lazy_init(model, x)` runs `vmap_fn(self.inner, x)`,
# why: the first call of the ToNNX wrapper, under nnx.vmap. The lazy init creates the Dense's Params as new
# why: attributes of `inner`; graph mode writes them back, Tree Mode drops them, so `inner.kernel` does not exist.
import jax
import flax.linen as nn
from flax import nnx


class NNXOuter(nnx.Module):
  def __init__(self, dout: int, rngs: nnx.Rngs):
    self.inner = nnx.bridge.ToNNX(nn.Dense(dout), rngs=rngs)
    self.rngs = rngs

  def __call__(self, x):

    @nnx.split_rngs(splits=5)
    @nnx.vmap(in_axes=(0, None), axis_size=5)
    def vmap_fn(inner, x):
      return inner(x)

    return vmap_fn(self.inner, x)


x = jax.random.normal(jax.random.key(0), (2, 4))
model = NNXOuter(3, rngs=nnx.Rngs(0))
nnx.bridge.lazy_init(model, x)
print('kernel', model.inner.kernel.shape, 'bias', model.inner.bias.shape)
