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

The flax table:

- ``flax_table`` — :mod:`nnx_lint.flax_table.table`, one namespace for everything a rule knows
  about flax, jax and optax names: ``flax_table.TRANSFORMS`` and the transforms by role
  (``flax_table.GRAD_TRANSFORMS``, ``flax_table.CARRY_LOOPS``, ...), graph APIs and Module methods
  by role, classes and Variable types by role, dotted names (``flax_table.TREE_MAP``,
  ``flax_table.NNX_SPLIT``, ...), what each layer holds, the errors only graph mode raises. Each
  name is documented, and tested against the installed flax, in the table module defining it.

Names and syntax:

- ``NameResolver`` — canonical qualified names (``self.context.names`` is the file's);
  ``base_classes`` — a class's base expressions.
- ``body_nodes`` — a function's own body; ``inside`` — a node at or below another.
- ``lookup``, ``bound_values``, ``bound_values_of``, ``expressions_within``, ``position_in`` —
  what a name is bound to, and what a value is built from.
- ``assigned_value``, ``root_name``, ``join_path`` — stores and attribute paths.
- ``constant_bool`` — a literal ``True``/``False`` argument.

Calls and transforms:

- ``NNXCall`` — one call of a ``flax.nnx`` function, however it is spelled.
- ``fact_index`` — the file's fact index: its calls, stores, bindings and returns, listed once,
  and what each call runs (its NNX call, its transform application and running entry), resolved
  once whichever rule asks.
- ``transform_resolver`` — the file's transform resolver; ``Application`` — one call running a
  transformed function, ``Argument`` — one of its arguments; ``explicit_tree`` — a call that pins
  Tree Mode itself.
- ``DecodedTransform`` — a transform call or decorator bound with its flax signature (the resolver's
  ``decoded``, ``decorators`` and ``created``): argnums, has_aux, nondiff_argnums, axes and the
  mode flags in force.
- ``transformed_code``, ``TransformedCode``, ``Reach`` — does this code run inside a transform, and how.
- ``helper_summaries`` — what the file's helper functions do to their arguments.
- ``where`` — a call site, for a message.
- ``expected_messages`` — a test's assertion on an error message
  (``assertRaisesRegex``, ``pytest.raises(match=)``) and the code it covers; ``pattern_strings``,
  ``plain_text``, ``found_in`` — the strings its pattern may be, read as text (never compiled).

Values, classes and Variables:

- ``object_flow`` — :mod:`nnx_lint.analysis.objects`, one namespace for the object-flow model:
  ``object_flow.object_model(context)`` is the file's model (``context.objects`` too): the objects an
  expression may hold (``objects``, ``proven``), ``may_alias``, the field ``paths`` from an object to
  others (walking only tree nodes), what it ``holds`` (Rngs, streams, Variables), the ``constant`` an
  attribute holds, the ``parameter_values`` analysed calls pass; ``object_flow.ObjectModel`` its type,
  ``object_flow.AbstractObject`` one object (kind, class, creation site, proven);
  ``object_flow.restores_constant``, ``object_flow.restores_invariant`` and ``object_flow.branch_never_taken``
  — a store that changes nothing (a literal, or the initialiser's expression over attributes only the
  initialiser writes), a branch no analysed call takes (``object_flow.parameter_guards``: the guards on a parameter
  around a node, ``if flag:`` / ``x if p > 0.0 else y``, found without building the model); ``object_flow.leaves_the_tree``,
  ``object_flow.shared_rngs_paths`` and ``object_flow.shared_inside`` — a path through a plain Python
  object, an Rngs reached at two paths of an instance, one object at two paths of an argument.
- ``value_model`` — the file's value model (what an expression is: its classes, ``is_rngs`` for an
  Rngs or a stream of one, ``is_module_class`` for a class whose instances are Modules, ``not_pytree``
  for a class whose instances are not pytrees or hold a part that is not); ``DATA_CONTAINER``,
  ``CONTAINER_KINDS`` — what its ``stored_kind`` calls a container an attribute stores (a pytree node a Tree Mode transform rebuilds, or one carried by reference).
- ``Ref``, ``Alias``, ``SelfReference`` — objects inside constructed instances: where they come
  from, reached twice, stored below themselves; ``SHARED_KINDS``, ``STATEFUL_KINDS`` — their kinds.
