# finding: NNX104 google+tunix tests/distillation/distillation_trainer_test.py:42
# message: `nnx.jit`-transformed `_create_sharded_model` returns `model` and `nnx.state(model)`, one object twice: Tree Mode raises ValueError
# verdict: true
# graph: prints created ok
# tree: raises ValueError: Duplicate Param
# why: `_create_sharded_model` builds `tc.ToyTransformer(config=tc.ModelConfig(vocab_size=256), rngs=rngs)` under
# why: `nnx.jit(static_argnums=(0,))`, takes `state = nnx.state(model)` and returns `model, state`: the model's
# why: Variables leave the transform twice. Graph mode dedups them; Tree Mode rejects the shared references.
# why: A test method calls it for the student and the teacher (test lines 203, 206). ToyTransformer is
# why: reduced to an Embed, an nnx.List of one decoder and a Linear head.
import dataclasses

import jax
import numpy as np
from flax import nnx

_VOCAB_SIZE = 256


@dataclasses.dataclass(frozen=True)
class ModelConfig:
  vocab_size: int = 256
  num_layers: int = 1


class Decoder(nnx.Module):
  def __init__(self, *, rngs):
    self.attn = nnx.Linear(16, 16, rngs=rngs)


class ToyTransformer(nnx.Module):
  def __init__(self, config, *, rngs):
    self.config = config
    self.emb = nnx.Embed(config.vocab_size, 16, rngs=rngs)
    self.layers = nnx.List([Decoder(rngs=rngs) for _ in range(config.num_layers)])
    self.lm_head = nnx.Linear(in_features=16, out_features=config.vocab_size, rngs=rngs)
    self.head_dim = 16


def create_sharded_model(model_ctor, rngs, mesh):
  @nnx.jit(static_argnums=(0,))
  def _create_sharded_model(model_ctor, rngs):
    model = model_ctor(config=ModelConfig(vocab_size=_VOCAB_SIZE), rngs=rngs)
    state = nnx.state(model)
    pspecs = nnx.get_partition_spec(state)
    sharded_state = jax.lax.with_sharding_constraint(state, pspecs)
    nnx.update(model, sharded_state)
    return model, state

  with mesh:
    model, state = _create_sharded_model(model_ctor, rngs)
  state_sharding = nnx.get_named_sharding(state, mesh)
  return model, state_sharding


mesh = jax.sharding.Mesh(devices=np.array(jax.devices()[:1]).reshape(1, 1), axis_names=('fsdp', 'tp'))
student_model, _ = create_sharded_model(ToyTransformer, nnx.Rngs(0), mesh)
print('created ok')
