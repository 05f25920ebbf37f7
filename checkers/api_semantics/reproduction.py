"""Reproduction builders and program pieces shared by several api semantics rules."""
from __future__ import annotations


FORK_NOTE = ("# found: nnx.fork_rngs; nnx.split_rngs has the same in-place (graph) / returned (Tree Mode)\n"
              "# semantics, and both implementations provide it\n")
