# finding: NNX711 google+flax tests/nnx/summary_test.py:331
# message: `nnx.tabulate` traces `(x.shape[0], 10)`, a shape in `Rngs.uniform` (line 327): Tree Mode raises TypeError
# verdict: true
# graph: prints tabulate ok
# tree: raises TypeError: Shapes must be 1D sequences of concrete values of integer type
# why: SummaryTest.test_tabulate_concrete_shape, verbatim: Net stores `self.rngs = nnx.Rngs(0)` and its __call__
# why: returns `self.rngs.uniform((x.shape[0], 10))`; `nnx.tabulate(net, x, ...)` keeps the shape concrete in graph
# why: mode, while in Tree Mode it reaches `uniform` as traced values. The test file has no graph-mode opt-in.
import jax.numpy as jnp
from flax import nnx


class Net(nnx.Module):
  def __init__(self):
    self.rngs = nnx.Rngs(0)

  def __call__(self, x):
    return self.rngs.uniform((x.shape[0], 10))


net = Net()
x = jnp.zeros((4, 8))
nnx.tabulate(net, x, console_kwargs={"width": 200})
print('tabulate ok')