- ``variable_model`` — the file's Variable model; ``Holdings`` — what a class or value holds;
  ``FLOAT_STATE``, ``NON_DIFFERENTIABLE``, ``UNKNOWN_DTYPE`` — its leaf kinds.
- ``gradients`` — :mod:`nnx_lint.analysis.grad_arguments`, one namespace for the grad analysis:
  ``gradients.grad_analysis(context)`` is the file's (which arguments each grad application
  differentiates, as ``gradients.Differentiated``, and what the gradient's consumers do with it:
  ``gradients.StateTypeCheck``, ``gradients.tree_mode_value``, ``gradients.STATE_FUNCTIONS``);
  ``gradients.unknown_argument`` and ``gradients.grad_pin_sites``; ``gradients.GradApplication``,
  ``gradients.GradientFlow``, ``gradients.GradientUse`` — a grad application and where its gradient goes;
  ``gradients.holding_facts`` and ``gradients.describe_holdings`` — what an argument holds, as facts and text.
- ``custom_vjps`` — :mod:`nnx_lint.analysis.custom_vjps`, one namespace for the file's ``nnx.custom_vjp``
  registrations: ``custom_vjps.custom_vjp_analysis(context)`` (each ``defvjp`` as a
  ``custom_vjps.Registration``), and what a backward function does with its cotangent
  (``custom_vjps.cotangent_parameter``, ``custom_vjps.old_destructures``, ``custom_vjps.old_parts``,
  ``custom_vjps.guarded_by_protocol_check``, ``custom_vjps.own_body_nodes``).
- ``sown_state`` — :mod:`nnx_lint.analysis.sown_state`, one namespace for sown and perturbed state:
  ``sown_state.sown_collection``, ``sown_state.uses_capture``, ``sown_state.perturb_recipe_diffstate``
  and ``sown_state.grads_of`` (the grads a DiffState recipe feeds).
- ``returned_inputs`` — :mod:`nnx_lint.analysis.returned_inputs`, one namespace for what transformed
  functions return: ``returned_inputs.returned_inputs(context)`` is the file's (``of_definition``: each
  ``returned_inputs.ReturnedInput``, ``returned_inputs.StoredInput``, ``returned_inputs.DuplicateOutput``
  and ``returned_inputs.ReturnedRef`` of a definition), ``returned_inputs.function_definition`` (what a
  function expression denotes), ``returned_inputs.returned_expressions``,
  ``returned_inputs.parameter_names``, ``returned_inputs.view_of`` (a state view) and
  ``returned_inputs.used_as_module``.
