"""flax's own object relations, as small models the object-flow model reads (no flax import).

Each entry says what a flax call does to object identity, which is what the shared-reference,
graph-update and grad rules ask about:

* :data:`FRESH_RNGS`: calls that make a new ``Rngs`` (its own ``RngKey`` / ``RngCount``
  Variables): ``nnx.Rngs(...)`` itself, and the ``Rngs`` methods in :data:`FRESH_RNGS_METHODS`
  (``rngs.fork()`` splits the keys into an independent object);
* :data:`HOLDS_MODEL`: constructors whose instance keeps an argument as a field
  (``nnx.ModelAndOptimizer(model, tx)`` keeps ``model``; flax 0.12's ``nnx.Optimizer`` keeps
  no reference to the model, which the tests check too);
* :data:`FRESH_COPIES`: calls that return new objects, never their input
  (``nnx.clone``, ``nnx.split``, ``nnx.merge``);
* :data:`LOOP_CARRIES`: loops whose result is, in Tree Mode, a fresh copy of the carry
  (``nnx.fori_loop(lo, hi, body, init)``, ``nnx.while_loop`` and their ``jax.lax`` twins;
  with the position of the carry and of the body; :data:`GRAPH_LOOP_CARRIES`, their ``compat``
  spellings, return the carry itself; calling a function transformed by a
  :data:`SCAN_CARRIES` transform returns fresh copies of what the function returns;
* :data:`CONTAINERS`: the flax containers, whose elements are the tree's children.

``tests/test_object_relations.py`` checks every name and relation against the installed flax.
"""
from __future__ import annotations

#: Constructors of a fresh ``Rngs``.
FRESH_RNGS = frozenset({"flax.nnx.Rngs"})

#: Methods of an ``Rngs`` that return a new, independent ``Rngs``.
FRESH_RNGS_METHODS = frozenset({"fork"})

#: The class of the ``Rngs`` objects the model makes.
RNGS_CLASS = "flax.nnx.Rngs"

#: Constructor -> ((position, keyword, field), ...): the arguments the instance keeps, and where.
HOLDS_MODEL: dict[str, tuple[tuple[int, str, str], ...]] = {
    "flax.nnx.ModelAndOptimizer": ((0, "model", "model"),),
}

#: Calls whose result is a new object (never one of the arguments).
FRESH_COPIES = frozenset({"flax.nnx.clone", "flax.nnx.split", "flax.nnx.merge"})

#: Loop -> (position of the body, position of the carry): the result is a fresh copy of the carry.
LOOP_CARRIES: dict[str, tuple[int, int]] = {
    "flax.nnx.fori_loop": (2, 3),
    "jax.lax.fori_loop": (2, 3),
    "flax.nnx.while_loop": (1, 2),
    "jax.lax.while_loop": (1, 2),
    "jax.lax.scan": (0, 1),
}

#: ``compat`` loops (graph mode): the result is the carry itself, updated in place.
GRAPH_LOOP_CARRIES: dict[str, tuple[int, int]] = {
    "flax.nnx.compat.fori_loop": (2, 3),
    "flax.nnx.compat.while_loop": (1, 2),
}

#: Transforms whose transformed function returns, in Tree Mode, fresh copies of what it returns
#: (the carry among them).
SCAN_CARRIES = frozenset({"flax.nnx.scan"})

#: flax containers: their positional arguments (or the items of their first argument) are children.
CONTAINERS = frozenset({"flax.nnx.List", "flax.nnx.Dict", "flax.nnx.Sequential"})

#: ``functools.partial``: a callable that prepends its arguments.
PARTIAL = "functools.partial"
