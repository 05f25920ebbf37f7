"""Variables: mutable boxes around one value, registered as JAX pytrees.

A Variable flattens to its value (one child) with its metadata as static aux
data, so ``jax.tree.map(f, variable)`` builds a *new* Variable of the same
type: that copy-on-flatten is what lets Tree Mode transforms snapshot state.
"""

from __future__ import annotations

import dataclasses
import operator
import typing as tp

import jax
import jax.extend
import jax.numpy as jnp
from jax import tree_util as jtu

from ._errors import TraceContextError


def current_trace() -> tp.Any:
    """An opaque token for the JAX trace we are in (how flax detects closures)."""
    return jax.extend.core.get_opaque_trace_state(convention="nnx")


def _flatten_with_keys(v: "Variable"):
    return ((jtu.GetAttrKey("value"), v._raw_value),), tuple(sorted(v._var_metadata.items()))


def _flatten(v: "Variable"):
    return (v._raw_value,), tuple(sorted(v._var_metadata.items()))


def _register(cls: type) -> None:
    jtu.register_pytree_with_keys(
        cls,
        _flatten_with_keys,
        lambda metadata, children: cls._new(children[0], dict(metadata)),
        _flatten,
    )


def _binary(name: str, reflected: bool = False):
    op = getattr(operator, name)

    def method(self, other):
        other = other.get_value() if isinstance(other, Variable) else other
        a, b = (other, self.get_value()) if reflected else (self.get_value(), other)
        return op(a, b)

    return method


class Variable:
    """A mutable container for one value (usually a ``jax.Array``) plus metadata.

    Read with ``v[...]`` (or ``v.value``), write with ``v[...] = x``.  Metadata
    keywords (e.g. ``out_sharding``) are readable as attributes.

    >>> import jax.numpy as jnp
    >>> v = Param(jnp.array([1.0, 2.0]), out_sharding=('data',))
    >>> v[...] = v[...] * 2
    >>> v[...].tolist(), v.out_sharding
    ([2.0, 4.0], ('data',))
    """

    _raw_value: tp.Any
    _var_metadata: dict
    _trace: tp.Any

    def __init__(self, value: tp.Any, **metadata: tp.Any):
        if isinstance(value, VariableMetadata):  # from with_metadata(...) initializers
            value, metadata = value.raw_value, {**value.metadata, **metadata}
        if "sharding" in metadata:  # flax's old spelling
            metadata["out_sharding"] = metadata.pop("sharding")
        object.__setattr__(self, "_raw_value", value)
        object.__setattr__(self, "_var_metadata", dict(metadata))
        object.__setattr__(self, "_trace", current_trace())

    def __init_subclass__(cls, **kwargs):
        # Registration happens when the class is created: a user subclass is a
        # pytree without any decorator, as in flax.
        super().__init_subclass__(**kwargs)
        _register(cls)

    @classmethod
    def _new(cls, value: tp.Any, metadata: dict) -> "Variable":
        obj = object.__new__(cls)
        object.__setattr__(obj, "_raw_value", value)
        object.__setattr__(obj, "_var_metadata", metadata)
        object.__setattr__(obj, "_trace", current_trace())
        return obj

    def _check_can_update(self) -> None:
        # A Variable captured by closure belongs to an outer trace: writing a
        # tracer into it would leak; flax raises TraceContextError too.
        if self._trace != current_trace():
            raise TraceContextError(type(self).__name__)

    # -- value access -------------------------------------------------------
    def get_value(self, *, index: tp.Any = None) -> tp.Any:
        """Return the value (or ``value[index]``), with flax's indexing rules."""
        value = self._raw_value
        if index is None or (index is Ellipsis and isinstance(value, jax.Array)):
            return value
        return value[index]

    def set_value(self, value: tp.Any, *, index: tp.Any = None) -> None:
        """Replace the value (or ``value[index]``).  Writing through an index
        keeps the stored array's dtype and shape (``.at[index].set``), as flax."""
        self._check_can_update()
        raw = self._raw_value
        if index is None:
            new = value
        elif isinstance(raw, jax.Array):
            same = (index is Ellipsis and isinstance(value, jax.Array) and value.shape == raw.shape
                    and value.dtype == raw.dtype)
            new = value if same else raw.at[index].set(value)
        else:
            raw[index] = value  # dicts and lists; TypeError for scalars, as in flax
            return
        object.__setattr__(self, "_raw_value", new)

    def get_raw_value(self) -> tp.Any:
        """Return the stored value without hooks."""
        return self._raw_value

    def set_raw_value(self, value: tp.Any) -> None:
        """Store ``value`` without hooks."""
        self._check_can_update()
        object.__setattr__(self, "_raw_value", value)

    @property
    def value(self) -> tp.Any:
        """The stored value (flax deprecates this spelling in favour of ``v[...]``)."""
        return self.get_value()

    @value.setter
    def value(self, value: tp.Any) -> None:
        self.set_value(value)

    def __getitem__(self, index):
        return self.get_value(index=index)

    def __setitem__(self, index, value) -> None:
        self.set_value(value, index=index)

    def __contains__(self, key) -> bool:
        return key in self._raw_value

    def items(self):
        """Items of a dict-valued Variable (used by ``capture``)."""
        return self._raw_value.items()

    # -- metadata -----------------------------------------------------------
    def get_metadata(self, name: str | None = None, default: tp.Any = None) -> tp.Any:
        """All metadata as a dict, or one entry."""
        if name is None:
            return dict(self._var_metadata)
        return self._var_metadata.get(name, default)

    def set_metadata(self, name: str | None = None, value: tp.Any = None, **entries: tp.Any) -> None:
        """Set metadata entries: ``set_metadata('k', v)`` or ``set_metadata(k=v)``."""
        if name is not None:
            entries[name] = value
        self._var_metadata.update(entries)

    def __getattr__(self, name: str) -> tp.Any:
        # Only called when normal lookup fails: expose metadata as attributes.
        metadata = object.__getattribute__(self, "_var_metadata")
        if name in metadata:
            return metadata[name]
        # Then the value's own attributes (v.T, v.sum, ...), as flax does.
        return getattr(object.__getattribute__(self, "_raw_value"), name)

    def __setattr__(self, name: str, value: tp.Any) -> None:
        if name == "value":
            object.__setattr__(self, name, value)  # goes through the property
        else:
            self._var_metadata[name] = value

    def update_from_state(self, other: "Variable") -> None:
        """Copy value and metadata from ``other`` (how transforms write back)."""
        object.__setattr__(self, "_raw_value", other._raw_value)
        if other._var_metadata != self._var_metadata:
            object.__setattr__(self, "_var_metadata", dict(other._var_metadata))

    def replace(self, value: tp.Any) -> "Variable":
        """A new Variable of the same type and metadata holding ``value``."""
        return type(self)._new(value, dict(self._var_metadata))

    def copy(self) -> "Variable":
        """A shallow copy (new box, same value)."""
        return self.replace(self._raw_value)

    # -- array-like behaviour -----------------------------------------------
    @property
    def shape(self):
        """Shape of the value."""
        return jnp.shape(self._raw_value)

    @property
    def dtype(self):
        """Dtype of the value."""
        return jnp.result_type(self._raw_value)

    @property
    def sharding(self):
        """Sharding of the value."""
        return self._raw_value.sharding

    def __jax_array__(self):
        return self.get_value()

    def __array__(self, dtype=None, copy=None):
        import numpy as np

        return np.asarray(self.get_value(), dtype=dtype)

    def __len__(self) -> int:
        return len(self._raw_value)

    def __iter__(self):
        return iter(self._raw_value)

    def __call__(self, *args, **kwargs):
        return self._raw_value(*args, **kwargs)

    def __neg__(self):
        return -self.get_value()

    def __float__(self):
        return float(self.get_value())

    def __int__(self):
        return int(self.get_value())

    def __bool__(self):
        return bool(self.get_value())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(value={self._raw_value!r}, {self._var_metadata})"

    # In-place operators would rebind the attribute to a plain array and the
    # update would silently escape the Variable; flax refuses them the same way.
    def _inplace(self, other):
        raise NotImplementedError(
            "In-place operations are no longer supported for Variable. "
            "Use `variable[...] += x` instead."
        )

    __iadd__ = __isub__ = __imul__ = __itruediv__ = __imatmul__ = _inplace
    __hash__ = None  # type: ignore[assignment]  # unhashable, as in flax


