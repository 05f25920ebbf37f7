"""Layers enough for real programs, numerically identical to flax's:
``Linear``, ``Embed`` (with ``attend``), ``Dropout``, ``BatchNorm``,
``LayerNorm``.  Each draws its keys from ``rngs`` in flax's order, so the
same seed gives the same parameters in both implementations."""

from __future__ import annotations

import typing as tp

import jax
import jax.numpy as jnp

from ._module import Module
from ._pytree import data
from ._rngs import Rngs, RngStream
from ._variables import BatchStat, Param

default_kernel_init = jax.nn.initializers.lecun_normal()
default_bias_init = jax.nn.initializers.zeros
default_embed_init = jax.nn.initializers.variance_scaling(1.0, "fan_in", "normal", out_axis=0)


class Linear(Module):
    """``y = x @ kernel + bias``.

    >>> import tree_runtime as nnx
    >>> nnx.Linear(2, 3, rngs=nnx.Rngs(0))(jnp.ones((4, 2))).shape
    (4, 3)
    """

    def __init__(self, in_features: int, out_features: int, *, use_bias: bool = True,
                 dtype=None, param_dtype=jnp.float32, kernel_init=default_kernel_init,
                 bias_init=default_bias_init, rngs: Rngs, kernel_metadata: tp.Mapping = {},
                 bias_metadata: tp.Mapping = {}):
        self.kernel = Param(kernel_init(rngs.params(), (in_features, out_features), param_dtype),
                            **kernel_metadata)
        if use_bias:
            self.bias = Param(bias_init(rngs.params(), (out_features,), param_dtype), **bias_metadata)
        else:
            self.bias = data(None)
        self.in_features, self.out_features, self.use_bias = in_features, out_features, use_bias
        self.dtype, self.param_dtype = dtype, param_dtype

    def __call__(self, inputs: jax.Array) -> jax.Array:
        y = jnp.dot(inputs, self.kernel[...])
        if self.bias is not None:
            y = y + self.bias[...]
        return y


class Embed(Module):
    """Token embedding; ``attend`` reuses the table as an output projection
    (weight tying without a shared Variable).

    >>> import tree_runtime as nnx
    >>> emb = nnx.Embed(10, 4, rngs=nnx.Rngs(0))
    >>> emb.attend(emb(jnp.array([1, 2]))).shape
    (2, 10)
    """

    def __init__(self, num_embeddings: int, features: int, *, dtype=None, param_dtype=jnp.float32,
                 embedding_init=default_embed_init, rngs: Rngs):
        self.embedding = Param(embedding_init(rngs.params(), (num_embeddings, features), param_dtype))
        self.num_embeddings, self.features = num_embeddings, features
        self.dtype, self.param_dtype = dtype, param_dtype

    def __call__(self, inputs: jax.Array) -> jax.Array:
        if not jnp.issubdtype(inputs.dtype, jnp.integer):
            raise ValueError("Input type must be an integer or unsigned integer.")
        return jnp.take(self.embedding[...], inputs, axis=0)

    def attend(self, query: jax.Array) -> jax.Array:
        """Inner products of ``query`` with every embedding vector."""
        return jnp.dot(query, self.embedding[...].T)


class Dropout(Module):
    """Randomly zero inputs with probability ``rate`` (scaled by ``1/(1-rate)``).

    >>> import tree_runtime as nnx
    >>> drop = nnx.Dropout(0.5, rngs=nnx.Rngs(0)); drop.eval()
    >>> drop(jnp.ones(3)).tolist()
    [1.0, 1.0, 1.0]
    """

    def __init__(self, rate: float, *, broadcast_dims: tp.Sequence[int] = (), deterministic: bool = False,
                 rng_collection: str = "dropout", rngs: Rngs | RngStream | None = None):
        self.rate, self.broadcast_dims = rate, broadcast_dims
        self.deterministic, self.rng_collection = deterministic, rng_collection
        if isinstance(rngs, Rngs):
            self.rngs = rngs[rng_collection].fork()  # its own stream: no sharing
        elif isinstance(rngs, RngStream):
            self.rngs = rngs.fork()
        else:
            self.rngs = data(None)

    def __call__(self, inputs, *, deterministic: bool | None = None, rngs=None):
        deterministic = self.deterministic if deterministic is None else deterministic
        if self.rate == 0.0 or deterministic:
            return inputs
        if self.rate == 1.0:
            return jnp.zeros_like(inputs)
        rngs = self.rngs if rngs is None else rngs
        key = rngs[self.rng_collection]() if isinstance(rngs, Rngs) else rngs() if isinstance(rngs, RngStream) else rngs
        keep_prob = 1.0 - self.rate
        shape = [1 if i in self.broadcast_dims else d for i, d in enumerate(inputs.shape)]
        mask = jnp.broadcast_to(jax.random.bernoulli(key, p=keep_prob, shape=shape), inputs.shape)
        return jax.lax.select(mask, inputs / keep_prob, jnp.zeros_like(inputs))


