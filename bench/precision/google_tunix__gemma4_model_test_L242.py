# finding: NNX112 google+tunix tests/models/gemma4/model_test.py:242
# message: `lora_model.set_attributes(qwix_rngs=...)` shares one Rngs across Modules: Tree Mode raises (Duplicate)
# verdict: true
# graph: prints loss ok
# tree: raises ValueError: Duplicate RngCount
# why: test_remat_qwix_lora_compatibility builds a Gemma4, applies qwix LoRA (`qwix.apply_lora_to_model`), then calls
# why: `lora_model.set_attributes(qwix_rngs=nnx.Rngs(0))`. apply_lora_to_model gives every module of the model a
# why: `qwix_rngs` attribute (qwix/_src/model.py:216, reset to None at :226), so set_attributes stores the one Rngs in
# why: every module. The test then passes lora_model to an `nnx.jit` train step taking `nnx.value_and_grad`.
# why: qwix is not needed to show it: the modules below carry the attribute as apply_lora_to_model leaves it.
# why: Changed so that it runs with flax 0.12.8 at all: qwix assigns `module.qwix_rngs = None` after construction, which
# why: flax 0.12.8 records as a static attribute, so the test's set_attributes raises in both modes alike ("Cannot
# why: assign data value of type Rngs to static attribute 'qwix_rngs'"). Here the None is `nnx.data(None)`, as the
# why: bonsai program's list becomes nnx.List. Taken literally on flax 0.12.8, the test fails in both modes at line 242.
import jax
import jax.numpy as jnp
from flax import nnx


class Attention(nnx.Module):
  def __init__(self, rngs):
    self.q_einsum = nnx.Linear(4, 4, rngs=rngs)
    self.qwix_rngs = nnx.data(None)


class Block(nnx.Module):
  def __init__(self, rngs):
    self.attn = Attention(rngs)
    self.mlp = nnx.Linear(4, 4, rngs=rngs)
    self.qwix_rngs = nnx.data(None)


class Gemma4(nnx.Module):
  def __init__(self, rngs):
    self.layers = nnx.List([Block(rngs)])
    self.qwix_rngs = nnx.data(None)

  def __call__(self, tok):
    x = tok
    for layer in self.layers:
      x = layer.mlp(layer.attn.q_einsum(x))
    return x, None


lora_model = Gemma4(nnx.Rngs(0))
lora_model.set_attributes(qwix_rngs=nnx.Rngs(0))
tokens = jnp.ones((2, 4))


@nnx.jit
def train_step(m, tok):
  def loss_fn(model_in):
    logits, _ = model_in(tok)
    return jnp.sum(logits)

  return nnx.value_and_grad(loss_fn)(m)


loss, grads = train_step(lora_model, tokens)
print('loss ok')
