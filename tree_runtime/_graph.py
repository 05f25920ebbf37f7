"""Graph APIs in tree form: ``split``, ``merge``, ``state``, ``graphdef``,
``update``, ``clone``, ``pop``, ``find_duplicates``, ``iter_graph``.

``split`` flattens with ``jax.tree`` (Variables as leaves): there is no
graph, so a Variable reachable twice is rejected rather than de-duplicated.
``update``/``pop``/``find_duplicates`` walk objects by reference, as flax's
mode-independent versions do.
"""

from __future__ import annotations

import dataclasses
import typing as tp

import jax
from jax import tree_util as jtu

from ._filters import to_predicate
from ._module import Dict, List, Module, _children, _is_variable, iter_modules, variables_with_paths
from ._pytree import Pytree
from ._state import State, split_state
from ._variables import Variable


def nnx_path(jax_path: tuple) -> tuple:
    """Convert a JAX key path to NNX path parts (names and indices)."""
    parts = []
    for key in jax_path:
        if isinstance(key, jtu.GetAttrKey):
            parts.append(key.name)
        elif isinstance(key, jtu.SequenceKey):
            parts.append(key.idx)
        elif isinstance(key, jtu.DictKey):
            parts.append(key.key)
        else:
            parts.append(getattr(key, "key", key))
    return tuple(parts)


@jtu.register_static
@dataclasses.dataclass(frozen=True)
class GraphDef:
    """The static structure of a node: a treedef plus the leaf paths.

    >>> import tree_runtime as nnx
    >>> graphdef, params = nnx.split(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    >>> graphdef.paths
    (('bias',), ('kernel',))
    """

    treedef: tp.Any
    paths: tuple
    #: Per leaf path: ``(Variable type, metadata)`` for a Variable, None for another leaf.
    #: ``merge`` rebuilds a Variable of that type around a raw value given for it, as flax's
    #: Tree Mode does (not part of equality: two splits of one structure are equal).
    variables: tuple = dataclasses.field(default=(), compare=False)

    def apply(self, *states: State) -> tp.Callable:
        """``graphdef.apply(state)(*args)`` calls the merged module."""
        return lambda *args, **kwargs: merge(self, *states)(*args, **kwargs)


def _no_graph(fn_name: str, graph: bool | None) -> None:
    if graph:
        from ._errors import GraphModeNotSupportedError

        raise GraphModeNotSupportedError(fn_name)


def split(node: tp.Any, *filters: tp.Any, graph: bool | None = None, exhaustive: bool = True) -> tuple:
    """Split ``node`` into a ``GraphDef`` and one ``State`` per filter.

    >>> import tree_runtime as nnx
    >>> model = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
    >>> graphdef, params, stats = nnx.split(model, nnx.Param, ...)
    >>> sorted(params), sorted(stats)
    (['bias', 'scale'], ['mean', 'var'])
    """
    _no_graph("split", graph)
    leaves = variables_with_paths(node)
    treedef = jtu.tree_structure(node, is_leaf=_is_variable)
    flat = [(nnx_path(path), leaf) for path, leaf in leaves]
    variables = tuple((type(leaf), tuple(sorted(leaf._var_metadata.items()))) if isinstance(leaf, Variable) else None
                      for _, leaf in flat)
    graphdef = GraphDef(treedef, tuple(path for path, _ in flat), variables)
    return (graphdef, *split_state(State.from_flat_path(flat), *filters, exhaustive=exhaustive))


def merge(graphdef: GraphDef, state: tp.Any, /, *states: tp.Any, recreate_variables: bool = True) -> tp.Any:
    """Rebuild a node from its ``GraphDef`` and States (the Variables are reused).

    A raw value given where the split found a Variable becomes a Variable of that type
    again, whatever ``recreate_variables`` says: flax's graph mode honours
    ``recreate_variables=False`` (the raw value stays), its Tree Mode ignores it.

    >>> import tree_runtime as nnx
    >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    >>> nnx.merge(*nnx.split(model)).kernel is model.kernel
    True
    >>> graphdef, state = nnx.split(model)
    >>> type(nnx.merge(graphdef, nnx.to_pure_dict(state), recreate_variables=False).kernel).__name__
    'Param'
    """
    flat: list = []
    for s in (state, *states):
        # As flax: a non-Mapping (e.g. a Module-typed gradient) counts as one leaf.
        flat += to_flat_state(s) if isinstance(s, tp.Mapping) else [((), s)]
    if len(flat) != len(graphdef.paths):
        raise ValueError(f"Incorrect number of leaves, expected {len(graphdef.paths)} leaves, "
                         f"but got {len(flat)}.")
    by_path = dict(flat)
    leaves = [by_path[path] for path in graphdef.paths]
    for index, (leaf, variable) in enumerate(zip(leaves, graphdef.variables)):
        if variable is not None and not isinstance(leaf, Variable):
            variable_type, metadata = variable
            leaves[index] = variable_type._new(leaf, dict(metadata))
    return jtu.tree_unflatten(graphdef.treedef, leaves)


