# finding: NNX105 avitai+artifex src/artifex/generative_models/extensions/chemical/constraints.py:38
# message: `ChemicalConstraints` stores the same Rngs (`rngs`) at `self._rngs` and `self.rngs`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: Extension.__init__ (extensions/base/extensions.py:72) stores `self._rngs = rngs`; ChemicalConstraints calls it
# why: through ConstraintExtension and then stores `self.rngs = rngs` as well. MolecularModality.get_extensions builds
# why: it into an nnx.Dict (modality.py:98), and geometric models hold their extensions as `self.extensions = nnx.Dict`
# why: (models/geometric/base.py:48), which artifex's trainers split and transform with the model.
import dataclasses

import jax.numpy as jnp
from flax import nnx


@dataclasses.dataclass(frozen=True)
class ChemicalConstraintConfig:
  enforce_valence: bool = True
  tolerance: float = 0.1


class Extension(nnx.Module):
  def __init__(self, config, *, rngs):
    super().__init__()
    self.config = config
    self._rngs = rngs


class ModelExtension(Extension):
  pass


class ConstraintExtension(ModelExtension):
  def __init__(self, config, *, rngs):
    super().__init__(config, rngs=rngs)


class ChemicalConstraints(ConstraintExtension):
  def __init__(self, config, *, rngs):
    super().__init__(config, rngs=rngs)
    self.rngs = rngs
    self.enforce_valence = config.enforce_valence
    self.tolerance_levels = {"bond_length": 0.2, "valence": config.tolerance}
    self.standard_valences = {"H": 1, "C": 4, "N": 3, "O": 2}


class GeometricModel(nnx.Module):
  def __init__(self, extensions, *, rngs):
    self.extensions = extensions or nnx.Dict({})
    self.linear = nnx.Linear(3, 3, rngs=rngs)


rngs = nnx.Rngs(0)
extensions = nnx.Dict({"chemical": ChemicalConstraints(config=ChemicalConstraintConfig(), rngs=rngs)})
model = GeometricModel(extensions, rngs=nnx.Rngs(1))
graphdef, state = nnx.split(model)
print('split ok')