- ``shared_objects`` — :mod:`nnx_lint.analysis.shared_objects`, one namespace for objects reached
  twice: ``shared_objects.graph_uses(context)`` (``shared_objects.GraphUses``: how the file's calls use
  objects and instances, with or without graph mode; ``shared_objects.ClassUses`` folds them per class
  and object), ``shared_objects.alias_category`` and
  ``shared_objects.alias_shape`` (an alias's shape), ``shared_objects.overlapping_pair`` and
  ``shared_objects.relative_parts`` (two arguments holding one object), ``shared_objects.alias_location``
  (where an alias is reported), ``shared_objects.child_stores`` (where a child class keeps it),
  ``shared_objects.child_store_of`` (where a child class keeps a back-reference),
  ``shared_objects.holds_state_besides_cycles`` (whether a node that holds itself holds Variables),
  ``ClassUses.may_break`` and ``ClassUses.pin_sites`` (a class's findings count; the pins of its uses), and
  ``shared_objects.self_path_parts``.
- ``passed_here``, ``passed_to``, ``passed_at`` — the classes callers pass for a parameter.
- ``names_rngs`` — the naming convention of an Rngs parameter whose class nothing states (the class
  model asks it last; a rule that sees a bare local name asks it the same way).
- ``python_value``, ``static_use``, ``bound_arguments`` — is an expression a Python value
  (an int, a shape, a string), and where does a function need a parameter concrete (a traced value
  raises there).
- ``may_leave`` — could a value reach other code (returned, passed, stored, yielded), or is it
  only read where it is made.
- ``argument_views``, ``ArgumentView`` — a call's arguments as its function and its callers see
  them (relations across calls); ``held_items`` — what an argument was built holding;
  ``opaque_builder`` — the call that built it when its code cannot be read.

Fixes:

- ``pin_sites_in``, ``pin_sites``, ``entry_pin_target`` — the call sites a graph-mode pin edits
  (the ``pin`` fact); ``PIN`` — the fix kind that pins them (in ``Rule.fixes``).
- ``Rewrite`` — a tree-native rewrite, declared beside the rule that offers it (in ``Rule.fixes``);
  its builder gets a ``RewriteSite`` (libcst, the text, the diagnostic and its facts) and makes an
  ``UNSAFE`` fix or a ``DISPLAY_ONLY`` TODO comment.

Reproduction programs (facts are hostile text: a program is built only through these):

- ``programs`` — :mod:`nnx_lint.base.program_syntax`, one namespace for building a program on
  syntax trees: checked facts (``programs.identifier``, ``programs.bounded_index``, ...),
  pieces (``programs.call``, ``programs.attribute``, ``programs.assign``, ``programs.literal``,
  ``programs.filled``, ...), ``programs.UnsafeFact`` for a fact that cannot be used (no
  reproduction), and ``programs.shown`` / ``programs.clipped`` to quote a fact in a reason.
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
from nnx_lint.analysis.expected_messages import expected_messages, found_in, pattern_strings, plain_text
from nnx_lint.analysis.fact_index import fact_index
from nnx_lint.analysis.flow import bound_values, bound_values_of, expressions_within, inside, lookup, position_in
from nnx_lint.analysis import custom_vjps
from nnx_lint.analysis import grad_arguments as gradients
from nnx_lint.analysis import returned_inputs, shared_objects, sown_state
from nnx_lint.analysis.names import NameResolver, base_classes, root_name
from nnx_lint.base.noqa import UNUSED_NOQA_CODE
from nnx_lint.base import program_syntax as programs
from nnx_lint.flax_table import table as flax_table
from nnx_lint.analysis.relations import ArgumentView, argument_views, held_items, opaque_builder
from nnx_lint.analysis.rule import Invalid, Reproduction, Rule, Valid, differs, raises
from nnx_lint.analysis.static_uses import bound_arguments, python_value, static_use
from nnx_lint.analysis.summaries import helper_summaries
from nnx_lint.analysis.transformed import Reach, TransformedCode, body_nodes, transformed_code
from nnx_lint.analysis.transform_types import Application, Argument, DecodedTransform, explicit_tree
from nnx_lint.analysis.transforms import transform_resolver
from nnx_lint.analysis.value_uses import may_leave
from nnx_lint.analysis import objects as object_flow
from nnx_lint.analysis.values import CONTAINER_KINDS, DATA_CONTAINER, value_model
from nnx_lint.analysis.variables import FLOAT_STATE, NON_DIFFERENTIABLE, UNKNOWN_DTYPE, Holdings, variable_model

if TYPE_CHECKING:
    from nnx_lint.analysis.context import FileContext

__all__ = [
    # Declaring a rule.
    "Rule", "Facts", "ABSENT", "Valid", "Invalid", "raises", "differs", "Reproduction", "UNUSED_NOQA_CODE",
    "checkpoint",
    # The flax table.
    "flax_table",
    # Names and syntax.
    "NameResolver", "base_classes", "inside", "body_nodes", "lookup", "bound_values", "bound_values_of",
    "expressions_within", "position_in", "assigned_value", "root_name", "join_path", "constant_bool",
    # Calls and transforms.
    "NNXCall", "fact_index", "transform_resolver", "Application", "Argument", "DecodedTransform",
    "explicit_tree",
    "transformed_code",
    "TransformedCode", "Reach", "helper_summaries", "where", "expected_messages",
    "pattern_strings", "plain_text", "found_in",
    # Values, classes and Variables.
    "object_flow", "value_model", "DATA_CONTAINER", "CONTAINER_KINDS", "Ref", "Alias", "SelfReference",
    "SHARED_KINDS", "STATEFUL_KINDS", "variable_model", "Holdings",
    "FLOAT_STATE", "NON_DIFFERENTIABLE", "UNKNOWN_DTYPE", "gradients", "custom_vjps", "sown_state",
    "returned_inputs", "shared_objects",
    "passed_here", "passed_to", "passed_at", "names_rngs", "may_leave", "argument_views", "ArgumentView",
    "held_items", "opaque_builder", "python_value", "static_use", "bound_arguments",
    # Fixes.
    "pin_sites_in", "pin_sites", "entry_pin_target", "PIN", "Rewrite", "RewriteSite", "UNSAFE", "DISPLAY_ONLY",
    # Reproduction programs.
    "programs",
]
