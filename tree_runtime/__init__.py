"""tree_runtime: a reference implementation of Flax NNX Tree Mode (FLIP 5310)
on plain JAX, with the public names of ``flax.nnx``.

One program text runs unchanged with ``import tree_runtime as nnx`` and with
``from flax import nnx`` in Tree Mode (``nnx.set_graph_mode(False)``,
``nnx.set_graph_updates(False)``).  It never imports flax.

>>> import tree_runtime as nnx, jax.numpy as jnp
>>> model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
>>> @nnx.jit
... def step(m, x):
...   m.bias[...] += 1.0
...   return m(x)
>>> _ = step(model, jnp.ones((1, 2))); model.bias[...].tolist()
[1.0]
"""

from __future__ import annotations

from ._core import set_graph_mode, set_graph_updates
from ._custom_vjp import custom_vjp
from ._errors import (
    AliasingError,
    CarryIdentityError,
    CustomVjpUpdateError,
    CycleError,
    GraphModeNotSupportedError,
    NonPytreeModuleError,
    PrefixFilterError,
    TraceContextError,
    TreeModeError,
    error_category,
)
from ._filters import All, Any, Everything, Not, Nothing, OfType, PathContains, WithTag
from ._graph import (
    GraphDef,
    clone,
    find_duplicates,
    graphdef,
    iter_graph,
    map,
    merge,
    pop,
    prefix,
    recursive_map,
    split,
    state,
    to_flat_state,
    update,
    variables,
    view,
)
from ._layers import (
    PARTITION_NAME,
    BatchNorm,
    Dropout,
    Embed,
    LayerNorm,
    Linear,
    gelu,
    initializers,
    log_softmax,
    one_hot,
    relu,
    sigmoid,
    silu,
    softmax,
    swish,
    tanh,
)
from ._module import Dict, List, Module, Sequential, capture, iter_modules
from ._optimizer import ModelAndOptimizer, Optimizer
from ._prefix_filters import DiffState, StateAxes, StateSharding
from ._pytree import Pytree, data, is_data, static
from ._rngs import Rngs, RngStream, split_rngs
from ._state import State, filter_state, merge_state, replace_by_pure_dict, split_state, to_pure_dict
from ._transforms import (
    Carry,
    cond,
    eval_shape,
    fori_loop,
    grad,
    jit,
    remat,
    scan,
    switch,
    transform_metadata,
    value_and_grad,
    vmap,
    while_loop,
)
from ._variables import (
    BatchStat,
    Cache,
    Intermediate,
    OptArray,
    OptState,
    OptVariable,
    Param,
    Perturbation,
    RngCount,
    RngKey,
    RngState,
    Variable,
    VariableMetadata,
    with_metadata,
    with_partitioning,
)

# Names that exist only in tree_runtime (flax.nnx has no equivalent).
RUNTIME_ONLY = (
    "AliasingError", "CarryIdentityError", "CustomVjpUpdateError", "CycleError", "GraphModeNotSupportedError",
    "NonPytreeModuleError", "PrefixFilterError", "TraceContextError", "TreeModeError", "error_category", "RUNTIME_ONLY",
)

__all__ = sorted(name for name in dir() if not name.startswith("_") and name not in ("annotations",))