# Arithmetic applies to the value (flax defines no ordering operators).
for _name in ("add", "sub", "mul", "truediv", "floordiv", "pow", "matmul", "mod", "and_", "or_", "xor"):
    _dunder = _name.rstrip("_")
    setattr(Variable, f"__{_dunder}__", _binary(_name))
    setattr(Variable, f"__r{_dunder}__", _binary(_name, reflected=True))
Variable.__eq__ = _binary("eq")  # compares values, like flax
_register(Variable)


@dataclasses.dataclass
class VariableMetadata:
    """An initial value plus metadata; ``Variable(...)`` unpacks it.

    >>> Param(VariableMetadata(1.0, {'out_sharding': ('a',)})).out_sharding
    ('a',)
    """

    raw_value: tp.Any
    metadata: tp.Mapping[str, tp.Any] = dataclasses.field(default_factory=dict)


def with_metadata(initializer: tp.Callable, **metadata: tp.Any) -> tp.Callable:
    """Wrap an initializer so the Variable it initializes carries ``metadata``.

    >>> import jax
    >>> init = with_metadata(jax.nn.initializers.zeros, out_sharding=('din', 'dout'))
    >>> Param(init(jax.random.key(0), (2, 3))).out_sharding
    ('din', 'dout')
    """

    def wrapped(*args, **kwargs):
        return VariableMetadata(initializer(*args, **kwargs), dict(metadata))

    return wrapped


def with_partitioning(initializer: tp.Callable, sharding: tp.Any, **metadata: tp.Any) -> tp.Callable:
    """``with_metadata(initializer, out_sharding=sharding)``."""
    return with_metadata(initializer, out_sharding=tuple(sharding), **metadata)


class Param(Variable):
    """A trainable parameter.

    >>> import jax.numpy as jnp
    >>> Param(jnp.array(1.0))[...].item()
    1.0
    """


class BatchStat(Variable):
    """Running statistics (e.g. BatchNorm mean/var); not differentiated by optimizers."""


class Cache(Variable):
    """Autoregressive decoding cache entries."""


class Intermediate(Variable):
    """Values recorded by ``Module.sow`` inside ``capture``."""


class Perturbation(Intermediate):
    """Zero-valued perturbations recorded by ``Module.perturb`` to read intermediate gradients."""


class RngState(Variable):
    """Base class of RNG state Variables (keys and counters)."""


class RngKey(RngState):
    """The key of an RNG stream."""


class RngCount(RngState):
    """The counter of an RNG stream (uint32, folded into the key on each draw)."""


class OptState(Variable):
    """Optimizer state (e.g. the step counter)."""


class OptArray(OptState):
    """Optimizer state that mirrors a plain array."""


class OptVariable(OptState):
    """Optimizer state that mirrors a Variable (keeps its metadata)."""


