"""Tiny models for the gate fixture project."""
from __future__ import annotations

from flax import nnx


class Block(nnx.Module):
    """One linear layer."""

    def __init__(self, rngs: nnx.Rngs):
        self.linear = nnx.Linear(2, 2, rngs=rngs)

    def __call__(self, x):
        return self.linear(x)


def vmapped_forward(block: Block, x):
    """Run ``block`` over a batch with its Params broadcast."""
    state_axes = nnx.StateAxes({nnx.Param: None})

    @nnx.vmap(in_axes=(state_axes, 0))
    def forward(block, x):
        return block(x)

    return forward(block, x)


def attach_alias(block: Block, name: str) -> Block:
    """Give ``block`` a second name, chosen at run time, for its linear layer."""
    setattr(block, name, block.linear)
    return block


def double(x):
    """A function the pollution test replaces and does not restore."""
    return 2 * x


class TiedBlocks(nnx.Module):
    """Two layers sharing one kernel: the most common Tree Mode break (NNX101)."""

    def __init__(self, rngs: nnx.Rngs):
        self.a = nnx.Linear(2, 2, rngs=rngs)
        self.b = nnx.Linear(2, 2, rngs=rngs)
        self.b.kernel = self.a.kernel


@nnx.jit
def tied_step(model: TiedBlocks, x):
    """Both layers, compiled: Tree Mode's jit refuses the shared kernel."""
    return model.b(model.a(x))
