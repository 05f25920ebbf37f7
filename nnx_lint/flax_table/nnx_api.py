"""What nnx-lint knows about the ``flax.nnx`` API, as data (no flax import): the flax table.

Every fact about flax that analysis needs lives here once: public and ``nnx.compat``
names, transforms and graph APIs, Variable types and what their values are, the
``Rngs`` objects, the layer classes that hold Variables, the mode setters and the
packages that are never "the project". ``tests/test_flax_table.py`` checks it against
the installed flax by introspection. (What each built-in layer stores, measured per
constructor argument, is :mod:`nnx_lint.flax_table.flax_layers`.)

Qualified names are canonical: ``flax.nnx.<public name>`` for anything reachable
from ``flax.nnx`` (whatever internal module defines it), ``flax.nnx.compat.<name>``
for the graph-mode partials of ``nnx.compat``.
"""
from __future__ import annotations

import re

NNX = "flax.nnx"
COMPAT = "flax.nnx.compat"

#: Every public name of ``flax.nnx`` 0.12.8 (``dir(nnx)`` without underscores).
PUBLIC_NAMES: frozenset[str] = frozenset(
    """
    A All Any BatchNorm BatchStat Bidirectional Cache Carry Conv ConvTranspose Data Dict
    DiffState Dropout EMA Einsum Embed Everything FlatState GRUCell GraphDef GraphState
    GroupNorm Initializer InstanceNorm Intermediate LSTMCell LayerNorm Linear LinearGeneral
    List LoRA LoRALinear LoRAParam M MergeContext Metric ModelAndOptimizer Module
    MultiHeadAttention MultiMetric NodeStates Not Nothing Object OfType OptArray OptState
    OptVariable OptimizedLSTMCell Optimizer PARTITION_NAME PReLU Param PathContains
    Perturbation PureState Pytree RMSNorm RNN RNNCellBase RngCount RngKey RngState RngStream
    Rngs Sequential SimpleCell SpectralNorm SplitContext State StateAxes StateSharding Static
    TrainState UpdateContext Variable VariableMetadata WeightNorm WithTag
    abstract_with_sharding as_abstract as_pure avg_pool bridge cached_partial call capture
    celu check_pytree checkify clone combine_masks compat cond current_update_context
    custom_vjp data dataclass deprecations display dot_product_attention elu eval_shape
    extract filter_state filterlib find_duplicates flatten fori_loop fork_rngs
    from_flat_state from_tree gelu get_abstract_model get_named_sharding get_partition_spec
    glu grad graph graphdef graphlib hard_sigmoid hard_silu hard_swish hard_tanh has_data
    helpers identity initializers is_data iter_children iter_graph iter_module_children
    iter_modules jit jit_partial jvp leaky_relu log_sigmoid log_softmax logical_axis_rules
    logsumexp make_attention_mask make_causal_mask make_jaxpr map map_state max_pool merge
    merge_context merge_state metrics min_pool module nn object one_hot optimizer pmap pool
    pop prefix proxy_caller pure pytreelib recursive_map register_data_type
    register_variable_name relu relu6 remat replace_by_pure_dict reprlib reseed
    restore_int_paths restore_rngs rnglib scan selu set_graph_mode set_graph_updates
    set_metadata shard_map sigmoid silu soft_sign softmax softplus split split_context
    split_rngs split_state spmd standardize state statelib static summary swish switch
    tabulate tanh to_flat_state to_pure_dict to_tree tracers training transform_metadata
    transforms traversals unflatten unpack update update_context use_eager_sharding
    using_eager_sharding value_and_grad var_defaults variable_name_from_type
    variable_type_from_name variablelib variables vars_as view view_info visualization vjp
    vmap while_loop with_attributes with_metadata with_partitioning with_rngs with_vars
    wrappers
    """.split()
)

