# finding: NNX105 AI-Hypercomputer+maxtext src/maxtext/models/models.py:368
# message: `Transformer` stores the same Rngs (`rngs`) at `self.vision_encoder.rngs` and `self.decoder.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: Transformer.__init__ builds `self.vision_encoder = VisionEncoder(config=cfg, mesh=mesh, rngs=rngs)` when
# why: `cfg.use_multimodal` and `self.decoder = NNXDecoder(..., rngs=rngs)` when `cfg.pure_nnx_decoder` (its default,
# why: types.py:1155). VisionEncoder stores `self.rngs = rngs` (encoders.py:33), NNXDecoder too (nnx_decoders.py:396).
# why: The project's own tests set use_multimodal=True (model_creation_utils_test.py:728 builds a Transformer through
# why: from_pretrained, vision_encoder_test.py for gemma3-4b), so the flagged path is one the project runs.
from types import SimpleNamespace

import jax.numpy as jnp
from flax import nnx


class VisionEncoder(nnx.Module):
  def __init__(self, config, mesh, *, rngs):
    self.config = config
    self.mesh = mesh
    self.rngs = rngs
    self.vision_encoder_layer_0 = nnx.Linear(4, 4, rngs=self.rngs)


class NNXDecoder(nnx.Module):
  def __init__(self, config, mesh, quant=None, model_mode='train', *, rngs):
    self.config = config
    self.mesh = mesh
    self.quant = quant
    self.model_mode = model_mode
    self.rngs = rngs
    self.layers = nnx.Linear(4, 4, rngs=rngs)


class Transformer(nnx.Module):
  def __init__(self, config, mesh, quant, *, model_mode='train', rngs):
    self.config = config
    self.mesh = mesh
    self.quant = quant
    self.model_mode = model_mode
    cfg = self.config
    self.token_embedder = nnx.Embed(num_embeddings=8, features=4, rngs=rngs)
    self.vision_encoder = (
        VisionEncoder(config=cfg, mesh=mesh, rngs=rngs) if getattr(cfg, "use_multimodal", False) else None
    )
    if cfg.pure_nnx_decoder:
      self.decoder = NNXDecoder(config=cfg, mesh=mesh, quant=self.quant, model_mode=self.model_mode, rngs=rngs)


config = SimpleNamespace(use_multimodal=True, pure_nnx_decoder=True)
model = Transformer(config, mesh=None, quant=None, rngs=nnx.Rngs(0))
graphdef, state = nnx.split(model)  # maxtext: from_pretrained / nnx.state(model) after construction
print('split ok')
