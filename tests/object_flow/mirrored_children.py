"""maxtext's Qwen3CustomMoeDecoderLayer, reduced: a subclass overrides the attention child its base class
stores, and the MoE child holds the Rngs at two depths (tests/test_object_contexts.py). Passed to `nnx.jit`,
`one` runs in graph mode and raises `ValueError: Duplicate RngCount` in Tree Mode (flax 0.12.8)."""
from flax import nnx


class Attention(nnx.Module):
    def __init__(self, rngs):
        self.rngs = rngs


class CustomAttention(Attention):
    pass


class MoE(nnx.Module):
    def __init__(self, rngs):
        self.gate = Gate(rngs)
        self.rngs = rngs


class Gate(nnx.Module):
    def __init__(self, rngs):
        self.rngs = rngs


class DecoderLayer(nnx.Module):
    def __init__(self, rngs):
        self.self_attention = Attention(rngs)


class CustomLayer(DecoderLayer):
    def __init__(self, rngs):
        super().__init__(rngs)
        self.self_attention = CustomAttention(rngs)
        self.moe_block = MoE(rngs)


def build(rngs):
    return CustomLayer(rngs)


one = CustomLayer(nnx.Rngs(0))
two = build(nnx.Rngs(1))