#: The 34 names of ``nnx.compat`` (each a partial fixing graph=True[, graph_updates=True]).
COMPAT_NAMES: frozenset[str] = frozenset(
    """
    backup_keys cached_partial checkify clone cond custom_vjp eval_shape flatten fori_loop
    fork_rngs get_abstract_model grad graphdef iter_children iter_graph iter_modules jit jvp
    pmap recursive_map remat reseed scan shard_map split split_rngs state switch
    value_and_grad view view_info vjp vmap while_loop
    """.split()
)

#: NNX transforms: they take both ``graph=`` and ``graph_updates=`` and fix the mode
#: when the transform is created (decoration time).
TRANSFORMS: frozenset[str] = frozenset(
    """
    jit jit_partial shard_map grad value_and_grad custom_vjp vjp jvp remat vmap pmap scan
    while_loop fori_loop eval_shape cond switch checkify make_jaxpr cached_partial
    split_rngs fork_rngs with_rngs
    """.split()
)

#: The gradient transforms (of :data:`TRANSFORMS`): their result is a gradient of the
#: differentiated arguments (``value_and_grad`` with the value first), and they take ``argnums``
#: and ``has_aux``. The one spelling of this pair for every rule.
GRAD_TRANSFORMS: frozenset[str] = frozenset({"grad", "value_and_grad"})
#: NNX functions that bind a function's first arguments, as ``functools.partial`` does
#: (``nnx.jit_partial(f, model, optimizer)``): what they bind reaches ``f``'s first parameters.
BINDING_APIS: frozenset[str] = frozenset({"jit_partial", "cached_partial"})

#: Graph APIs: they take only ``graph=`` and read the mode at each call.
GRAPH_APIS: frozenset[str] = frozenset(
    """
    split state variables graphdef flatten unpack map clone iter_graph iter_children
    iter_module_children iter_modules recursive_map view view_info with_attributes prefix
    transform_metadata reseed get_abstract_model as_abstract abstract_with_sharding
    """.split()
)

#: Graph APIs whose graph node is not their first argument: ``nnx.map(f, node)``,
#: ``nnx.recursive_map(f, node)`` (every other graph API takes the node first).
GRAPH_API_NODE_POSITION: dict[str, int] = {"map": 1, "recursive_map": 1}

#: Graph APIs that, in Tree Mode, reject a Variable reachable twice in their argument
#: (measured with flax 0.12.8 on ``[v, v]`` and ``(m, m)``: ValueError "Duplicate Param";
#: ``to_tree`` and ``find_duplicates`` run).
ALIAS_CHECKING_GRAPH_APIS: frozenset[str] = frozenset(
    {"split", "state", "graphdef", "clone", "variables", "flatten", "iter_graph", "map", "recursive_map"}
)

#: Keyword arguments of NNX transforms that accept prefix trees (and so, in graph
#: mode, the prefix filters ``StateAxes`` / ``DiffState`` / ``StateSharding``).
PREFIX_KEYWORDS: frozenset[str] = frozenset(
    """
    in_axes out_axes argnums nondiff_argnums in_shardings out_shardings in_specs out_specs
    """.split()
)

#: Variable types of ``flax.nnx`` by what their values are: ``param`` (``Param`` and its
#: subclasses: what ``nnx.grad`` differentiates by default in graph mode), ``rng`` (the key
#: and count Variables ``Rngs`` streams store: never differentiable) and ``state``
#: (everything else; differentiable only when its value is a float array).
VARIABLE_TYPES: dict[str, str] = {
    "Param": "param", "LoRAParam": "param",
    "RngState": "rng", "RngKey": "rng", "RngCount": "rng",
    "Variable": "state", "BatchStat": "state", "Cache": "state", "Intermediate": "state",
    "Perturbation": "state", "OptState": "state", "OptArray": "state", "OptVariable": "state",
}

#: The objects that hand out random keys; each stream stores an ``RngKey`` and an ``RngCount``.
RNG_OBJECTS: frozenset[str] = frozenset({"Rngs", "RngStream"})

