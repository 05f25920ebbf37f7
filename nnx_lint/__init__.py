"""nnx-lint: find Flax NNX code that breaks or silently changes meaning under Tree Mode.

The linter core depends on astroid only; it never imports flax or jax, and never
executes the code it checks.
"""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
