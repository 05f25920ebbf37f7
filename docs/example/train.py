"""A small graph-mode NNX training script, as many repositories have one today."""
from functools import partial

import jax.numpy as jnp
import optax
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, din, dout, *, rngs: nnx.Rngs):
        self.linear = nnx.Linear(din, dout, rngs=rngs)
        self.bn = nnx.BatchNorm(dout, rngs=rngs)

    def __call__(self, x):
        return nnx.relu(self.bn(self.linear(x)))


@nnx.vmap(in_axes=0, out_axes=0, transform_metadata={nnx.PARTITION_NAME: "layers"})
def create_ensemble(rngs):
    return MLP(4, 4, rngs=rngs)


ensemble_axes = nnx.StateAxes({nnx.Param: 0, nnx.BatchStat: None})


@partial(nnx.vmap, in_axes=(ensemble_axes, None))
def ensemble_forward(model, x):
    return model(x)


only_kernels = nnx.DiffState(0, nnx.PathContains("kernel"))


@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return jnp.mean((ensemble_forward(model, x) - y) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn, argnums=only_kernels)(model)
    optimizer.update(model, grads)
    return loss


def main():
    model = create_ensemble(nnx.Rngs(0).split(3))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    x, y = jnp.ones((8, 4)), jnp.zeros((3, 8, 4))
    for _ in range(10):
        train_step(model, optimizer, x, y)