#: ``flax.nnx`` classes whose instances hold Variables (Modules and Pytrees that store state;
#: a ``MultiMetric`` holds its metrics).
MODULE_CLASSES: frozenset[str] = frozenset(
    """
    Module Linear LinearGeneral Einsum Embed Conv ConvTranspose LayerNorm RMSNorm BatchNorm
    GroupNorm InstanceNorm MultiHeadAttention LoRA LoRALinear WeightNorm SpectralNorm LSTMCell
    GRUCell OptimizedLSTMCell SimpleCell RNN Bidirectional PReLU Sequential List Dict Optimizer
    ModelAndOptimizer EMA MultiMetric
    """.split()
)

#: The optimizers: their first argument must be a Module (what they optimise).
OPTIMIZER_CLASSES: frozenset[str] = frozenset({"Optimizer", "ModelAndOptimizer"})
#: APIs and classes that take a Module as a graph node besides the graph APIs.
GRAPH_USE_APIS: frozenset[str] = OPTIMIZER_CLASSES | {"EMA", "tabulate"}
#: APIs whose use of an argument says it is a Module (a graph node they walk, split or update).
MODULE_USE_APIS: frozenset[str] = frozenset(
    {"state", "split", "update", "graphdef", "variables", "iter_graph", "iter_modules", "clone", "pop", "view"})
#: What builds a flax container from its arguments: the container Modules and ``nnx.data``.
CONTAINER_NAMES: frozenset[str] = frozenset({"List", "Sequential", "Dict", "data"})
#: Graph APIs whose result is a GraphDef, or (:data:`GRAPHDEF_FIRST`) starts with one.
GRAPHDEF_SOURCES: frozenset[str] = frozenset({"split", "graphdef", "flatten"})
GRAPHDEF_FIRST: frozenset[str] = frozenset({"split", "flatten"})
#: APIs that rebuild what a GraphDef describes.
GRAPHDEF_MERGES: frozenset[str] = frozenset({"merge", "unflatten"})
#: Graph APIs that walk only the first level of their argument (its children).
ONE_LEVEL_APIS: frozenset[str] = frozenset({"iter_children", "iter_module_children"})
#: Graph APIs whose walk yields every Module of a model.
MODULE_WALKS: frozenset[str] = frozenset({"iter_modules", "iter_graph"})
#: A Variable's attributes that are its value (``v.value = x`` writes the Variable, not the
#: graph: no graph update; both deprecated for ``v[...]`` in flax 0.12.8, and still the value).
VARIABLE_VALUE_ATTRIBUTES: frozenset[str] = frozenset({"value", "raw_value"})

#: Module methods that walk the graph as the graph API of the same name does (the deprecated
#: method form ``model.iter_modules()`` of ``nnx.iter_modules(model)``).
WALKING_METHODS: frozenset[str] = frozenset({"iter_modules"})
#: Module methods that set static attributes on every submodule (``deterministic``,
#: ``use_running_average``): in graph mode a change made under a transform reaches the caller.
MODE_SWITCH_METHODS: frozenset[str] = frozenset({"eval", "train", "set_attributes"})
#: Transforms that address the transformed function's arguments by position (``in_axes`` or
#: ``argnums``): an argument passed by keyword escapes the per-position spec.
POSITIONAL_ARGUMENT_TRANSFORMS: frozenset[str] = frozenset({"vmap", "pmap", "scan", "grad", "value_and_grad"})
#: ``nnx.State`` methods (a Module-typed gradient, Tree Mode's, has none of them).
STATE_METHODS: frozenset[str] = frozenset({
    "items", "keys", "values", "flat_state", "to_pure_dict", "replace_by_pure_dict", "filter",
    "split", "merge", "get", "raw_mapping",
})

#: ``flax.nnx.metrics`` classes: Pytrees of ``MetricState`` Variables (measured with flax 0.12.8:
#: ``Average`` and ``Accuracy`` hold ``total`` and ``count``, ``Welford`` ``count``, ``mean``, ``m2``).
METRIC_CLASSES: frozenset[str] = frozenset({"Average", "Accuracy", "Welford"})


