"""Dotted flax / jax / optax names, grouped by what the analysis uses them for (the flax table).

Rules and the analysis never spell a dotted library name themselves: they name one of these
constants (rules through :mod:`nnx_lint.api`). ``tests/test_flax_table.py`` resolves every name
here against the installed flax, jax and optax (:data:`OLDER_RELEASE_NAMES` aside), and fails on
a dotted name written as a string constant anywhere else in ``nnx_lint/`` or ``checkers/``.

Short ``flax.nnx`` names (``"vmap"``, ``"Param"``) and the per-transform facts live in
:mod:`nnx_lint.flax_table.nnx_api` and :mod:`nnx_lint.flax_table.signatures`.
"""
from __future__ import annotations

# -- Namespaces (prefixes of qualified names) ----------------------------------------------------
#: Anything of ``flax.nnx`` (``nnx_api.NNX`` plus the dot).
NNX_PREFIX = "flax.nnx."
#: The graph-mode partials of ``nnx.compat``.
COMPAT_PREFIX = "flax.nnx.compat."
#: The Linen bridge (``nnx.bridge.Module``, ``nnx.bridge.ToNNX``, ...).
BRIDGE_PACKAGE = "flax.nnx.bridge"
#: JAX itself (``jax.vmap`` is the JAX counterpart of ``nnx.vmap``).
JAX_PREFIX = "jax."


def jax_counterpart(short_name: str) -> str:
    """JAX's function of the same name as the NNX one (``grad`` -> ``jax.grad``): the other branch
    a name may be bound to where the rules take the NNX branch (a conditional, alternative
    assignments, a test's cases)."""
    return JAX_PREFIX + short_name

#: Libraries whose names are never project code (a qualified name there is not loaded as a file).
LIBRARY_PREFIXES = ("flax.", "jax.")
#: Libraries the object-flow model never reads as project code: their values are library objects.
NOT_PROJECT_PREFIXES = LIBRARY_PREFIXES + ("numpy.", "builtins.", "optax.")
#: An ``Rngs`` stream's class (``rngs.params``): it belongs to the Rngs that holds it.
NNX_RNG_STREAM = "flax.nnx.RngStream"
#: NumPy's namespaces: array constructors and dtypes.
NUMPY_MODULES = ("jax.numpy.", "numpy.")
#: Modules whose functions build or return arrays, never NNX objects.
ARRAY_FUNCTION_MODULES = NUMPY_MODULES + ("jax.random.", "jax.lax.", "jax.nn.")
#: Modules whose names are dtypes (``jnp.float32``, ``ml_dtypes.bfloat16``).
DTYPE_MODULES = NUMPY_MODULES + ("ml_dtypes.",)
#: dtype names of those modules (the scalar types, which JAX also rejects as leaves).
DTYPE_NAMES = frozenset("""
    bfloat16 bool_ complex64 complex128 float16 float32 float64 float8_e4m3fn float8_e5m2 int4 int8
    int16 int32 int64 uint4 uint8 uint16 uint32 uint64
""".split())
#: Qualified-name prefixes of classes that are never a differentiated Module: RNG objects,
#: JAX and NumPy types.
NEVER_MODULE_PREFIXES = ("flax.nnx.Rngs", "jax.", "numpy.")

# -- Mode -----------------------------------------------------------------------------------------
#: ``flax.config.update("nnx_graph_mode", ...)``: sets the process-wide mode flags
#: (keys: ``nnx_api.MODE_CONFIG_KEYS``).
FLAX_CONFIG_UPDATE = "flax.config.update"

