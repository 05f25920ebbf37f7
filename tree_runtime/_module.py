"""Modules as pytrees: ``Module``, ``List``, ``Dict``, ``Sequential``,
``sow``/``perturb``, ``eval``/``train``, module iteration and ``capture``; and the
checks Tree Mode makes on a tree of them before handing it to JAX (no cycle, no
``pytree=False`` object, no Variable or mutable array ref reachable twice).

The data/static classification of attributes is ``Pytree``'s (``_pytree``).
"""

from __future__ import annotations

import functools
import typing as tp
from collections import abc

import jax
import jax.numpy as jnp
from jax import tree_util as jtu

from ._errors import AliasingError, CycleError, NonPytreeModuleError
from ._pytree import _MUTABLE_ARRAYS, Pytree, _sort_key, _Static, data, is_data
from ._state import State, split_state
from ._variables import Perturbation, Variable


class Module(Pytree):
    """Base class of layers and models: a Pytree with ``sow``, ``perturb``,
    ``eval``/``train`` and module iteration.

    >>> import tree_runtime as nnx
    >>> class Count(nnx.Module):
    ...   def __init__(self):
    ...     self.n = nnx.BatchStat(jnp.array(0))
    ...     self.name = 'counter'          # static: lives in the treedef
    >>> [type(x).__name__ for x in jax.tree.leaves(Count())]
    ['ArrayImpl']
    """

    def sow(self, variable_type: type[Variable], name: str, value: tp.Any,
            reduce_fn: tp.Callable = lambda xs, x: (*xs, x),
            init_fn: tp.Callable = lambda: ()) -> bool:
        """Record ``value`` under ``name``; collected by :func:`capture`.

        Outside ``capture`` the value is stored as an attribute (deprecated
        graph-mode style; inside a transform that new attribute is dropped).
        """
        captures = vars(self).get("__captures__")
        if captures is not None:
            for var in captures:
                if type(var) is variable_type:
                    current = var[name] if name in var else init_fn()
                    # Replace (not mutate) the dict so snapshots see a change.
                    var.set_raw_value({**var.get_raw_value(), name: reduce_fn(current, value)})
                    return True
            return False
        if name in vars(self):
            variable = getattr(self, name)
            variable.set_value(reduce_fn(variable.get_value(), value))
        else:
            setattr(self, name, variable_type(reduce_fn(init_fn(), value)))
        return True

    def perturb(self, name: str, value: tp.Any, variable_type: type[Variable] = Perturbation) -> tp.Any:
        """Return ``value + perturbation[name]`` so gradients w.r.t. the
        perturbation equal gradients w.r.t. the intermediate value."""
        captures = vars(self).get("__captures__")
        if captures is not None:
            for var in captures:
                if type(var) is variable_type:
                    if name not in var:
                        zeros = jax.tree.map(jnp.zeros_like, value)
                        var.set_raw_value({**var.get_raw_value(), name: zeros})
                    return var[name] + value
            return value
        if name not in vars(self):
            setattr(self, name, variable_type(jax.tree.map(jnp.zeros_like, value)))
        return getattr(self, name).get_value() + value

    def iter_modules(self) -> tp.Iterator[tuple[tuple, "Module"]]:
        """Yield ``(path, module)`` for this module and every submodule."""
        return iter_modules(self)

    def set_attributes(self, *filters: tp.Any, raise_if_not_found: bool = True, **attributes: tp.Any) -> None:
        """Set static attributes on every submodule that has them."""
        found = set()
        for _, module in iter_modules(self):
            for name, value in attributes.items():
                if hasattr(module, name):
                    object.__setattr__(module, name, value)
                    found.add(name)
        missing = set(attributes) - found
        if raise_if_not_found and missing:
            raise ValueError(f"Could not find at least one instance of the attributes: {missing}")

    def eval(self, **attributes: tp.Any) -> None:
        """Switch to evaluation: ``deterministic=True``, ``use_running_average=True``."""
        self.set_attributes(deterministic=True, use_running_average=True,
                            raise_if_not_found=False, **attributes)

    def train(self, **attributes: tp.Any) -> None:
        """Switch to training: ``deterministic=False``, ``use_running_average=False``."""
        self.set_attributes(deterministic=False, use_running_average=False,
                            raise_if_not_found=False, **attributes)