def holds_variables(qualified_name: str) -> bool:
    """Whether an instance of the ``flax.nnx`` class ``qualified_name`` holds Variables."""
    module, _, name = qualified_name.rpartition(".")
    return module.startswith(NNX) and name in MODULE_CLASSES or (
        module in (f"{NNX}.metrics", f"{NNX}.training.metrics") and name in METRIC_CLASSES)


#: ``flax.nnx`` Modules that may hold no Variables (``nnx.Dropout`` built without ``rngs``):
#: graph nodes all the same, walked by every graph traversal.
STATELESS_MODULE_CLASSES: frozenset[str] = frozenset({"Dropout"})

#: The global mode setters, by qualified name, and the flag each one sets.
MODE_SETTERS: dict[str, str] = {f"{NNX}.set_graph_mode": "graph", f"{NNX}.set_graph_updates": "graph_updates"}

#: ``flax.config`` keys that set the same flags as the setters.
MODE_CONFIG_KEYS: dict[str, str] = {"nnx_graph_mode": "graph", "nnx_graph_updates": "graph_updates"}

#: ``flax.nnx`` functions whose result is an ``nnx.State`` (``nnx.clone`` keeps its argument's
#: type and is followed instead; ``nnx.split`` gives States after its GraphDef).
STATE_PRODUCERS: frozenset[str] = frozenset(
    f"{NNX}.{name}" for name in ("state", "variables", "State", "filter_state", "to_tree", "from_flat_state")
)
#: ``flax.nnx`` functions returning ``(GraphDef, State, ...)``.
SPLITS: frozenset[str] = frozenset({f"{NNX}.split", f"{NNX}.split_state"})
#: ``flax.nnx`` State classes (an annotation with one of these says "this is a State").
STATE_CLASSES: frozenset[str] = frozenset({f"{NNX}.State", f"{NNX}.GraphState"})
#: ``flax.nnx`` Module classes that hold other values like a list or dict does.
CONTAINER_MODULES: frozenset[str] = frozenset({f"{NNX}.List", f"{NNX}.Dict", f"{NNX}.Sequential"})

#: Top-level packages that are never read as project code, even when a checkout of one is
#: the linted tree (its own files would shadow the library nnx-lint knows as data).
EXTERNAL_PACKAGES: frozenset[str] = frozenset({"flax", "jax", "jaxlib", "optax", "numpy", "orbax", "chex", "equinox"})


def qualified(short_names) -> frozenset[str]:
    """``{"Param"}`` -> ``{"flax.nnx.Param"}``.

    >>> sorted(qualified(["Rngs"]))
    ['flax.nnx.Rngs']
    """
    return frozenset(f"{NNX}.{name}" for name in short_names)


def variable_types(*categories: str) -> frozenset[str]:
    """Short names of the Variable types in ``categories`` (all types when none are given).

    >>> sorted(variable_types("param"))
    ['LoRAParam', 'Param']
    """
    return frozenset(name for name, category in VARIABLE_TYPES.items() if not categories or category in categories)


# Older spellings that name the same package.
_PACKAGE_ALIASES = {"flax.experimental.nnx": NNX}


def canonical(qualified_name: str) -> str:
    """Map a qualified name to its canonical ``flax.nnx`` spelling.

    >>> canonical("flax.nnx.transforms.iteration.vmap")
    'flax.nnx.vmap'
    >>> canonical("flax.experimental.nnx.StateAxes")
    'flax.nnx.StateAxes'
    >>> canonical("flax.nnx.compat.vmap")
    'flax.nnx.compat.vmap'
    >>> canonical("flax.nnx.bridge.Module")
    'flax.nnx.bridge.Module'
    >>> canonical("jax.vmap")
    'jax.vmap'
    """
    for old, new in _PACKAGE_ALIASES.items():
        if qualified_name == old or qualified_name.startswith(old + "."):
            qualified_name = new + qualified_name[len(old):]
    if not qualified_name.startswith(NNX + "."):
        return qualified_name
    rest = qualified_name[len(NNX) + 1:].split(".")
    if rest[0] in _PUBLIC_SUBPACKAGES:
        return qualified_name  # nnx.compat.vmap, nnx.bridge.Module: not the top-level names
    if len(rest) > 1 and rest[-1] in PUBLIC_NAMES and rest[-1] not in _SUBMODULE_NAMES:
        # flax.nnx.<internal modules>.<public name> -> flax.nnx.<public name>
        return f"{NNX}.{rest[-1]}"
    return qualified_name


