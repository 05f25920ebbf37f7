"""The gate fixture suite: one test per outcome the gate must tell apart.

Tests run in file order; ``test_unpredicted_break`` must run before ``test_polluted``.
"""
from __future__ import annotations

import jax.numpy as jnp
from flax import nnx

import models


def test_predicted_break():
    """Breaks in Tree Mode; nnx-lint predicts it (NNX201 in models.vmapped_forward)."""
    y = models.vmapped_forward(models.Block(nnx.Rngs(0)), jnp.ones((3, 2)))
    assert y.shape == (3, 2)


def test_passes():
    """Passes in both modes; holds a silent finding (NNX304) that the gate lists as run without failing."""
    block = models.Block(nnx.Rngs(0))

    @nnx.jit
    def forward(block, x):
        block.eval()
        return block(x)

    assert forward(block, jnp.ones(2)).shape == (2,)


def test_fails_in_both_modes():
    """Fails in both modes: the expected shape is wrong."""
    block = models.Block(nnx.Rngs(0))
    assert block(jnp.ones(2)).shape == (3,)


def test_unpredicted_break():
    """Breaks in Tree Mode; the shared reference is made under a name known only at run time.

    It also pollutes: it replaces ``models.double`` and restores it only after the call
    that breaks in Tree Mode, so ``test_polluted`` fails after it in the Tree Mode run.
    """
    original = models.double
    models.double = lambda x: 3 * x
    block = models.attach_alias(models.Block(nnx.Rngs(0)), "shortcut")
    y = nnx.jit(lambda block, x: block(x))(block, jnp.ones(2))
    models.double = original
    assert y.shape == (2,)


def test_polluted():
    """Passes alone in both modes; fails in the full Tree Mode run after ``test_unpredicted_break``."""
    assert models.double(2) == 4


def test_tied_weights():
    """Breaks in Tree Mode far from the tie: flax names the paths `.args[0].a.kernel` and
    `.args[0].b.kernel`, which NNX101 in models.TiedBlocks names too."""
    assert models.tied_step(models.TiedBlocks(nnx.Rngs(0)), jnp.ones(2)).shape == (2,)
