# finding: NNX105 erfanzar+EasyDeL easydel/trainers/proximal_policy_optimization_trainer/modeling_value_head.py:105
# message: `CausalLMWithValueHead` stores the same Rngs (`base_model`) at `self.rngs` and `self.model`: Tree Mode raises ValueError
# verdict: true
# graph: prints split ok
# tree: raises ValueError: Duplicate RngCount
# why: `rngs` defaults to None, so EasyDeLBaseModule.__init__ gets `rngs or base_model.rngs`, the base model's
# why: own Rngs, and `self.model = base_model` holds it again at `self.model.rngs`. True, though the message
# why: names the wrong value (`base_model` for `base_model.rngs`) and the second path (`self.model`).
import jax.numpy as jnp
from flax import nnx


class EasyDeLBaseModule(nnx.Module):
  """easydel/infra/base_module.py: the base of every model stores the Rngs it is given."""

  def __init__(self, config, *, rngs):
    self.config = config
    self.rngs = rngs


class CausalLM(EasyDeLBaseModule):
  def __init__(self, config, *, rngs):
    super().__init__(config=config, rngs=rngs)
    self.lm_head = nnx.Linear(4, 8, rngs=rngs)


class CausalLMWithValueHead(EasyDeLBaseModule):
  def __init__(self, base_model, *, rngs=None):
    super().__init__(config=base_model.config, rngs=rngs or base_model.rngs)
    self.model = base_model
    self.value_head = nnx.Linear(4, 1, use_bias=False, rngs=self.rngs)


base_model = CausalLM(config={}, rngs=nnx.Rngs(0))
model = CausalLMWithValueHead(base_model)  # as in the class docstring and the PPO trainer
graphdef, state = nnx.split(model)
print('split ok')