# Public subpackages whose names mean something else than the top-level ones.
_PUBLIC_SUBPACKAGES = frozenset({"compat", "bridge"})

# Public names that are submodules: ``flax.nnx.graph`` is a module, not a re-export.
_SUBMODULE_NAMES = frozenset(
    """
    bridge compat deprecations extract filterlib graph graphlib helpers initializers metrics
    module nn object optimizer pytreelib reprlib rnglib spmd statelib summary tracers
    training transforms traversals variablelib visualization wrappers
    """.split()
)


def short_name(qualified_name: str | None) -> str | None:
    """``flax.nnx.vmap`` -> ``vmap``; ``flax.nnx.compat.vmap`` -> ``vmap``; else None."""
    if not qualified_name:
        return None
    if qualified_name.startswith(COMPAT + "."):
        return qualified_name[len(COMPAT) + 1:]
    if qualified_name.startswith(NNX + "."):
        return qualified_name[len(NNX) + 1:]
    return None


def is_compat(qualified_name: str | None) -> bool:
    """Whether the name is one of the ``nnx.compat`` graph-mode partials."""
    return bool(qualified_name) and qualified_name.startswith(COMPAT + ".")


#: APIs on which flax 0.12.8 rejects ``graph=True`` with ``graph_updates=True`` (checked by
#: introspection: ``nnx.vjp`` / ``nnx.jvp`` / ``nnx.with_rngs`` raise NotImplementedError,
#: ``nnx.jit_partial`` does not support ``graph_updates``): no pin fix can keep graph mode there.
NOT_PINNABLE: frozenset[str] = frozenset({"vjp", "jvp", "with_rngs", "jit_partial"})

#: The first flax release whose ``flax.nnx.<api>`` takes each pin keyword, by keyword and release.
#: Measured on every release from 0.10.0 to 0.12.8: ``inspect.signature`` of each API for 0.10.0
#: and 0.12.1 to 0.12.8, the source for 0.10.1 to 0.12.0 (which do not import with a recent jax):
#: no release before 0.12.4 takes ``graph=`` anywhere, and none before 0.12.6 ``graph_updates=``. A keyword
#: swallowed by ``**kwargs`` does not count (``nnx.reseed(node, **keys)`` before 0.12.5 would take
#: ``graph=True`` for an RNG stream). ``tests/test_flax_table.py`` holds this against the installed
#: flax and ``tests/test_old_flax.py`` against real 0.12.5 and 0.12.6 releases.
PIN_KEYWORD_SINCE: dict[str, dict[str, str]] = {
    "graph": {
        "0.12.4": "jit shard_map",
        "0.12.5": """jit_partial grad value_and_grad custom_vjp vjp jvp remat vmap pmap scan while_loop
                     fori_loop eval_shape cond switch checkify cached_partial split_rngs fork_rngs
                     split state variables graphdef flatten clone iter_graph iter_children iter_modules
                     recursive_map view view_info reseed get_abstract_model""",
        "0.12.6": "map with_attributes transform_metadata abstract_with_sharding",
        "0.12.7": "make_jaxpr with_rngs unpack iter_module_children prefix as_abstract",
    },
    "graph_updates": {
        "0.12.6": """jit jit_partial shard_map grad value_and_grad custom_vjp vjp jvp remat vmap pmap scan
                     while_loop fori_loop eval_shape cond switch checkify""",
        "0.12.7": "make_jaxpr cached_partial split_rngs fork_rngs with_rngs",
    },
}