def _children(node: tp.Any) -> list[tuple[tp.Any, tp.Any]]:
    """Direct data children of a graph node, for graph-style walks."""
    if isinstance(node, (List, Dict)):
        return list(node._items())
    if isinstance(node, Pytree):
        nodes = node._nodes()
        return [(k, v) for k, v in sorted(vars(node).items()) if nodes.get(k, False)]
    if isinstance(node, (list, tuple)):
        return list(enumerate(node))
    if isinstance(node, dict):
        return sorted(node.items(), key=lambda kv: _sort_key(kv[0]))
    return []


#: Leaves that may not be reachable twice: Variables, and raw mutable array refs.
_STATE_LEAVES: tuple[type, ...] = (Variable,) + _MUTABLE_ARRAYS


def _is_variable(x: tp.Any) -> bool:
    return isinstance(x, Variable)


def check_pytree(node: tp.Any, prefix: tp.Any = 0) -> None:
    """Raise ``NonPytreeModuleError`` for objects declared ``pytree=False``.

    Such an object is an opaque JAX leaf.  ``prefix`` (a JAX-style prefix of
    ``node``) marks with ``None`` the leaves JAX passes through untouched
    (``vmap`` broadcast axes, ``jit`` static arguments, non-differentiated
    ``grad`` arguments): there flax Tree Mode accepts them, and so do we.

    >>> import tree_runtime as nnx
    >>> class Legacy(nnx.Module, pytree=False):
    ...   pass
    >>> check_pytree((Legacy(), 1), prefix=(None, 0))   # broadcast: fine
    >>> try:
    ...   check_pytree((Legacy(), 1))
    ... except NonPytreeModuleError as exc:
    ...   exc.category
    'non-pytree'
    """
    try:
        marks = jax.tree.broadcast(prefix, node, is_leaf=lambda x: x is None)
    except (ValueError, TypeError):  # a prefix that does not fit: JAX reports it
        return
    for mark, leaf in zip(jax.tree.leaves(marks, is_leaf=lambda x: x is None), jax.tree.leaves(node)):
        if mark is not None and isinstance(leaf, Pytree) and not leaf._pytree__is_pytree:
            raise NonPytreeModuleError(type(leaf).__name__)


def check_acyclic(tree: tp.Any, fn_name: str) -> None:
    """Raise ``CycleError`` if a graph node holds itself (``self.sub = self``, a child
    keeping its parent): a pytree cannot, and flattening it would never end.

    A plain depth-first walk over data children, before anything hands the tree to JAX.

    >>> import tree_runtime as nnx
    >>> class Loop(nnx.Module):
    ...   def __init__(self):
    ...     self.sub = self
    >>> try:
    ...   check_acyclic([Loop()], 'jit')
    ... except CycleError as exc:
    ...   exc.path
    '[0].sub'
    """
    on_path: set[int] = set()

    def walk(node: tp.Any, path: str) -> None:
        children = _children(node)
        if not children:
            return
        if id(node) in on_path:
            raise CycleError(fn_name, path)
        on_path.add(id(node))
        for key, child in children:
            walk(child, f"{path}.{key}" if isinstance(key, str) and key.isidentifier() else f"{path}[{key!r}]")
        on_path.discard(id(node))

    walk(tree, "")


def variables_with_paths(tree: tp.Any, fn_name: str = "split") -> list[tuple[tuple, tp.Any]]:
    """``(jax_path, leaf)`` pairs with Variables as leaves; rejects aliasing and cycles."""
    check_acyclic(tree, fn_name)
    check_pytree(tree)
    seen: dict[int, tuple] = {}
    leaves = jtu.tree_leaves_with_path(tree, is_leaf=_is_variable)
    for path, leaf in leaves:
        # A raw mutable array ref (jax.new_ref) is state as a Variable is: one ref reachable
        # twice is rejected as well (flax: "Duplicate Ref ... does not support shared references").
        if isinstance(leaf, _STATE_LEAVES):
            if id(leaf) in seen:
                raise AliasingError(fn_name, jtu.keystr(seen[id(leaf)]), jtu.keystr(path), type(leaf).__name__)
            seen[id(leaf)] = path
    return leaves


