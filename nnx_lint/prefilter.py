"""The cheap text pre-filter that keeps astroid away from files no rule can match.

Every rule needs a name that resolves to ``flax.nnx``, and every spelling of such a name
in a file has ``nnx`` in its text: ``from flax import nnx``, ``import flax.nnx``,
``from flax.nnx import vmap``, ``flax.nnx.vmap``, ``from flax.experimental import nnx``,
and re-exports (``from .common import nnx``). A file without ``nnx`` (Linen-only code,
utilities) therefore never reaches astroid. The blind spot is shared by any text filter:
a project module re-exporting an NNX name under another name (``from mylib import
StateAxes``) into a file that never says ``nnx``.
"""
from __future__ import annotations


def mentions_nnx(data: bytes | str) -> bool:
    """Whether the file's text could contain a ``flax.nnx`` name (see the module docstring)."""
    return (b"nnx" if isinstance(data, bytes) else "nnx") in data
