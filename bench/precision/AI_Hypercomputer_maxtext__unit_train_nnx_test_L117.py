# finding: NNX109 AI-Hypercomputer+maxtext tests/unit/train_nnx_test.py:117
# message: `_MoEBiasStub` stores `self` below itself (`self.DeepSeekMoeBlock_0`), a cycle: Tree Mode raises RecursionError or ValueError
# verdict: true
# graph: prints split ok
# tree: raises RecursionError: maximum recursion depth exceeded
# why: The test stub aliases itself under the names the train step looks up (`self.MoeBlock_0 = self`,
# why: `self.DeepSeekMoeBlock_0 = self`, ...). test_train_step_updates_decoder_and_mtp_routed_biases builds an
# why: nnx.Optimizer over the model and `nnx.split`s the train state: Tree Mode cannot flatten a cycle.
import jax.numpy as jnp
import optax
from flax import nnx


class GateLogit(nnx.Module):
  def __init__(self, bias_shape):
    self.bias = nnx.Param(jnp.zeros(bias_shape))


class _MoEBiasStub(nnx.Module):
  def __init__(self, bias_shape, sow_shape, update_val=1.0):
    self.gate = GateLogit(bias_shape)
    self.MoeBlock_0 = self
    self.DeepSeekMoeBlock_0 = self
    self.transformer_layer = self
    self.moe_layers = self
    self.sow_shape = sow_shape
    self.update_val = update_val


class _TinyDecoderMoEBias(nnx.Module):
  def __init__(self, vocab_size, hidden, rngs):
    self.embed = nnx.Embed(vocab_size, hidden, rngs=rngs)
    self.decoder = _MoEBiasStub(bias_shape=(3, 2), sow_shape=(2, 3), update_val=1.0)


class TrainStateNNX(nnx.Module):
  def __init__(self, model, optimizer):
    self.model = model
    self.optimizer = optimizer


model = _TinyDecoderMoEBias(8, hidden=4, rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.sgd(0.01), wrt=nnx.Param)
ts = TrainStateNNX(model, optimizer)
state_graphdef, state_pure = nnx.split(ts)
print('split ok')