#: ``flax.nnx`` names a rewrite fix writes, by the first release that has them (measured as
#: :data:`PIN_KEYWORD_SINCE`: ``nnx.transform_metadata`` is missing from 0.12.5's ``flax.nnx``).
NAME_SINCE: dict[str, str] = {"transform_metadata": "0.12.6"}


def keyword_since(api: str, keyword: str) -> str | None:
    """The first flax release whose ``nnx.<api>`` takes ``keyword=`` (None: no release the table knows).

    >>> keyword_since("jit", "graph"), keyword_since("jit", "graph_updates"), keyword_since("split", "graph_updates")
    ('0.12.4', '0.12.6', None)
    """
    for release, names in PIN_KEYWORD_SINCE.get(keyword, {}).items():
        if api in names.split():
            return release
    return None


def version_key(text: str) -> tuple[int, ...] | None:
    """A PEP 440 version as a tuple that orders like the releases (None: not a version).

    Only the release numbers and the phase count: a pre-release or development release
    (``0.12.6rc1``, ``0.12.6.dev3``) comes before its release, a post-release after it, and a
    local label (``+cpu``) is dropped.

    >>> version_key("0.12.6rc1") < version_key("0.12.6") < version_key("0.12.6.post1") < version_key("0.12.7")
    True
    >>> version_key("0.12") == version_key("0.12.0"), version_key("latest")
    (True, None)
    """
    match = re.fullmatch(_VERSION, text.strip().split("+", 1)[0])
    if match is None:
        return None
    release = [int(part) for part in match.group(1).split(".")]
    release += [0] * (3 - len(release))
    phases = [phase.lower() for phase in re.findall(_PHASE, match.group(2) or "")]
    # Any pre-release or development phase puts it before its release; else post after it.
    rank = -1 if any(phase not in _POST for phase in phases) else (1 if phases else 0)
    return (*release, rank)


_PHASE = r"(?i)(a|b|c|rc|alpha|beta|pre|preview|dev|post|rev|r)"
_POST = frozenset({"post", "rev", "r"})
_VERSION = r"(?i)v?(\d+(?:\.\d+)*)((?:[-_.]?(?:a|b|c|rc|alpha|beta|pre|preview|dev|post|rev|r)[-_.]?\d*)*)"


def pin_flags(api: str) -> tuple[str, ...] | None:
    """The keywords that keep graph mode at a call of ``api`` (None: no pin is possible).

    >>> pin_flags("vmap"), pin_flags("split"), pin_flags("vjp")
    (('graph', 'graph_updates'), ('graph',), None)
    """
    if api in NOT_PINNABLE:
        return None
    if api in TRANSFORMS:
        return ("graph", "graph_updates")
    if api in GRAPH_APIS:
        return ("graph",)
    return None


def pin_needs(api: str) -> str | None:
    """The oldest flax release that takes every keyword of the pin at ``api`` (None: no pin).

    >>> pin_needs("jit"), pin_needs("split"), pin_needs("split_rngs"), pin_needs("vjp")
    ('0.12.6', '0.12.5', '0.12.7', None)
    """
    flags = pin_flags(api)
    if flags is None:
        return None
    releases = [keyword_since(api, flag) for flag in flags]
    if None in releases:
        return None
    return max(releases, key=version_key)


def pin_missing(api: str, flax_version: str) -> list[tuple[str, str]]:
    """The pin keywords of ``api`` that flax ``flax_version`` does not take, each with the
    release that added it (empty: the whole pin exists there).

    >>> pin_missing("jit", "0.12.5"), pin_missing("jit", "0.12.6"), pin_missing("split", "0.12.4")
    ([('graph_updates', '0.12.6')], [], [('graph', '0.12.5')])
    """
    have = version_key(flax_version)
    missing = []
    for flag in pin_flags(api) or ():
        since = keyword_since(api, flag)
        if since is not None and (have is None or have < version_key(since)):
            missing.append((flag, since))
    return missing