def _draw(rngs: Rngs | None, value: jax.Array) -> jax.Array:
    if rngs is not None:
        rngs.params()
    return value


def _stats(x: jax.Array, axes: tuple[int, ...]) -> tuple[jax.Array, jax.Array]:
    # flax's fast variance: E[x^2] - E[x]^2, clipped at 0, in >= float32.
    x = jnp.asarray(x, jnp.promote_types(x.dtype, jnp.float32))
    mean, mean2 = x.mean(axes), jnp.square(x).mean(axes)
    return mean, jnp.maximum(0.0, mean2 - jnp.square(mean))


class BatchNorm(Module):
    """Batch normalization over all axes but the last, with running statistics
    in ``BatchStat`` Variables (updated in training mode).

    >>> import tree_runtime as nnx
    >>> bn = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
    >>> _ = bn(jnp.array([[0.0, 2.0], [2.0, 4.0]])); [round(v, 4) for v in bn.mean[...].tolist()]
    [0.01, 0.03]
    """

    def __init__(self, num_features: int, *, use_running_average: bool = False, axis: int = -1,
                 momentum: float = 0.99, epsilon: float = 1e-5, dtype=None, param_dtype=jnp.float32,
                 use_bias: bool = True, use_scale: bool = True, rngs: Rngs | None = None):
        self.mean = BatchStat(jnp.zeros((num_features,), jnp.float32))
        self.var = BatchStat(jnp.ones((num_features,), jnp.float32))
        # flax draws a params key for each (constant) initializer: keep the
        # stream in step so later layers get the same keys.
        self.scale = Param(_draw(rngs, jnp.ones((num_features,), param_dtype))) if use_scale else data(None)
        self.bias = Param(_draw(rngs, jnp.zeros((num_features,), param_dtype))) if use_bias else data(None)
        self.num_features, self.use_running_average, self.axis = num_features, use_running_average, axis
        self.momentum, self.epsilon, self.dtype = momentum, epsilon, dtype

    def __call__(self, x, use_running_average: bool | None = None, *, mask=None):
        use_running_average = self.use_running_average if use_running_average is None else use_running_average
        axes = tuple(i for i in range(x.ndim) if i != x.ndim - 1)
        if use_running_average:
            mean, var = self.mean[...], self.var[...]
        else:
            mean, var = _stats(x, axes)
            self.mean[...] = self.momentum * self.mean[...] + (1 - self.momentum) * mean
            self.var[...] = self.momentum * self.var[...] + (1 - self.momentum) * var
        return _normalize(x, mean, var, self.scale, self.bias, self.epsilon)


def _normalize(x, mean, var, scale, bias, epsilon):
    y = x - mean
    mul = jax.lax.rsqrt(var + epsilon)
    if scale is not None:
        mul = mul * scale[...]
    y = y * mul
    if bias is not None:
        y = y + bias[...]
    return y


class LayerNorm(Module):
    """Layer normalization over the last axis.

    >>> import tree_runtime as nnx
    >>> ln = nnx.LayerNorm(2, rngs=nnx.Rngs(0))
    >>> ln(jnp.array([[1.0, 3.0]])).round(3).tolist()
    [[-1.0, 1.0]]
    """

    def __init__(self, num_features: int, *, epsilon: float = 1e-6, dtype=None, param_dtype=jnp.float32,
                 use_bias: bool = True, use_scale: bool = True, rngs: Rngs | None = None):
        # flax draws a params key for each (constant) initializer: keep the
        # stream in step so later layers get the same keys.
        self.scale = Param(_draw(rngs, jnp.ones((num_features,), param_dtype))) if use_scale else data(None)
        self.bias = Param(_draw(rngs, jnp.zeros((num_features,), param_dtype))) if use_bias else data(None)
        self.num_features, self.epsilon, self.dtype = num_features, epsilon, dtype

    def __call__(self, x, *, mask=None):
        mean, var = _stats(x, (x.ndim - 1,))
        return _normalize(x, mean[..., None], var[..., None], self.scale, self.bias, self.epsilon)


# Activations are jax's own functions, re-exported under flax's names.
PARTITION_NAME = "partition_name"  # metadata key flax uses for the partition axis name
relu = jax.nn.relu
gelu = jax.nn.gelu
silu = jax.nn.silu
swish = jax.nn.swish
sigmoid = jax.nn.sigmoid
tanh = jnp.tanh
softmax = jax.nn.softmax
log_softmax = jax.nn.log_softmax
one_hot = jax.nn.one_hot
initializers = jax.nn.initializers
