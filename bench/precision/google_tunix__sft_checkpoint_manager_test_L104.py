# finding: NNX104 google+tunix tests/sft/checkpoint_manager_test.py:104
# message: `nnx.jit`-transformed `_create_sharded_model` returns `model` and `nnx.state(model)`, one object twice: Tree Mode raises ValueError
# verdict: true
# graph: prints created ok
# tree: raises ValueError: Duplicate Param
# why: `_create_sharded_model` builds the model under `nnx.jit`, takes `state = nnx.state(model)` (a State of the
# why: model's own Variables) and returns `model, state`: the Variables leave the transform twice. Graph mode
# why: dedups them; Tree Mode rejects the shared references in the output.
import jax
import numpy as np
from flax import nnx


class TestModel(nnx.Module):
  def __init__(self, rngs):
    kernel_init_fn = nnx.initializers.lecun_normal()
    self.w1 = nnx.Linear(2, 4, rngs=rngs, kernel_init=nnx.with_partitioning(kernel_init_fn, ('fsdp', 'tp')))
    self.w2 = nnx.Linear(4, 2, rngs=rngs, kernel_init=nnx.with_partitioning(kernel_init_fn, ('tp', 'fsdp')))


def create_sharded_model(model_ctor, rngs, mesh):
  @nnx.jit(static_argnums=(0,))
  def _create_sharded_model(model_ctor, rngs):
    model = model_ctor(rngs)
    state = nnx.state(model)
    pspecs = nnx.get_partition_spec(state)
    sharded_state = jax.lax.with_sharding_constraint(state, pspecs)
    nnx.update(model, sharded_state)
    return model, state

  with jax.set_mesh(mesh):  # the test writes `with mesh:`; flax 0.12.8 wants an auto mesh for annotated Variables
    model, state = _create_sharded_model(model_ctor, rngs)
  return model, nnx.get_named_sharding(state, mesh)


mesh = jax.sharding.Mesh(devices=np.array(jax.devices()[:1]).reshape(1, 1), axis_names=('fsdp', 'tp'))
model, state_sharding = create_sharded_model(TestModel, nnx.Rngs(0), mesh)
print('created ok')
