"""One object flow, three families: `rngs = rngs or self.rngs` hands the Model's Rngs to `Noise`.

The object-flow model's one answer, that `Noise.source` holds the Rngs `Model` stores, makes
NNX105 (shared references: one Rngs at `.rngs` and `.noise.source`), NNX401 (grad semantics:
`Noise` holds RNG state) and NNX711 (API semantics: `self.source.uniform(...)` is an Rngs
method, so tabulate traces its shape) fire. Run with flax 0.12.8: graph mode prints
`grad ok` and `tabulate ok`; Tree Mode (`NNX_GRAPH_MODE=false NNX_GRAPH_UPDATES=false`) raises
TypeError in both (grad over uint32 RngCount; shapes must be concrete).
"""
import jax.numpy as jnp
from flax import nnx


class Noise(nnx.Module):
    def __init__(self, source):
        self.source = source

    def __call__(self, x):
        return x + self.source.uniform((x.shape[0], 2))


class Model(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.rngs = rngs
        self.noise = self.make_noise()

    def make_noise(self, rngs=None):
        rngs = rngs or self.rngs
        return Noise(rngs)


def loss_fn(noise, x):
    return noise(x).sum()


x = jnp.ones((4, 2))
try:
    grads = nnx.grad(loss_fn)(Model(nnx.Rngs(0)).noise, x)
    print("grad ok")
except TypeError as error:
    print("TypeError", str(error)[:60])
try:
    table = nnx.tabulate(Model(nnx.Rngs(0)).noise, x)
    print("tabulate ok")
except TypeError as error:
    print("TypeError", str(error)[:60])
