"""What flax's own layers hold, as data: the layer part of the flax table.

Measured on flax 0.12.8 (CPU): each layer constructed, its leaves listed with their
Variable type and dtype, the attributes that hold Variables or submodules read from the
instance, and ``nnx.grad`` applied in Tree Mode (TypeError exactly for the layers with RNG
state). ``tests/test_flax_table.py`` checks these tables against the installed flax.
The rest of what nnx-lint knows about ``flax.nnx`` (names, transforms, Variable types,
mode setters) is :mod:`nnx_lint.flax_table.nnx_api`.
"""
from __future__ import annotations

from dataclasses import dataclass

#: Categories of a held leaf (what ``jax.grad`` does with it in Tree Mode).
PARAM = "param"            #: a float ``Param`` (or ``Param`` subclass such as ``LoRAParam``)
RNG = "rng"                #: ``RngKey`` (key data) / ``RngCount`` (uint32) of a stored Rngs/RngStream
INTEGER = "integer"        #: an integer or bool Variable / array leaf
FLOAT_STATE = "float"      #: a float leaf that is not a ``Param`` (BatchStat, Cache, float Variable, array)
UNKNOWN_DTYPE = "unknown-dtype"  #: a non-Param Variable whose dtype the code does not show

#: Categories that make ``jax.grad`` raise ``TypeError`` (non-inexact dtype).
NON_DIFFERENTIABLE = frozenset({RNG, INTEGER})
#: Categories that receive gradients in Tree Mode but not in graph mode.
NON_PARAM = frozenset({RNG, INTEGER, FLOAT_STATE, UNKNOWN_DTYPE})


@dataclass(frozen=True)
class LayerSpec:
    """What a ``flax.nnx`` layer holds after ``__init__`` (flax 0.12.8).

    ``leaves``: ``(path, variable_type, category)`` always held.
    ``rng_when``: when it stores an RngStream (``RngKey`` + ``RngCount``):
    ``"rngs-given"`` (a non-None ``rngs=``), ``"dropout-rate"`` (MultiHeadAttention:
    ``dropout_rate > 0`` and ``keep_rngs`` not False), ``"keep-rngs"`` (RNN cells:
    ``keep_rngs=True``), ``"unless-rngs-false"`` (RNN: ``rngs=True`` is the default).
    ``children``: positional argument indexes / keyword names holding submodules.
    ``all_positional``: every positional argument is a submodule (Sequential).
    """

    leaves: tuple[tuple[str, str, str], ...] = ()
    rng_when: str | None = None
    #: Non-Param leaves read by the forward pass: "always", or "use_running_average" (only
    #: when constructed with ``use_running_average=True``; else decided at call time).
    read_when: str | None = None
    rng_path: str = "rngs"
    children: tuple[int | str, ...] = ()
    all_positional: bool = False


_PARAMS = (("", "Param", PARAM),)
_CELL = LayerSpec(_PARAMS, rng_when="keep-rngs")

#: ``flax.nnx.<Layer>`` -> what an instance holds. Measured on flax 0.12.8 (CPU): each layer
#: constructed, its leaves listed with their Variable type and dtype, and ``nnx.grad``
#: applied in Tree Mode (TypeError exactly for the rows with RNG state).
FLAX_LAYERS: dict[str, LayerSpec] = {
    **{f"flax.nnx.{name}": LayerSpec(_PARAMS) for name in (
        "Linear", "LinearGeneral", "Einsum", "Conv", "ConvTranspose", "Embed", "LayerNorm",
        "RMSNorm", "GroupNorm", "InstanceNorm", "PReLU", "LoRALinear",
    )},
    "flax.nnx.LoRA": LayerSpec((("", "LoRAParam", PARAM),), children=("base_module",)),
    "flax.nnx.BatchNorm": LayerSpec(
        _PARAMS + (("mean", "BatchStat", FLOAT_STATE), ("var", "BatchStat", FLOAT_STATE)),
        read_when="use_running_average",
    ),
    "flax.nnx.SpectralNorm": LayerSpec((("batch_stats", "BatchStat", FLOAT_STATE),), children=(0, "layer_instance")),
    "flax.nnx.WeightNorm": LayerSpec((("scales", "array", FLOAT_STATE),), children=(0, "layer_instance"), read_when="always"),
    "flax.nnx.Dropout": LayerSpec(rng_when="rngs-given"),
    "flax.nnx.MultiHeadAttention": LayerSpec(_PARAMS, rng_when="dropout-rate"),
    "flax.nnx.LSTMCell": _CELL,
    "flax.nnx.OptimizedLSTMCell": _CELL,
    "flax.nnx.GRUCell": _CELL,
    "flax.nnx.SimpleCell": _CELL,
    "flax.nnx.RNN": LayerSpec(rng_when="unless-rngs-false", children=(0, "cell")),
    "flax.nnx.Bidirectional": LayerSpec(children=(0, 1, "forward_rnn", "backward_rnn")),
    "flax.nnx.Sequential": LayerSpec(all_positional=True),
}


#: Variable attributes of flax layers (``self.head.kernel = self.embed.embedding``).
FLAX_VARIABLE_ATTRIBUTES: dict[str, frozenset[str]] = {
    "Linear": frozenset({"kernel", "bias"}),
    "LinearGeneral": frozenset({"kernel", "bias"}),
    "Einsum": frozenset({"kernel", "bias"}),
    "LoRALinear": frozenset({"kernel", "bias"}),
    "Conv": frozenset({"kernel", "bias"}),
    "ConvTranspose": frozenset({"kernel", "bias"}),
    "Embed": frozenset({"embedding"}),
    "LayerNorm": frozenset({"scale", "bias"}),
    "RMSNorm": frozenset({"scale"}),
    "BatchNorm": frozenset({"scale", "bias", "mean", "var"}),
    "GroupNorm": frozenset({"scale", "bias"}),
    "InstanceNorm": frozenset({"scale", "bias"}),
    "LoRA": frozenset({"lora_a", "lora_b"}),
    "PReLU": frozenset({"negative_slope"}),
}
#: Submodule attributes of flax classes.
FLAX_SUBMODULE_ATTRIBUTES: dict[str, frozenset[str]] = {
    "Sequential": frozenset({"layers"}),
    "ModelAndOptimizer": frozenset({"model"}),
    "LoRA": frozenset({"base_module"}),
    "WeightNorm": frozenset({"layer_instance"}),
    "SpectralNorm": frozenset({"layer_instance"}),
    "RNN": frozenset({"cell"}),
    "Bidirectional": frozenset({"forward_rnn", "backward_rnn"}),
    "MultiHeadAttention": frozenset({"query", "key", "value", "out"}),
}
#: Constructor arguments flax classes keep as they are: (position, keyword, stored path).
FLAX_STORED_ARGUMENTS: dict[str, tuple[tuple[int | None, str, tuple[str, ...]], ...]] = {
    "LoRA": ((None, "base_module", ("base_module",)),),
    "WeightNorm": ((0, "layer_instance", ("layer_instance",)),),
    "SpectralNorm": ((0, "layer_instance", ("layer_instance",)),),
    "RNN": ((0, "cell", ("cell",)),),
    "Bidirectional": ((0, "forward_rnn", ("forward_rnn",)), (1, "backward_rnn", ("backward_rnn",))),
    "ModelAndOptimizer": ((0, "model", ("model",)),),
}
