"""The flax table as the rules read it: one namespace, ``nnx_lint.api.flax_table``.

A rule learns what flax is (which names are transforms, graph APIs, Variable types, tree
functions, what a layer holds, which errors only graph mode raises) only from here, as
``flax_table.TREE_MAP`` and the like; each name is documented, and tested against the
installed flax, in the table module that defines it (:mod:`~nnx_lint.flax_table.nnx_api`:
short ``flax.nnx`` names by role; :mod:`~nnx_lint.flax_table.names`: dotted flax / jax / optax
names; :mod:`~nnx_lint.flax_table.signatures`: transforms by role;
:mod:`~nnx_lint.flax_table.static_arguments`, :mod:`~nnx_lint.flax_table.graph_errors`,
:mod:`~nnx_lint.flax_table.flax_layers`). Nothing is defined here but ``VARIABLE_TYPES``, the
qualified names of every Variable type.
"""
from __future__ import annotations

from nnx_lint.flax_table.nnx_api import (
    ALIAS_CHECKING_GRAPH_APIS,
    CONTAINER_MODULES,
    CONTAINER_NAMES,
    GRAD_TRANSFORMS,
    GRAPHDEF_MERGES,
    GRAPH_APIS,
    GRAPH_USE_APIS,
    MODE_SETTERS,
    MODE_SWITCH_METHODS,
    MODULE_CLASSES,
    MODULE_USE_APIS,
    MODULE_WALKS,
    NNX,
    ONE_LEVEL_APIS,
    OPTIMIZER_CLASSES,
    POSITIONAL_ARGUMENT_TRANSFORMS,
    PREFIX_KEYWORDS,
    RNG_OBJECTS,
    SPLITS,
    STATE_CLASSES,
    STATE_METHODS,
    STATE_PRODUCERS,
    TRANSFORMS,
    VARIABLE_VALUE_ATTRIBUTES,
    WALKING_METHODS,
)
from nnx_lint.flax_table.signatures import (
    ALIAS_CHECKING_WITHOUT_UPDATES,
    AXES_TRANSFORMS,
    BRANCH_TRANSFORMS,
    CARRY_LOOPS,
    CARRY_TRANSFORMS,
    MAPPING_TRANSFORMS,
    METADATA_TRANSFORMS,
    NEW_CARRY_IN_GRAPH_MODE,
    RNG_SPLITTING_TRANSFORMS,
)
from nnx_lint.flax_table.names import (
    BRIDGE_LAZY_INIT,
    BRIDGE_MODULES,
    BRIDGE_PACKAGE,
    BRIDGE_WRAPPERS,
    DEFAULT_NORM,
    DTYPE_MODULES,
    DTYPE_NAMES,
    FLAX_CONFIG_UPDATE,
    NEVER_MODULE_PREFIXES,
    NNX_CLONE,
    NNX_DICT,
    NNX_LIST,
    NNX_MERGE,
    NNX_MODULE_BASES,
    NNX_OBJECT,
    NNX_PARTITION_NAME,
    NNX_PERTURBATION,
    NNX_PREFIX,
    NNX_RESTORE_RNGS,
    NNX_SPLIT,
    NNX_STATE,
    NNX_STATE_FUNCTIONS,
    NNX_TO_PURE_DICT,
    NNX_VAR_DEFAULTS,
    NORM_CONSUMERS,
    OPTAX_APPLY_UPDATES,
    OPTIMIZER_QUALIFIED,
    RAVEL_PYTREE,
    REF_VARIABLE_MAKERS,
    SOWN_VARIABLE_TYPES,
    STATE_FUNCTIONS_NOT_IN_RUNTIME,
    STATE_READERS,
    TREE_FLATTENS,
    TREE_MAP,
    TREE_MAPS,
    TREE_REDUCES,
    UNSUPPORTED_COMPAT,
    WHOLE_TREE_CONSUMERS,
)
from nnx_lint.flax_table.static_arguments import (
    LAYER_BOOL_FLAGS,
    RNG_SHAPE_POSITIONS,
    TABULATE_OPTIONS,
)
from nnx_lint.flax_table.graph_errors import (
    GRAPH_ONLY_ERRORS,
    GraphOnlyError,
)
from nnx_lint.flax_table.flax_layers import (
    FLAX_LAYERS,
)
from nnx_lint.flax_table.nnx_api import qualified, variable_types

#: Qualified names (``flax.nnx.Param``) of every Variable type.
VARIABLE_TYPES = qualified(variable_types())

__all__ = [
    "NNX", "TRANSFORMS", "GRAD_TRANSFORMS", "GRAPH_APIS", "ALIAS_CHECKING_GRAPH_APIS", "PREFIX_KEYWORDS",
    "MODE_SETTERS", "SPLITS", "WALKING_METHODS", "MODE_SWITCH_METHODS", "POSITIONAL_ARGUMENT_TRANSFORMS",
    "STATE_METHODS", "STATE_PRODUCERS", "MODULE_CLASSES", "CONTAINER_MODULES", "STATE_CLASSES", "OPTIMIZER_CLASSES",
    "CONTAINER_NAMES", "GRAPH_USE_APIS", "MODULE_USE_APIS", "GRAPHDEF_MERGES", "ONE_LEVEL_APIS", "MODULE_WALKS",
    "RNG_OBJECTS", "VARIABLE_VALUE_ATTRIBUTES", "RNG_SPLITTING_TRANSFORMS", "MAPPING_TRANSFORMS", "AXES_TRANSFORMS",
    "METADATA_TRANSFORMS", "BRANCH_TRANSFORMS", "CARRY_LOOPS", "CARRY_TRANSFORMS", "NEW_CARRY_IN_GRAPH_MODE",
    "ALIAS_CHECKING_WITHOUT_UPDATES", "NNX_PREFIX",
    "BRIDGE_PACKAGE", "BRIDGE_MODULES", "DTYPE_MODULES", "DTYPE_NAMES", "NEVER_MODULE_PREFIXES", "FLAX_CONFIG_UPDATE",
    "NNX_MODULE_BASES", "NNX_OBJECT", "OPTIMIZER_QUALIFIED", "NNX_STATE", "NNX_DICT", "NNX_LIST",
    "SOWN_VARIABLE_TYPES", "NNX_PERTURBATION", "NNX_PARTITION_NAME", "BRIDGE_WRAPPERS", "STATE_READERS", "NNX_SPLIT",
    "NNX_MERGE", "NNX_CLONE", "NNX_TO_PURE_DICT", "NNX_RESTORE_RNGS", "UNSUPPORTED_COMPAT", "REF_VARIABLE_MAKERS",
    "NNX_VAR_DEFAULTS", "BRIDGE_LAZY_INIT", "NNX_STATE_FUNCTIONS", "STATE_FUNCTIONS_NOT_IN_RUNTIME", "TREE_MAPS",
    "TREE_MAP", "OPTAX_APPLY_UPDATES", "WHOLE_TREE_CONSUMERS", "NORM_CONSUMERS", "TREE_REDUCES", "TREE_FLATTENS",
    "RAVEL_PYTREE", "DEFAULT_NORM", "RNG_SHAPE_POSITIONS", "LAYER_BOOL_FLAGS", "TABULATE_OPTIONS",
    "GRAPH_ONLY_ERRORS", "GraphOnlyError", "FLAX_LAYERS", "VARIABLE_TYPES",
]
