"""Base types: diagnostics, bounds, lines, escaping, confined writes, caches' storage, program text, noqa,
the fix kinds a rule declares.

The bottom layer: these modules import no other layer of nnx_lint (the ``core-layers``
contract in ``pyproject.toml``).
"""
