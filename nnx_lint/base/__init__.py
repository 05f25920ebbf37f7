"""Base types: diagnostics, bounds, lines, escaping, confined writes, caches' storage, program text, noqa.

The bottom layer: these modules import no other layer of nnx_lint (the ``core-layers``
contract in ``pyproject.toml``).
"""
