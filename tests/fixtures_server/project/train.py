"""Training code that uses the models of another file."""
from functools import partial

import jax.numpy as jnp
from flax import nnx

from models import Counter, TiedLM

ensemble_axes = nnx.StateAxes({nnx.Param: 0, nnx.BatchStat: None})


@partial(nnx.vmap, in_axes=(ensemble_axes, None))
def forward(model, x):
    return model(x)


@nnx.jit
def step(model: Counter, x):
    model.steps += 1
    return model.linear(x)


@nnx.jit
def logits(model: TiedLM, tokens):
    return model(tokens)


def main():
    counter = Counter(rngs=nnx.Rngs(0))
    step(counter, jnp.ones((1, 2)))
    lm = TiedLM(10, 4, rngs=nnx.Rngs(1))
    logits(lm, jnp.zeros((1, 3), dtype=jnp.int32))