def state(node: tp.Any, *filters: tp.Any, graph: bool | None = None) -> tp.Any:
    """The State of ``node`` (one State per filter if several are given);
    unlike ``split`` the filters need not cover every Variable."""
    _, *states = split(node, *filters, graph=graph, exhaustive=False)
    return states[0] if len(states) == 1 else tuple(states)


#: As flax: ``nnx.variables`` is ``nnx.state`` (the States hold the Variables themselves).
variables = state


def graphdef(node: tp.Any, *, graph: bool | None = None) -> GraphDef:
    """The ``GraphDef`` of ``node``."""
    return split(node, graph=graph)[0]


def _get_child(parent: tp.Any, key: tp.Any) -> tp.Any:
    if isinstance(parent, (List, Dict, State, dict, list, tuple)):
        return parent[key]
    return getattr(parent, key)


def update(node: tp.Any, state: tp.Any, /, *states: tp.Any) -> None:
    """Write State values (Variables or raw arrays) into ``node`` in place.

    >>> import tree_runtime as nnx, jax.numpy as jnp
    >>> model = nnx.Linear(1, 1, rngs=nnx.Rngs(0))
    >>> nnx.update(model, {'bias': jnp.ones(1)}); model.bias[...].tolist()
    [1.0]
    """
    for s in (state, *states):
        for path, value in to_flat_state(s):
            parent = node
            for key in path[:-1]:
                parent = _get_child(parent, key)
            target = _get_child(parent, path[-1])
            if isinstance(target, Variable):
                if isinstance(value, Variable):
                    target.update_from_state(value)
                else:
                    target.set_value(value)
            elif isinstance(parent, (List, Dict)):
                parent[path[-1]] = value
            else:
                setattr(parent, path[-1], value)


def clone(node: tp.Any, *, graph: bool | None = None) -> tp.Any:
    """An independent copy: new Variables holding the same (immutable) arrays."""
    _no_graph("clone", graph)
    variables_with_paths(node, "clone")
    return jax.tree.map(lambda x: x, node)


def pop(node: tp.Any, *filters: tp.Any) -> tp.Any:
    """Remove the Variables matching ``filters`` from ``node`` and return them.

    >>> import tree_runtime as nnx
    >>> class Foo(nnx.Module):
    ...   def __init__(self):
    ...     self.w, self.note = nnx.Param(1.0), nnx.Intermediate(2.0)
    >>> m = Foo(); popped = nnx.pop(m, nnx.Intermediate)
    >>> list(popped), hasattr(m, 'note')
    (['note'], False)
    """
    predicates = [to_predicate(f) for f in filters]
    found: list[list] = [[] for _ in predicates]

    def walk(path, value, seen):
        for key, child in _children(value):
            if isinstance(child, Variable):
                for group, predicate in zip(found, predicates):
                    if predicate((*path, key), child):
                        group.append(((*path, key), child, value, key))
                        break
            elif id(child) not in seen:
                seen.add(id(child))
                walk((*path, key), child, seen)

    walk((), node, {id(node)})
    for group in found:
        for _, _, parent, key in group:
            if isinstance(parent, Pytree) and key in vars(parent):
                delattr(parent, key)
    states = [State.from_flat_path((path, var) for path, var, _, _ in group) for group in found]
    return states[0] if len(states) == 1 else tuple(states)


def find_duplicates(node: tp.Any, /, *, only: tp.Any = ...) -> list[list[tuple]]:
    """Groups of paths that reach the same Variable or node (shared references).

    >>> import tree_runtime as nnx
    >>> class Tied(nnx.Module):
    ...   def __init__(self):
    ...     self.a = nnx.Param(1.0); self.b = self.a
    >>> nnx.find_duplicates(Tied())
    [[('a',), ('b',)]]
    """
    predicate = to_predicate(only)
    paths: dict[int, list[tuple]] = {}

    def walk(path, value):
        first = id(value) not in paths
        if isinstance(value, (Variable, Pytree)) and (not isinstance(value, Variable) or predicate(path, value)):
            paths.setdefault(id(value), []).append(path)
        if first and not isinstance(value, Variable):
            for key, child in _children(value):
                walk((*path, key), child)

    walk((), node)
    return [group for group in paths.values() if len(group) > 1]


def iter_graph(node: tp.Any, *, graph: bool | None = None) -> tp.Iterator[tuple[tuple, tp.Any]]:
    """Yield ``(path, value)`` for data only (Variables, arrays, nodes): in
    Tree Mode static attributes are not part of the tree."""

    def walk(path, value):
        if not isinstance(value, Variable):
            for key, child in _children(value):
                yield from walk((*path, key), child)
        yield path, value

    _no_graph("iter_graph", graph)
    variables_with_paths(node, "iter_graph")
    return walk((), node)


