"""Reproduction builders and program pieces shared by several custom vjp rules."""
from __future__ import annotations

from nnx_lint.api import Facts, programs


#: The FLIP's bwd (its Tree Mode rewrite): ``g`` is the output cotangent, Module-typed tangent.
TREE_BWD = """
    def f_bwd(res, g):
        cos_x, m = res
        m_g = nnx.clone(m)
        m_g.x[...] = cos_x * g
        return ({tangents},)
"""


def other_arguments(facts: Facts, index: int) -> list[str]:
    """Names of the primal's other (array) arguments; the Module is at ``index``."""
    names = [n for n in facts.primal_args or [] if isinstance(n, str) and n.isidentifier()]
    count = max(programs.bounded_index(len(names), "the number of primal arguments"), index + 1)
    return [f"a{i}" for i in range(count) if i != index]


def tangent_arguments(others: list[str], index: int) -> str:
    """``m_g`` at ``index``, zero tangents for the scalar array arguments."""
    return ", ".join("m_g" if i == index else "jnp.zeros(())" for i in range(len(others) + 1))


def vjp_program(others: list[str], bwd: str, index: int = 0, primal_write: str = "", fwd_write: str = "",
                differentiated: bool = True) -> str:
    """A one-Param Module ``Foo`` through ``nnx.custom_vjp`` ``f`` with ``bwd``, differentiated by ``nnx.grad``
    (unless not ``differentiated``: the caller then differentiates and observes it its own way)."""
    import textwrap

    parameters = list(others)
    parameters.insert(index, "m")
    signature = ", ".join(parameters)
    extra = "".join(f" + {name}" for name in others)
    values = ", ".join("Foo()" if name == "m" else "jnp.ones(())" for name in parameters)
    program = f"""
class Foo(nnx.Module):
    def __init__(self):
        self.x = nnx.Param(jnp.array(1.0))

@nnx.custom_vjp
def f({signature}):{primal_write}
    return jnp.sin(m.x[...]){extra}

def f_fwd({signature}):{fwd_write}
    return f({signature}), (jnp.cos(m.x[...]), m)
"""
    differentiate = f"grads = nnx.grad(f, argnums={index})({values})\nreturn type(grads).__name__\n"
    return (textwrap.dedent(program).strip("\n") + "\n\n" + textwrap.dedent(bwd).strip("\n") + "\n\n"
            + "f.defvjp(f_fwd, f_bwd)\n" + (differentiate if differentiated else ""))
