"""NNX2xx is ignored here by per-file-ignores; other rules still run."""
from functools import partial

from flax import nnx

axes = nnx.StateAxes({nnx.Param: 0})


@partial(nnx.vmap, in_axes=(axes, None))
def forward(model, x):
    return model(x)


@nnx.vmap(in_axes=0, out_axes=0, transform_metadata={nnx.PARTITION_NAME: "layers"})
def create(rngs):
    return nnx.Linear(2, 2, rngs=rngs)
