"""A small graph-mode NNX training script, as many repositories have one today."""
from functools import partial

import jax.numpy as jnp
import optax
from flax import nnx


class TiedLM(nnx.Module):
    def __init__(self, vocab, dim, *, rngs: nnx.Rngs):
        self.embed = nnx.Embed(vocab, dim, rngs=rngs)
        self.head = nnx.Linear(dim, vocab, use_bias=False, rngs=rngs)
        self.head.kernel = self.embed.embedding  # tie input and output embeddings
        self.steps = 0

    def __call__(self, tokens):
        return self.head(self.embed(tokens))


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
def train_ensemble(model, optimizer, x, y):
    def loss_fn(model):
        return jnp.mean((ensemble_forward(model, x) - y) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn, argnums=only_kernels)(model)
    optimizer.update(model, grads)
    return loss


@nnx.jit
def train_lm(model: TiedLM, optimizer, tokens, targets):
    def loss_fn(model):
        logits = model(tokens)
        return optax.softmax_cross_entropy_with_integer_labels(logits, targets).mean()

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    model.steps += 1
    return loss


def main():
    ensemble = create_ensemble(nnx.Rngs(0).split(3))
    optimizer = nnx.Optimizer(ensemble, optax.adam(1e-3), wrt=nnx.Param)
    x, y = jnp.ones((8, 4)), jnp.zeros((3, 8, 4))
    for _ in range(10):
        train_ensemble(ensemble, optimizer, x, y)

    lm = TiedLM(100, 16, rngs=nnx.Rngs(1))
    lm_optimizer = nnx.Optimizer(lm, optax.adam(1e-3), wrt=nnx.Param)
    tokens = jnp.zeros((4, 8), dtype=jnp.int32)
    for _ in range(10):
        train_lm(lm, lm_optimizer, tokens, tokens)