def iter_modules(node: tp.Any) -> tp.Iterator[tuple[tuple, Module]]:
    """Yield ``(path, module)`` pairs, children before parents.

    A tree walk, as flax's Tree Mode: a Variable reachable twice raises
    ``AliasingError`` and a ``pytree=False`` object ``NonPytreeModuleError``
    (when iteration starts); a submodule without Variables stored twice is
    yielded at both paths.  ``eval``/``train``/``set_attributes`` use it.

    >>> import tree_runtime as nnx
    >>> seq = nnx.Sequential(nnx.Linear(1, 1, rngs=nnx.Rngs(0)))
    >>> [path for path, _ in nnx.iter_modules(seq)]
    [('layers', 0), ('layers',), ()]
    """
    def walk(path, value):
        if isinstance(value, Variable):
            return
        for key, child in _children(value):
            yield from walk((*path, key), child)
        if isinstance(value, Module):
            yield path, value

    def checked():
        variables_with_paths(node, "iter_modules")
        yield from walk((), node)

    return checked()


class List(Module, abc.MutableSequence):
    """A list whose elements are pytree children (e.g. a stack of layers).
    A ``MutableSequence`` like flax's: ``append``, ``extend``, ``insert``,
    ``pop``, ``remove``, ``clear``, ``del``; slice assignment keeps the length.

    >>> import tree_runtime as nnx
    >>> layers = nnx.List([nnx.Param(1.0), nnx.Param(2.0)])
    >>> layers.append(nnx.Param(3.0)); len(layers), layers[-1].get_value()
    (3, 3.0)
    >>> layers.insert(0, nnx.Param(0.0)); del layers[1]; layers.pop().get_value()
    3.0
    >>> [p.get_value() for p in layers]
    [0.0, 2.0]
    """

    def __init__(self, items: tp.Iterable[tp.Any] = (), /):
        object.__setattr__(self, "_list", list(items if items is not None else ()))

    def _items(self):
        return list(enumerate(self._list))

    def _tree_flatten(self):
        data_flags = tuple(is_data(v) for v in self._list)
        children = [(jtu.SequenceKey(i), v) for i, v in enumerate(self._list) if data_flags[i]]
        statics = _Static(tuple(v for v, d in zip(self._list, data_flags) if not d))
        return children, (data_flags, statics)

    @classmethod
    def _tree_unflatten(cls, aux, children) -> "List":
        data_flags, statics = aux
        children, statics = iter(children), iter(statics.values)
        obj = object.__new__(cls)
        object.__setattr__(obj, "_list", [next(children) if d else next(statics) for d in data_flags])
        return obj

    def __getitem__(self, index):
        return self._list[index]

    def __setitem__(self, index, value) -> None:
        if isinstance(index, slice):  # flax: a slice is replaced element-wise
            values = list(value)
            if len(range(len(self._list))[index]) != len(values):
                raise ValueError("Length mismatch")
        self._list[index] = value

    def __delitem__(self, index) -> None:
        del self._list[index]

    def __len__(self) -> int:
        return len(self._list)

    def __iter__(self):
        return iter(self._list)

    def insert(self, index: int, value: tp.Any) -> None:
        """Insert an element before ``index`` (clamped, as ``list.insert``)."""
        self._list.insert(index, value)


