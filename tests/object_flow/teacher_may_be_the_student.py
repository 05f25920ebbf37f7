"""A distillation wrapper whose teacher may be its student, passed whole to a jitted step.

Modelled on self-distillation set-ups (a `Distiller` Module holding `student` and `teacher`,
`self.teacher = student if cfg.self_distill else build_teacher(rngs)`, the whole wrapper given to
`nnx.jit`): when the flag is on, one MLP is at `.student` and `.teacher`, and Tree Mode rejects
the aliased input. The object-flow model follows both arms of the conditional: with the flag a
literal `True` both paths hold the student on every run (NNX103, *must*); with a flag read from a
config the model cannot see, only on the runs that take that arm (NNX103, *may*, naming the
conditional); with a literal `False` the arm is never taken (silent), and an `nnx.clone` of the
student is a fresh object (silent). Run with flax 0.12.8 (`python <this file>`, and with
`NNX_GRAPH_MODE=false NNX_GRAPH_UPDATES=false` for Tree Mode): graph mode prints `ok` four times;
Tree Mode prints `ValueError Duplicate ...` for the first two steps and `ok` for the others.
"""
import dataclasses
import json

import jax
import jax.numpy as jnp
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, din: int, dout: int, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(din, 8, rngs=rngs)
        self.out = nnx.Linear(8, dout, rngs=rngs)

    def __call__(self, x):
        return self.out(nnx.relu(self.hidden(x)))


@dataclasses.dataclass
class DistillConfig:
    self_distill: bool = False
    temperature: float = 2.0


def load_config(text: str) -> DistillConfig:
    return DistillConfig(**json.loads(text))


def build_teacher(rngs: nnx.Rngs) -> MLP:
    return MLP(4, 3, rngs)


class Distiller(nnx.Module):
    def __init__(self, student: MLP, cfg: DistillConfig, rngs: nnx.Rngs):
        self.student = student
        self.teacher = student if cfg.self_distill else build_teacher(rngs)
        self.temperature = cfg.temperature


class ClonedDistiller(nnx.Module):
    def __init__(self, student: MLP, cfg: DistillConfig, rngs: nnx.Rngs):
        self.student = student
        self.teacher = nnx.clone(student) if cfg.self_distill else build_teacher(rngs)


@nnx.jit
def distill_step(distiller, x):
    teacher_probs = jax.nn.softmax(jax.lax.stop_gradient(distiller.teacher(x)))
    return -jnp.mean(jnp.sum(teacher_probs * jax.nn.log_softmax(distiller.student(x)), axis=-1))


def run(step):
    try:
        step()
        print("ok")
    except ValueError as error:
        print("ValueError", str(error).splitlines()[0])


x = jnp.ones((2, 4))
self_distilled = Distiller(MLP(4, 3, nnx.Rngs(0)), DistillConfig(self_distill=True), nnx.Rngs(1))
run(lambda: distill_step(self_distilled, x))  # NNX103
configured = Distiller(MLP(4, 3, nnx.Rngs(0)), load_config('{"self_distill": true}'), nnx.Rngs(1))
run(lambda: distill_step(configured, x))  # NNX103
separate = Distiller(MLP(4, 3, nnx.Rngs(0)), DistillConfig(self_distill=False), nnx.Rngs(1))
run(lambda: distill_step(separate, x))
cloned = ClonedDistiller(MLP(4, 3, nnx.Rngs(0)), DistillConfig(self_distill=True), nnx.Rngs(1))
run(lambda: distill_step(cloned, x))