# -- NNX classes ----------------------------------------------------------------------------------
#: Bases that make a class an NNX Module (or pytree object).
NNX_MODULE_BASES = frozenset({"flax.nnx.Module", "flax.nnx.Object", "flax.nnx.Pytree"})
#: Generic bases: an annotation with one of these says "some Module", no more.
GENERIC_MODULE_CLASSES = frozenset({"flax.nnx.Module", "flax.nnx.Pytree"})
#: The graph-mode-only base (``nnx.Object`` subclasses are not pytrees).
NNX_OBJECT = "flax.nnx.Object"
#: The optimizer classes, which nnx APIs take as graph nodes.
OPTIMIZER_QUALIFIED = frozenset({"flax.nnx.Optimizer", "flax.nnx.ModelAndOptimizer"})
#: The State class graph-mode transforms return (``nnx.GraphState`` is another class).
NNX_STATE = "flax.nnx.State"
#: flax's container Modules that index like a dict / a list.
NNX_DICT = "flax.nnx.Dict"
NNX_LIST = "flax.nnx.List"
#: ``nnx.data(value)`` marks a value as data; ``nnx.Data`` does the same as an annotation.
NNX_DATA = "flax.nnx.data"
NNX_DATA_ANNOTATION = "flax.nnx.Data"
#: Variable types that ``sow`` / ``perturb`` write during the call.
SOWN_VARIABLE_TYPES = frozenset({"flax.nnx.Intermediate", "flax.nnx.Perturbation"})
#: The Variable type of ``Module.perturb``.
NNX_PERTURBATION = "flax.nnx.Perturbation"
#: The key sharding metadata is stored under (``nnx.PARTITION_NAME``).
NNX_PARTITION_NAME = "flax.nnx.PARTITION_NAME"
#: The Linen-to-NNX wrapper class, by both its spellings.
BRIDGE_WRAPPERS = frozenset({"flax.nnx.bridge.ToNNX", "flax.nnx.bridge.wrappers.ToNNX"})
#: The bridge's Module base class, by both its spellings: its subclasses are not pytrees.
BRIDGE_MODULES = frozenset({"flax.nnx.bridge.Module", "flax.nnx.bridge.module.Module"})
#: ``nnx.bridge.lazy_init(module, ...)``: initialises a bridge wrapper in place.
BRIDGE_LAZY_INIT = "flax.nnx.bridge.lazy_init"

# -- NNX functions --------------------------------------------------------------------------------
#: APIs that read a graph's state into an ``nnx.State``.
STATE_READERS = frozenset({"flax.nnx.state", "flax.nnx.variables"})
#: ``nnx.split(node)`` -> ``(GraphDef, State, ...)``.
NNX_SPLIT = "flax.nnx.split"
#: ``nnx.merge(graphdef, state)`` -> a new graph node of the split class.
NNX_MERGE = "flax.nnx.merge"
#: ``nnx.clone(node)``: a copy of the same class.
NNX_CLONE = "flax.nnx.clone"
#: ``nnx.to_pure_dict(state)``.
NNX_TO_PURE_DICT = "flax.nnx.to_pure_dict"
#: ``nnx.restore_rngs(backups)``: undoes ``nnx.split_rngs``.
NNX_RESTORE_RNGS = "flax.nnx.restore_rngs"
#: The graph-mode partials that raise in every mode (vjp / jvp with graph updates).
UNSUPPORTED_COMPAT = frozenset({"flax.nnx.compat.vjp", "flax.nnx.compat.jvp"})
#: Copies of a tree with its Variables converted (``ref=True``, ``hijax=True``).
REF_VARIABLE_MAKERS = frozenset({"flax.nnx.with_vars", "flax.nnx.vars_as"})
#: ``nnx.var_defaults(...)``: the context that sets what ``with_vars`` converts to.
NNX_VAR_DEFAULTS = "flax.nnx.var_defaults"
#: Calls whose result has the class of one argument (its position).
CLASS_PRESERVING_CALLS: dict[str, int] = {
    "flax.nnx.clone": 0, "flax.nnx.compat.clone": 0,
    "flax.nnx.fori_loop": 3, "flax.nnx.compat.fori_loop": 3,
    "flax.nnx.while_loop": 2, "flax.nnx.compat.while_loop": 2,
    "flax.nnx.view": 0, "flax.nnx.compat.view": 0,
    "flax.nnx.with_vars": 0, "flax.nnx.vars_as": 0,
}
#: Functions that need a ``State`` / Mapping argument: name -> the position of that argument
#: (None: any position; ``"rest"``: any after the first, as ``nnx.update(model, state)``).
NNX_STATE_FUNCTIONS: dict[str, int | str | None] = {
    "flax.nnx.to_pure_dict": 0,
    "flax.nnx.to_flat_state": 0,
    "flax.nnx.filter_state": 0,
    "flax.nnx.split_state": 0,
    "flax.nnx.replace_by_pure_dict": 0,
    "flax.nnx.merge_state": None,
    "flax.nnx.traversals.flatten_mapping": 0,
    "flax.traversals.flatten_mapping": 0,
    "flax.nnx.statelib.to_flat_state": 0,
    "flax.nnx.update": "rest",
    "flax.nnx.merge": "rest",
}
#: Of :data:`NNX_STATE_FUNCTIONS`, those the reference runtime (``tree_runtime``) does not provide.
STATE_FUNCTIONS_NOT_IN_RUNTIME = frozenset({
    "flax.nnx.filter_state", "flax.nnx.replace_by_pure_dict", "flax.nnx.traversals.flatten_mapping",
    "flax.traversals.flatten_mapping", "flax.nnx.statelib.to_flat_state",
})