class Dict(Module, abc.MutableMapping):
    """A dict whose values are pytree children; a ``MutableMapping`` like
    flax's (``update``, ``setdefault``, ``pop``, ``popitem`` — the *first*
    key, as the mixin does — ``keys``/``values``/``items``, ``del``).

    >>> import tree_runtime as nnx
    >>> d = nnx.Dict(a=nnx.Param(1.0))
    >>> d.update(b=nnx.Param(2.0)); d.setdefault('c', nnx.Param(3.0)).get_value()
    3.0
    >>> del d['a']; d.popitem()[0], list(d.keys())
    ('b', ['c'])
    """

    __hash__ = object.__hash__  # Mapping's __eq__ would remove it (flax: id)

    def __init__(self, *args: tp.Any, **kwargs: tp.Any):
        object.__setattr__(self, "_dict", dict(*args, **kwargs))

    def _items(self):
        return sorted(self._dict.items())

    def _tree_flatten(self):
        keys = tuple(sorted(self._dict))
        return [(jtu.DictKey(k), self._dict[k]) for k in keys], keys

    @classmethod
    def _tree_unflatten(cls, keys, children) -> "Dict":
        obj = object.__new__(cls)
        object.__setattr__(obj, "_dict", dict(zip(keys, children)))
        return obj

    def __getitem__(self, key):
        return self._dict[key]

    def __setitem__(self, key, value) -> None:
        self._dict[key] = value

    def __delitem__(self, key) -> None:
        del self._dict[key]

    def __getattr__(self, key):
        try:
            return object.__getattribute__(self, "_dict")[key]
        except KeyError:
            raise AttributeError(key) from None

    def __len__(self) -> int:
        return len(self._dict)

    def __iter__(self):
        return iter(self._dict)


class Sequential(Module):
    """Apply layers (or callables) in order; the output of one feeds the next.

    >>> import tree_runtime as nnx
    >>> model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.relu)
    >>> model(jnp.ones((1, 2))).shape
    (1, 3)
    """

    def __init__(self, *fns: tp.Callable):
        self.layers = List(fns)

    def __call__(self, *args, **kwargs):
        output = args if len(args) != 1 else args[0]
        for i, fn in enumerate(self.layers):
            output = fn(*args, **kwargs) if i == 0 else fn(output)
        return output


def capture(fn: tp.Any, *var_types: type[Variable], init: State | None = None,
            method_outputs: type[Variable] | None = None) -> tp.Callable:
    """Run ``fn`` and return ``(result, captured_state)`` for values recorded
    with ``sow``/``perturb``; ``init`` pre-fills them (the perturbation recipe).

    >>> import tree_runtime as nnx
    >>> class Foo(nnx.Module):
    ...   def __call__(self, x):
    ...     self.sow(nnx.Intermediate, 'h', x * 2)
    ...     return x
    >>> _, inter = nnx.capture(Foo(), nnx.Intermediate)(jnp.ones(2))
    >>> inter['h'].get_value()[0].tolist()
    [2.0, 2.0]
    """
    if isinstance(fn, type) and issubclass(fn, Variable):
        return lambda actual: capture(actual, fn, *var_types, init=init, method_outputs=method_outputs)
    bound = fn if isinstance(fn, Module) else getattr(fn, "__self__", None)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        module = bound if isinstance(bound, Module) else args[0]
        initial = {}
        if init is not None:
            for path, var in init.flat_state():
                initial.setdefault(path[:-1], {})[path[-1]] = var
        for path, m in iter_modules(module):
            boxes = {t: {} for t in var_types}
            for name, var in initial.get(path, {}).items():
                boxes.setdefault(type(var), {})[name] = var.get_value()
            # As data, so the boxes flow through transforms and get written back.
            m.__setattr__("__captures__", data(tuple(t(v) for t, v in boxes.items())))
        try:
            result = fn(*args, **kwargs)
        finally:
            collected = []
            for path, m in iter_modules(module):
                boxes = vars(m).get("__captures__", ())
                if "__captures__" in vars(m):
                    m.__delattr__("__captures__")
                for var in boxes:
                    if type(var) in var_types:
                        collected += [((*path, k), type(var)(v)) for k, v in var.items()]
        if not var_types:
            return result
        states = split_state(State.from_flat_path(collected), *var_types)
        return (result, *states)

    return wrapper
