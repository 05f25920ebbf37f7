"""RNG streams as Modules: a stream holds a key and a counter Variable;
drawing folds the counter into the key and increments the counter, so RNG
state is ordinary Variable state that transforms write back."""

from __future__ import annotations

import functools
import typing as tp

import jax
import jax.numpy as jnp

from ._filters import to_predicate
from ._module import Module
from ._variables import RngCount, RngKey, Variable


class RngStream(Module):
    """One named stream: ``stream()`` returns a fresh key.

    >>> s = RngStream(0, tag='params'); k1, k2 = s(), s()
    >>> bool((jax.random.key_data(k1) != jax.random.key_data(k2)).any()), int(s.count[...])
    (True, 2)
    """

    def __init__(self, key: tp.Any, *, tag: str):
        if isinstance(key, int):
            key = jax.random.key(key)
        elif isinstance(key, jax.Array) and key.dtype == jnp.uint32:
            key = jax.random.wrap_key_data(key)
        if not isinstance(key, jax.Array) or not jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
            raise ValueError(f"Invalid rng value: {key}, expected a jax.Array of jax.dtypes.prng_key sub-dtype")
        self.tag = tag
        self.key = RngKey(key, tag=tag)
        self.count = RngCount(jnp.zeros(key.shape, dtype=jnp.uint32), tag=tag)

    def __call__(self) -> jax.Array:
        key = jax.random.fold_in(self.key[...], self.count[...])
        self.count[...] = self.count[...] + 1
        return key

    def fork(self) -> "RngStream":
        """A new independent stream seeded from this one."""
        return type(self)(self(), tag=self.tag)

    def split(self, k: int | tuple[int, ...]) -> "RngStream":
        """A stream with a leading axis of ``k`` independent keys (for vmap)."""
        return type(self)(jax.random.split(self(), k), tag=self.tag)


class Rngs(Module):
    """A set of named RNG streams; unknown names fall back to ``default``.

    >>> rngs = Rngs(0, dropout=1)
    >>> sorted(rngs), rngs.params().shape
    (['default', 'dropout'], ())
    """

    def __init__(self, default: tp.Any = None, **rngs: tp.Any):
        if default is not None:
            if isinstance(default, tp.Mapping):
                rngs = {**default, **rngs}
            else:
                rngs["default"] = default
        for tag, key in rngs.items():
            if isinstance(key, RngStream):
                key = key.key.get_value()
            setattr(self, tag, RngStream(key, tag=tag))

    def _stream(self, name: str, error: type[Exception]) -> RngStream:
        streams = vars(self)
        if name in streams:
            return streams[name]
        if "default" in streams:
            return streams["default"]
        raise error(f"No RngStream named '{name}' found in Rngs.")

    def __getattr__(self, name: str) -> RngStream:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._stream(name, AttributeError)

    def __getitem__(self, name: str) -> RngStream:
        return self._stream(name, KeyError)

    def __call__(self) -> jax.Array:
        return self.default()

    def __iter__(self):
        return (name for name, v in vars(self).items() if isinstance(v, RngStream))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, name: str) -> bool:
        return name in vars(self)

    def items(self):
        """``(name, stream)`` pairs."""
        return ((name, vars(self)[name]) for name in self)

    def fork(self) -> "Rngs":
        """New Rngs with a fresh key per stream (give each module its own)."""
        return Rngs(**{name: stream() for name, stream in self.items()})

    def split(self, k: int | tuple[int, ...]) -> "Rngs":
        """New Rngs whose streams hold ``k`` keys each (for vmapped init)."""
        return Rngs(**{name: jax.random.split(stream(), k) for name, stream in self.items()})


# jax.random samplers as methods: ``rngs.normal(shape)`` draws a key from the
# stream (the default stream for Rngs) and samples, like flax.
_SAMPLERS = ("bits", "uniform", "randint", "permutation", "choice", "normal", "truncated_normal",
             "bernoulli", "categorical", "gumbel", "laplace", "logistic", "exponential", "gamma",
             "beta", "poisson", "orthogonal", "rademacher")


def _sampler(name: str):
    sample = getattr(jax.random, name)

    def method(self, *args, **kwargs):
        return sample(self(), *args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"``jax.random.{name}`` with a fresh key from this stream."
    return method


for _name in _SAMPLERS:
    setattr(RngStream, _name, _sampler(_name))
    setattr(Rngs, _name, _sampler(_name))


def _split_streams(node: tp.Any, splits, only, squeeze) -> tp.Any:
    predicate = to_predicate(only)

    def split(stream):
        if not isinstance(stream, RngStream) or not predicate(("key",), stream.key):
            return stream
        keys = jax.random.split(stream(), splits)
        keys = keys[0] if squeeze else keys
        shape = stream.count.shape if squeeze else (*((splits,) if isinstance(splits, int) else splits), *stream.count.shape)
        new = object.__new__(RngStream)
        new.tag = stream.tag
        new.key = RngKey(keys, tag=stream.tag)
        new.count = RngCount(jnp.zeros(shape, dtype=jnp.uint32), tag=stream.tag)
        return new

    # Rebuild the containers around the streams (the input is not modified in
    # place: Tree Mode split_rngs is functional and returns the split copy).
    return jax.tree.map(split, node, is_leaf=lambda x: isinstance(x, (RngStream, Variable)))


def split_rngs(node: tp.Any = None, /, *, splits: int | tuple[int, ...], only: tp.Any = ...,
               squeeze: bool = False, graph: bool | None = None, graph_updates: bool | None = None):
    """Split RNG streams for a vmapped/scanned call (functional, or as a decorator).

    >>> import tree_runtime as nnx
    >>> @nnx.split_rngs(splits=4)
    ... @nnx.vmap(in_axes=(0,), out_axes=0)
    ... def keys(rngs):
    ...   return rngs.params()
    >>> keys(nnx.Rngs(0)).shape
    (4,)
    """
    if graph:
        from ._errors import GraphModeNotSupportedError

        raise GraphModeNotSupportedError("split_rngs")
    if node is None:
        def decorator(f):
            @functools.wraps(f)
            def wrapper(*args, **kwargs):
                args, kwargs = _split_streams((args, kwargs), splits, only, squeeze)
                return f(*args, **kwargs)
            return wrapper
        return decorator
    return _split_streams(node, splits, only, squeeze)
