"""The flax table: every flax name, layer, Variable type and transform signature nnx-lint knows.

Tested against the installed flax; imports nothing of nnx_lint but the base types.
"""