# -- JAX and optax tree functions -----------------------------------------------------------------
#: ``jax.tree.map(f, tree, *rest)`` by all its spellings.
TREE_MAPS = frozenset({"jax.tree.map", "jax.tree_util.tree_map", "jax.tree_map"})
#: The spelling of a tree map shown in facts and messages.
TREE_MAP = "jax.tree.map"
#: ``optax.apply_updates(params, updates)``: a tree map over two trees of the same structure.
OPTAX_APPLY_UPDATES = "optax.apply_updates"
#: Functions whose result has the structure of one argument (name -> its position).
STRUCTURE_KEEPING: dict[str, int] = {**dict.fromkeys(sorted(TREE_MAPS), 1), OPTAX_APPLY_UPDATES: 0}
#: JAX loops whose body gets the carry: name -> (body position, initial value position, carry
#: parameter position in the body).
JAX_LOOPS: dict[str, tuple[int, int, int]] = {
    "jax.lax.scan": (0, 1, 0), "jax.lax.fori_loop": (2, 3, 1), "jax.lax.while_loop": (1, 2, 0),
}
#: ``linspace(start, stop, num)``: with ``start == stop`` every element is that number (the object
#: model evaluates a guard's computed argument with it, ``nnx_lint.analysis.objects.numbers``).
LINSPACES = frozenset({"numpy.linspace", "jax.numpy.linspace"})
#: Global norms of a tree: they change only when a leaf's value is non-zero.
TREE_NORMS = frozenset({"optax.global_norm", "optax.tree_utils.tree_l2_norm", "optax.tree_utils.tree_norm",
                        "optax.tree.norm"})
#: ``jax.tree.reduce(f, tree, initializer)``.
TREE_REDUCES = frozenset({"jax.tree.reduce", "jax.tree_util.tree_reduce"})
#: ``jax.tree.flatten(tree)``.
TREE_FLATTENS = frozenset({"jax.tree.flatten", "jax.tree_util.tree_flatten"})
#: ``jax.tree.leaves(tree)``.
TREE_LEAVES = frozenset({"jax.tree.leaves", "jax.tree_util.tree_leaves", "jax.tree_leaves"})
#: ``ravel_pytree(tree)``: one flat vector of every leaf.
RAVEL_PYTREE = "jax.flatten_util.ravel_pytree"
#: Consumers that reduce over every leaf of a tree (name -> the position of the tree).
WHOLE_TREE_CONSUMERS: dict[str, int] = {
    **dict.fromkeys(sorted(TREE_NORMS | TREE_LEAVES | TREE_FLATTENS | {RAVEL_PYTREE}), 0),
    **dict.fromkeys(sorted(TREE_REDUCES), 1),
}
#: Of those, the ones whose result changes only when a leaf is non-zero (norms, reductions).
NORM_CONSUMERS = TREE_NORMS | TREE_REDUCES
#: The norm a reproduction uses when a finding names none.
DEFAULT_NORM = "optax.global_norm"

# -- Raw mutable array refs -----------------------------------------------------------------------
#: Calls that make a raw mutable array ref (``jax.experimental.mutable_array`` before jax 0.7).
MUTABLE_ARRAY_CONSTRUCTORS = frozenset({"jax.new_ref", "jax.ref.new_ref", "jax.experimental.mutable_array"})
#: The type of those refs, as annotations name it (``def f(m: jax.Ref)``).
MUTABLE_ARRAY_TYPES = frozenset({"jax.Ref", "jax.ref.Ref"})

#: Spellings kept for older releases only (today's flax / jax no longer have them): the table
#: test does not resolve these.
OLDER_RELEASE_NAMES = frozenset({
    "flax.experimental.nnx", "jax.tree_map", "jax.tree_leaves", "jax.experimental.mutable_array",
    "flax.traversals.flatten_mapping",
})
