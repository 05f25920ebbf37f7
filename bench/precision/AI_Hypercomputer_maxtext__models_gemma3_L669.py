# finding: NNX105 AI-Hypercomputer+maxtext src/maxtext/models/gemma3.py:669
# message: `Gemma3VisionEncoderLayer` stores the same Rngs (`self.rngs`) at `self.rngs` and `self.VisionExit.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: Gemma3VisionEncoderLayer stores `self.rngs = rngs` (gemma3.py:643) and builds
# why: `self.VisionExit = VisionExit(output_length=256, rngs=self.rngs)`; VisionExit stores `self.rngs = rngs` (:605).
# why: VisionEncoder builds the layer for a Gemma3 vision block (encoders.py:45) when use_multimodal is set, as the
# why: project's gemma3-4b vision_encoder_test does. The Conv, Dropout and Encoder it also builds are reduced to a Conv.
import jax.numpy as jnp
from flax import nnx


class VisionExit(nnx.Module):
  def __init__(self, output_length: int = 256, *, rngs):
    self.output_length = output_length
    self.rngs = rngs


class Gemma3VisionEncoderLayer(nnx.Module):
  def __init__(self, config, mesh, *, rngs):
    self.config = config
    self.mesh = mesh
    self.rngs = rngs
    self.embedding = nnx.Conv(3, 4, kernel_size=(2, 2), strides=2, padding="VALID", rngs=self.rngs)
    self.VisionExit = VisionExit(output_length=256, rngs=self.rngs)


class VisionEncoder(nnx.Module):
  def __init__(self, config, mesh, *, rngs):
    self.config = config
    self.mesh = mesh
    self.rngs = rngs
    setattr(self, "Gemma3VisionEncoderLayer_0", Gemma3VisionEncoderLayer(config=self.config, mesh=self.mesh, rngs=self.rngs))


encoder = VisionEncoder(config={}, mesh=None, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(encoder)  # maxtext: nnx.state(model) / from_pretrained after construction
print('split ok')
