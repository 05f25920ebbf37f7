# finding: NNX601 AI-Hypercomputer+maxtext src/maxtext/layers/pipeline.py:679
# message: `transform_metadata=` on `nnx.vmap` is silently ignored in Tree Mode (partition axis 'layers' not added)
# verdict: true
# graph: prints kernel out_sharding ('layers', 'embed', 'mlp')
# tree: prints kernel out_sharding ('embed', 'mlp')
# why: PipelineBase.__init__ builds its stages with `nnx.vmap(create_stage_fn, in_axes=0, out_axes=(None, 0, 0),
# why: spmd_axis_name=..., transform_metadata={nnx.PARTITION_NAME: "layers"})`, where create_stage_fn returns
# why: `nnx.split(stage_factory(r), nnx.Param, ...)`, then merges the result into `self.layers`. NNXDecoder builds it
# why: through create_nnx_pipeline when pipeline parallelism is configured (tests/integration/pipeline_parallelism_test.py).
# why: Graph mode adds the stacked axis 'layers' to each Variable's sharding; Tree Mode leaves it out, so the
# why: stacked parameters lose their partition name. The stage is reduced to one annotated Linear; the mesh names
# why: the annotation axes directly (maxtext maps logical names through its rules) and spmd_axis_name is left out.
import jax
import numpy as np
from flax import nnx


class Stage(nnx.Module):
  def __init__(self, rngs):
    kernel_init = nnx.with_partitioning(nnx.initializers.lecun_normal(), ('embed', 'mlp'))
    self.linear = nnx.Linear(4, 4, kernel_init=kernel_init, rngs=rngs)


def create_stage_fn(r):
  stage = Stage(r)
  return nnx.split(stage, nnx.Param, ...)


mesh = jax.sharding.Mesh(
    np.array(jax.devices()[:1]).reshape(1, 1, 1), ('layers', 'embed', 'mlp'),
    axis_types=(jax.sharding.AxisType.Auto,) * 3,
)
jax.set_mesh(mesh)
vmap_stages = nnx.vmap(
    create_stage_fn,
    in_axes=0,
    out_axes=(None, 0, 0),
    transform_metadata={nnx.PARTITION_NAME: "layers"},
)
num_stages = 2
batched_rngs = nnx.Rngs(params=jax.random.split(jax.random.key(0), num_stages))
graphdef, params, rest = vmap_stages(batched_rngs)
layers = nnx.merge(graphdef, params, rest)
print('kernel out_sharding', layers.linear.kernel.get_metadata()['out_sharding'])
