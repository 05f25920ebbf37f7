"""Reproduction builders and program pieces shared by several custom vjp rules."""
from __future__ import annotations

from nnx_lint.api import Facts, programs


#: The FLIP's bwd (its Tree Mode rewrite): ``g`` is the output cotangent, Module-typed tangent.
TREE_BWD = """
    def f_bwd(res, g):
        cos_x, m = res
        m_g = nnx.clone(m)
        m_g.x[...] = cos_x * g
        return TANGENTS
"""


def tree_bwd(tangents: str) -> str:
    """:data:`TREE_BWD` returning ``tangents`` (a tuple, :func:`tangent_arguments`)."""
    return programs.filled(TREE_BWD, expressions={"TANGENTS": tangents})


def other_arguments(facts: Facts, index: int) -> list[str]:
    """Names of the primal's other (array) arguments; the Module is at ``index``."""
    names = [n for n in facts.primal_args or [] if isinstance(n, str) and n.isidentifier()]
    count = max(programs.bounded_index(len(names), "the number of primal arguments"), index + 1)
    return ["a%d" % i for i in range(count) if i != index]


def tangent_arguments(others: list[str], index: int) -> str:
    """The tangents tuple: ``m_g`` at ``index``, zero tangents for the scalar array arguments."""
    return programs.items(*["m_g" if i == index else "jnp.zeros(())" for i in range(len(others) + 1)])


#: The Module every custom_vjp reproduction differentiates.
_FOO = """
class Foo(nnx.Module):
    def __init__(self):
        self.x = nnx.Param(jnp.array(1.0))
"""


def vjp_program(others: list[str], bwd: str, index: int = 0, primal_write: str = "", fwd_write: str = "",
                differentiated: bool = True) -> str:
    """A one-Param Module ``Foo`` through ``nnx.custom_vjp`` ``f`` with ``bwd``, differentiated by ``nnx.grad``
    (unless not ``differentiated``: the caller then differentiates and observes it its own way).
    ``primal_write`` / ``fwd_write``: a statement run first in ``f`` / ``f_fwd``."""
    parameters = list(others)
    parameters.insert(index, "m")
    primal = programs.function("f", parameters, [primal_write, programs.returning(
        programs.sum_of("jnp.sin(m.x[...])", *others))], decorators=["nnx.custom_vjp"])
    fwd = programs.function("f_fwd", parameters, [fwd_write, programs.returning(
        programs.items(programs.call("f", *parameters), "(jnp.cos(m.x[...]), m)"))])
    values = ["Foo()" if name == "m" else "jnp.ones(())" for name in parameters]
    differentiate = programs.lines(
        programs.assign("grads", programs.call(programs.call("nnx.grad", "f", argnums=programs.literal(index)),
                                               *values)),
        "return type(grads).__name__")
    return programs.lines(_FOO, primal, fwd, bwd, "f.defvjp(f_fwd, f_bwd)") + (differentiate if differentiated else "")
