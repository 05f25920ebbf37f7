"""The one surface a rule imports: everything a checker may use from the core, by purpose.

Rules (``checkers/**``) import the core only from here; an import-linter contract in
``pyproject.toml`` (run by ``tests/test_layers.py``) holds them to it. A service a rule needs
is added here, under its purpose, and documented in its own module; each name below keeps the
docstring it has there. Most answers about the file being linted come from ``self.context``
(a :class:`FileContext`): its ``names``, ``mode``, ``classes``, ``project`` and the memoised
services of the calls and values listed here.

Declaring a rule:

- ``Rule`` — the base class of every rule (code, symbol, kind, message, help, visits).
- ``Facts`` — the base of a rule's frozen facts dataclass; ``ABSENT`` marks a fact a finding lacks.
- ``Valid``, ``Invalid`` — the rule's example cases; ``raises``, ``differs`` — what Tree Mode does
  with an ``Invalid`` one.
- ``Reproduction`` — what a rule's ``reproduce`` returns.
- ``FileContext`` — the type of ``self.context``, for annotations only: import it under
  ``TYPE_CHECKING`` (the engine, which runs the rules, sits above this surface, so the name
  is bound only for type checkers and is not in ``__all__``).
- ``UNUSED_NOQA_CODE`` — the code the engine reports unused ``# noqa`` comments under.
- ``checkpoint`` — call inside long walks: raises once the file is over its analysis budget.

The flax table (qualified names as ``flax.nnx.X``, short names where noted):

- ``NNX`` — ``"flax.nnx"``, the prefix of every qualified NNX name.
- ``TRANSFORMS`` (``GRAD_TRANSFORMS``: grad and value_and_grad), ``GRAPH_APIS``, ``ALIAS_CHECKING_GRAPH_APIS`` — short names of the NNX
  transforms and graph APIs; ``PREFIX_KEYWORDS`` — their keywords that take prefixes.
- ``MODE_SETTERS``, ``SPLITS``, ``WALKING_METHODS``, ``STATE_PRODUCERS``, ``GRAPH_USE_APIS``,
  ``MODULE_USE_APIS``, ``GRAPHDEF_MERGES``, ``ONE_LEVEL_APIS``, ``MODULE_WALKS``, ``CONTAINER_NAMES`` — APIs by role.
- ``GRAPH_ONLY_ERRORS``, ``GraphOnlyError`` — error messages only graph mode raises, and what Tree Mode
  does at the same call instead.
- ``MODULE_CLASSES``, ``CONTAINER_MODULES``, ``STATE_CLASSES``, ``OPTIMIZER_CLASSES``,
  ``NNX_MODULE_BASES``, ``VARIABLE_TYPES`` — classes by role; ``FLAX_LAYERS`` — what each built-in layer holds.
- Dotted flax / jax / optax names by role, each documented in :mod:`nnx_lint.flax_table.names`:
  namespaces ``NNX_PREFIX``, ``BRIDGE_PACKAGE``, ``DTYPE_MODULES``, ``NEVER_MODULE_PREFIXES``; the mode
  setter ``FLAX_CONFIG_UPDATE``; classes ``NNX_OBJECT``, ``OPTIMIZER_QUALIFIED``, ``NNX_STATE``, ``NNX_DICT``,
  ``NNX_LIST``, ``SOWN_VARIABLE_TYPES``, ``NNX_PERTURBATION``, ``NNX_PARTITION_NAME``, ``BRIDGE_WRAPPERS``;
  functions ``STATE_READERS``, ``NNX_SPLIT``, ``NNX_MERGE``, ``NNX_CLONE``, ``NNX_TO_PURE_DICT``,
  ``NNX_RESTORE_RNGS``, ``UNSUPPORTED_COMPAT``, ``REF_VARIABLE_MAKERS``, ``NNX_VAR_DEFAULTS``,
  ``BRIDGE_LAZY_INIT``, ``NNX_STATE_FUNCTIONS``, ``STATE_FUNCTIONS_NOT_IN_RUNTIME``; tree functions
  ``TREE_MAPS`` / ``TREE_MAP`` (the ``jax.tree`` map functions), ``OPTAX_APPLY_UPDATES``,
  ``WHOLE_TREE_CONSUMERS``, ``NORM_CONSUMERS``, ``TREE_REDUCES``, ``TREE_FLATTENS``, ``RAVEL_PYTREE``,
  ``DEFAULT_NORM``.
- ``RNG_OBJECTS`` — short names of the RNG classes; ``RNG_SHAPE_POSITIONS`` — where their random
  methods take ``shape``; ``LAYER_BOOL_FLAGS`` — layer call keywords read as Python bools;
  ``TABULATE_OPTIONS`` — ``nnx.tabulate``'s own keywords.

Names and syntax:

- ``NameResolver`` — canonical qualified names (``self.context.names`` is the file's);
  ``base_classes`` — a class's base expressions.
- ``nodes_of_class`` — indexed ``node.nodes_of_class``; ``body_nodes`` — a function's own body.
- ``lookup``, ``bound_values``, ``bound_values_of``, ``expressions_within``, ``position_in`` —
  what a name is bound to, and what a value is built from.
- ``assigned_value``, ``root_name``, ``join_path`` — stores and attribute paths.
- ``constant_bool`` — a literal ``True``/``False`` argument.

Calls and transforms:

- ``NNXCall`` — one call of a ``flax.nnx`` function, however it is spelled.
- ``fact_index`` — the file's fact index: its calls, stores, bindings and returns, listed once,
  and what each call runs (its NNX call, its transform application and running entry), resolved
  once whichever rule asks; ``FactIndex`` its type.
- ``transform_resolver`` — the file's transform resolver; ``Application`` — one call running a
  transformed function, ``Argument`` — one of its arguments; ``explicit_tree`` — a call that pins
  Tree Mode itself.
- ``DecodedTransform`` — a transform call or decorator bound with its flax signature (the resolver's
  ``decoded``, ``decorators`` and ``created``): argnums, has_aux, nondiff_argnums, axes (``NOT_LITERAL``
  when computed) and the mode flags in force.
- Transforms by role (:mod:`nnx_lint.flax_table.signatures`): ``RNG_SPLITTING_TRANSFORMS``,
  ``MAPPING_TRANSFORMS``, ``AXES_TRANSFORMS``, ``METADATA_TRANSFORMS``, ``BRANCH_TRANSFORMS``, ``CARRY_LOOPS``,
  ``CARRY_TRANSFORMS``, ``ALIAS_CHECKING_WITHOUT_UPDATES``.
- ``transformed_code``, ``TransformedCode``, ``Reach`` — does this code run inside a transform, and how.
- ``helper_summaries`` — what the file's helper functions do to their arguments.
- ``where`` — a call site, for a message.
- ``expected_messages``, ``ExpectedMessage`` — a test's assertion on an error message
  (``assertRaisesRegex``, ``pytest.raises(match=)``) and the code it covers; ``pattern_strings``,
  ``plain_text``, ``found_in`` — the strings its pattern may be, read as text (never compiled).

Values, classes and Variables:

- ``object_model`` — the file's object-flow model (``context.objects`` too): the objects an
  expression may hold (``objects``, ``proven``), ``may_alias``, the field ``paths`` from an object to
  others (walking only tree nodes), what it ``holds`` (Rngs, streams, Variables), the ``constant`` an
  attribute holds, the ``parameter_values`` analysed calls pass; ``ObjectModel`` its type,
  ``AbstractObject`` one object (kind, class, creation site, proven); ``restores_constant`` and
  ``branch_never_taken`` — a store that changes nothing, a branch no analysed call takes
  (``parameter_guards``: the ``if flag:`` around a node, found without building the model);
  ``leaves_the_tree``, ``shared_rngs_paths`` and ``shared_inside`` — a path through a plain Python
  object, an Rngs reached at two paths of an instance, one object at two paths of an argument.
- ``value_model`` — the file's value model (what an expression is); ``DATA_CONTAINER``,
  ``STATIC_CONTAINER``, ``CONTAINER_KINDS`` — what its ``stored_kind`` calls a container an
  attribute stores (a pytree node a Tree Mode transform rebuilds, or one carried by reference).
- ``Ref``, ``Alias``, ``SelfReference`` — objects inside constructed instances: where they come
  from, reached twice, stored below themselves; ``SHARED_KINDS``, ``STATEFUL_KINDS`` — their kinds.
- ``variable_model`` — the file's Variable model; ``Holdings`` — what a class or value holds;
  ``FLOAT_STATE``, ``NON_DIFFERENTIABLE``, ``UNKNOWN_DTYPE`` — its leaf kinds.
- ``GradApplication``, ``GradientFlow``, ``GradientUse`` — a grad application and where its
  gradient goes.
- ``passed_here``, ``passed_to``, ``passed_at`` — the classes callers pass for a parameter.
- ``names_rngs`` — the naming convention of an Rngs parameter whose class nothing states (the class
  model asks it last; a rule that sees a bare local name asks it the same way).
- ``python_value``, ``static_use``, ``StaticUse``, ``bound_arguments`` — is an expression a Python value
  (an int, a shape, a string), and where does a function need a parameter concrete (a traced value
  raises there).
- ``may_leave`` — could a value reach other code (returned, passed, stored, yielded), or is it
  only read where it is made.
- ``argument_views``, ``ArgumentView`` — a call's arguments as its function and its callers see
  them (relations across calls); ``held_items`` — what an argument was built holding;
  ``opaque_builder``, ``OpaqueBuilder`` — the call that built it when its code cannot be read.

Fixes:

- ``pin_sites_in``, ``pin_sites``, ``entry_pin_target`` — the call sites a graph-mode pin edits
  (the ``pin`` fact); ``PIN`` — the fix kind that pins them (in ``Rule.fixes``).
- ``Rewrite`` — a tree-native rewrite, declared beside the rule that offers it (in ``Rule.fixes``);
  its builder gets a ``RewriteSite`` (libcst, the text, the diagnostic and its facts) and makes an
  ``UNSAFE`` fix or a ``DISPLAY_ONLY`` TODO comment.

Reproduction programs (facts are hostile text: a program is built only through these):

- ``UnsafeFact`` — raised for a fact that cannot be used (the finding gets no reproduction).
- ``identifier``, ``identifier_or``, ``is_identifier``, ``bounded_index``, ``choice_or`` — checked facts.
- ``literal``, ``access``, ``set_attribute``, ``keyword_arguments`` — program text built from them.
- ``filled`` — a builder's code template with its placeholder names replaced on the syntax tree
  (renames touch whole names only), written back with ``ast.unparse``.
- ``clipped``, ``shown`` — a fact quoted in a note or a reason.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from nnx_lint.base.bounds import checkpoint
from nnx_lint.analysis.call_sites import where
from nnx_lint.analysis.caller_evidence import passed_at, passed_here, passed_to
from nnx_lint.analysis.calls import NNXCall, constant_bool
from nnx_lint.analysis.class_info import assigned_value
from nnx_lint.analysis.refs import (
    SHARED_KINDS,
    STATEFUL_KINDS,
    Alias,
    Ref,
    SelfReference,
    join_path,
    names_rngs,
)
from nnx_lint.base.facts import ABSENT, Facts
from nnx_lint.base.fix_kinds import DISPLAY_ONLY, PIN, UNSAFE, Rewrite, RewriteSite
from nnx_lint.analysis.pin_sites import entry_pin_target, pin_sites, pin_sites_in
from nnx_lint.flax_table.flax_layers import FLAX_LAYERS
from nnx_lint.flax_table.graph_errors import GRAPH_ONLY_ERRORS, GraphOnlyError
from nnx_lint.flax_table.static_arguments import LAYER_BOOL_FLAGS, RNG_SHAPE_POSITIONS, TABULATE_OPTIONS
from nnx_lint.analysis.expected_messages import (
    ExpectedMessage,
    expected_messages,
    found_in,
    pattern_strings,
    plain_text,
)
from nnx_lint.analysis.fact_index import FactIndex, fact_index
from nnx_lint.analysis.flow import bound_values, expressions_within, lookup, position_in
from nnx_lint.analysis.gradient_flow import GradApplication, GradientFlow, GradientUse
from nnx_lint.analysis.names import NameResolver, base_classes
from nnx_lint.flax_table.names import (
    BRIDGE_LAZY_INIT,
    BRIDGE_PACKAGE,
    BRIDGE_WRAPPERS,
    DEFAULT_NORM,
    DTYPE_MODULES,
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
from nnx_lint.flax_table.signatures import (
    ALIAS_CHECKING_WITHOUT_UPDATES,
    AXES_TRANSFORMS,
    BRANCH_TRANSFORMS,
    CARRY_LOOPS,
    CARRY_TRANSFORMS,
    MAPPING_TRANSFORMS,
    METADATA_TRANSFORMS,
    RNG_SPLITTING_TRANSFORMS,
)
from nnx_lint.flax_table.nnx_api import (
    ALIAS_CHECKING_GRAPH_APIS,
    CONTAINER_MODULES,
    CONTAINER_NAMES,
    GRAPHDEF_MERGES,
    GRAPH_USE_APIS,
    MODULE_USE_APIS,
    MODULE_WALKS,
    ONE_LEVEL_APIS,
    OPTIMIZER_CLASSES,
    GRAD_TRANSFORMS,
    GRAPH_APIS,
    MODE_SETTERS,
    MODULE_CLASSES,
    NNX,
    PREFIX_KEYWORDS,
    RNG_OBJECTS,
    SPLITS,
    STATE_CLASSES,
    STATE_PRODUCERS,
    TRANSFORMS,
    WALKING_METHODS,
)
from nnx_lint.base.node_index import nodes_of_class
from nnx_lint.base.noqa import UNUSED_NOQA_CODE
from nnx_lint.base.program_text import (
    UnsafeFact,
    access,
    bounded_index,
    choice_or,
    clipped,
    filled,
    identifier,
    identifier_or,
    is_identifier,
    keyword_arguments,
    literal,
    set_attribute,
    shown,
)
from nnx_lint.analysis.relations import ArgumentView, OpaqueBuilder, argument_views, held_items, opaque_builder
from nnx_lint.analysis.rule import Invalid, Reproduction, Rule, Valid, differs, raises
from nnx_lint.analysis.static_uses import StaticUse, bound_arguments, python_value, static_use
from nnx_lint.analysis.summaries import helper_summaries
from nnx_lint.analysis.transformed import Reach, TransformedCode, body_nodes, root_name, transformed_code
from nnx_lint.analysis.transform_types import (
    NOT_LITERAL,
    Application,
    Argument,
    DecodedTransform,
    bound_values_of,
    explicit_tree,
)
from nnx_lint.analysis.transforms import transform_resolver
from nnx_lint.analysis.value_uses import may_leave
from nnx_lint.analysis.objects import AbstractObject, ObjectModel, object_model
from nnx_lint.analysis.objects.guards import branch_never_taken, leaves_the_tree, parameter_guards, restores_constant, shared_inside, shared_rngs_paths
from nnx_lint.analysis.values import CONTAINER_KINDS, DATA_CONTAINER, STATIC_CONTAINER, VARIABLE_TYPES, value_model
from nnx_lint.analysis.variables import FLOAT_STATE, NON_DIFFERENTIABLE, UNKNOWN_DTYPE, Holdings, variable_model

if TYPE_CHECKING:
    from nnx_lint.engine.walk import FileContext

__all__ = [
    # Declaring a rule.
    "Rule", "Facts", "ABSENT", "Valid", "Invalid", "raises", "differs", "Reproduction", "UNUSED_NOQA_CODE",
    "checkpoint",
    # The flax table.
    "NNX", "TRANSFORMS", "GRAD_TRANSFORMS", "GRAPH_APIS", "ALIAS_CHECKING_GRAPH_APIS", "PREFIX_KEYWORDS",
    "MODE_SETTERS", "SPLITS",
    "WALKING_METHODS", "STATE_PRODUCERS", "MODULE_CLASSES", "CONTAINER_MODULES", "STATE_CLASSES",
    "OPTIMIZER_CLASSES", "NNX_MODULE_BASES", "VARIABLE_TYPES", "FLAX_LAYERS", "TREE_MAPS",
    "CONTAINER_NAMES", "GRAPH_USE_APIS", "MODULE_USE_APIS", "GRAPHDEF_MERGES", "ONE_LEVEL_APIS", "MODULE_WALKS",
    "BRIDGE_LAZY_INIT", "BRIDGE_PACKAGE", "BRIDGE_WRAPPERS", "DEFAULT_NORM", "DTYPE_MODULES", "FLAX_CONFIG_UPDATE",
    "NEVER_MODULE_PREFIXES", "NNX_CLONE", "NNX_DICT", "NNX_LIST", "NNX_MERGE", "NNX_OBJECT", "NNX_PARTITION_NAME",
    "NNX_PERTURBATION", "NNX_PREFIX", "NNX_RESTORE_RNGS", "NNX_SPLIT", "NNX_STATE", "NNX_STATE_FUNCTIONS",
    "NNX_TO_PURE_DICT", "NNX_VAR_DEFAULTS", "NORM_CONSUMERS", "OPTAX_APPLY_UPDATES", "OPTIMIZER_QUALIFIED",
    "RAVEL_PYTREE", "REF_VARIABLE_MAKERS", "SOWN_VARIABLE_TYPES", "STATE_FUNCTIONS_NOT_IN_RUNTIME", "STATE_READERS",
    "TREE_FLATTENS", "TREE_MAP", "TREE_REDUCES", "UNSUPPORTED_COMPAT", "WHOLE_TREE_CONSUMERS", "RNG_OBJECTS",
    "RNG_SHAPE_POSITIONS", "LAYER_BOOL_FLAGS", "TABULATE_OPTIONS", "GRAPH_ONLY_ERRORS", "GraphOnlyError",
    # Names and syntax.
    "NameResolver", "base_classes", "nodes_of_class", "body_nodes", "lookup", "bound_values", "bound_values_of",
    "expressions_within", "position_in", "assigned_value", "root_name", "join_path", "constant_bool",
    # Calls and transforms.
    "NNXCall", "fact_index", "FactIndex", "transform_resolver", "Application", "Argument", "DecodedTransform",
    "NOT_LITERAL", "explicit_tree",
    "RNG_SPLITTING_TRANSFORMS", "MAPPING_TRANSFORMS", "AXES_TRANSFORMS", "METADATA_TRANSFORMS", "BRANCH_TRANSFORMS",
    "CARRY_LOOPS", "CARRY_TRANSFORMS", "ALIAS_CHECKING_WITHOUT_UPDATES", "transformed_code",
    "TransformedCode", "Reach", "helper_summaries", "where", "expected_messages", "ExpectedMessage",
    "pattern_strings", "plain_text", "found_in",
    # Values, classes and Variables.
    "object_model", "ObjectModel", "AbstractObject", "restores_constant", "branch_never_taken", "parameter_guards", "leaves_the_tree", "shared_rngs_paths", "shared_inside", "value_model", "DATA_CONTAINER", "STATIC_CONTAINER", "CONTAINER_KINDS", "Ref", "Alias", "SelfReference",
    "SHARED_KINDS", "STATEFUL_KINDS", "variable_model", "Holdings",
    "FLOAT_STATE", "NON_DIFFERENTIABLE", "UNKNOWN_DTYPE", "GradApplication", "GradientFlow", "GradientUse",
    "passed_here", "passed_to", "passed_at", "names_rngs", "may_leave", "argument_views", "ArgumentView",
    "held_items", "opaque_builder", "OpaqueBuilder", "python_value", "static_use", "StaticUse", "bound_arguments",
    # Fixes.
    "pin_sites_in", "pin_sites", "entry_pin_target", "PIN", "Rewrite", "RewriteSite", "UNSAFE", "DISPLAY_ONLY",
    # Reproduction programs.
    "UnsafeFact", "identifier", "identifier_or", "is_identifier", "bounded_index", "choice_or", "literal", "access",
    "set_attribute", "keyword_arguments", "filled", "clipped", "shown",
]