def map(f: tp.Callable[[tuple, tp.Any], tp.Any], node: tp.Any, /, *, graph: bool | None = None,
        recreate_variables: bool = True) -> tp.Any:
    """A copy of ``node`` with ``f(path, leaf)`` applied to each leaf of its State.

    Split, map, merge, as flax: a Variable-free node reachable twice comes back as two
    copies, and a non-Variable result where a Variable was becomes a Variable of that type
    again (``recreate_variables`` is accepted and ignored, as by flax's Tree Mode).

    >>> import tree_runtime as nnx, jax.numpy as jnp
    >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    >>> zeros = nnx.map(lambda path, v: jnp.zeros_like(v[...]), model, recreate_variables=False)
    >>> type(zeros.kernel).__name__, float(zeros.kernel[...].sum())
    ('Param', 0.0)
    """
    _no_graph("map", graph)
    graphdef, node_state = split(node)
    mapped = State.from_flat_path((path, f(path, leaf)) for path, leaf in to_flat_state(node_state))
    return merge(graphdef, mapped, recreate_variables=recreate_variables)


def _is_tree_node(value: tp.Any) -> bool:
    """Whether JAX flattens ``value`` into children (a container, a Module, a Pytree,
    ``None``) rather than taking it as a leaf; a Variable is a leaf of NNX walks."""
    if isinstance(value, Variable):
        return False
    leaves = jtu.tree_leaves(value, is_leaf=lambda x: x is not value)
    return not (len(leaves) == 1 and leaves[0] is value)


def recursive_map(f: tp.Callable[[tuple, tp.Any], tp.Any], node: tp.Any, /, *,
                  graph: bool | None = None) -> tp.Any:
    """Rebuild ``node`` bottom-up, replacing every node and leaf ``x`` at ``path`` with
    ``f(path, x)`` (children first, ``f`` then sees the rebuilt node).

    A tree walk, as flax's Tree Mode: a Variable reachable twice raises
    ``AliasingError``, and a node without Variables reachable twice is visited, and
    rebuilt, once per path (graph mode visits it once and keeps one object).

    >>> import tree_runtime as nnx
    >>> class Foo(nnx.Pytree):
    ...   def __init__(self, d):
    ...     self.d = d
    >>> foo = Foo(1)
    >>> seen = []
    >>> out = nnx.recursive_map(lambda path, x: seen.append(path) or x, [foo, foo])
    >>> seen, out[0] is out[1]
    ([(0,), (1,), ()], False)
    """
    _no_graph("recursive_map", graph)
    variables_with_paths(node, "recursive_map")

    def rebuild(path: tuple, value: tp.Any) -> tp.Any:
        if not _is_tree_node(value):
            return f(path, value)
        children, treedef = jtu.tree_flatten_with_path(value, is_leaf=lambda x: x is not value)
        new_children = [rebuild((*path, *nnx_path(key[:1])), child) for key, child in children]
        return f(path, jtu.tree_unflatten(treedef, new_children))

    return rebuild((), node)


def to_flat_state(state: tp.Any) -> list[tuple[tuple, tp.Any]]:
    """``[(path, leaf), ...]`` of a State, sorted by path."""
    # A Module passed instead of a State has no mapping: AttributeError, as flax.
    return (state if isinstance(state, State) else State(state.items())).flat_state()


def prefix(node: tp.Any, filter_map: tp.Any, /, *, graph: bool | None = None) -> tp.Any:
    """Replace each Variable of ``node`` with a prefix value (e.g. a vmap axis):
    the Tree Mode replacement of ``StateAxes``.  ``filter_map`` is a mapping
    ``{filter: value}`` (first match wins) or a function ``(path, variable)``.

    >>> import tree_runtime as nnx
    >>> bn = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
    >>> axes = nnx.prefix(bn, {nnx.Param: 0, ...: None})
    >>> axes.scale, axes.mean
    (0, None)
    """
    _no_graph("prefix", graph)
    if isinstance(filter_map, tp.Mapping):
        rules = [(to_predicate(f), value) for f, value in filter_map.items()]

        def prefix_fn(path, leaf):
            for predicate, value in rules:
                if predicate(path, leaf):
                    return value
            raise ValueError(f"No filter matched leaf at path {path!r}")
    else:
        prefix_fn = filter_map
    return jtu.tree_map_with_path(lambda p, leaf: prefix_fn(nnx_path(p), leaf), node, is_leaf=_is_variable)


def view(node: tp.Any, /, *, only: tp.Any = ..., raise_if_not_found: bool = True,
         graph: bool | None = None, **attributes: tp.Any) -> tp.Any:
    """A copy of ``node`` sharing its Variables, with static attributes changed
    (e.g. ``nnx.view(model, deterministic=True)``); ``node`` is untouched."""
    _no_graph("view", graph)
    copy = jax.tree.map(lambda x: x, node, is_leaf=_is_variable)
    predicate, found = to_predicate(only), set()
    for path, module in iter_modules(copy):
        for name, value in attributes.items():
            if isinstance(module, Module) and predicate(path, module) and name in vars(module):
                object.__setattr__(module, name, value)
                found.add(name)
    if raise_if_not_found and set(attributes) - found:
        raise ValueError(f"Could not find attributes {sorted(set(attributes) - found)} in any module.")
    return copy
