"""Reproduction builders and program pieces shared by several grad semantics rules."""
from __future__ import annotations

from nnx_lint.api import Facts, flax_table, programs


def grad_application_code(facts: Facts, forward: str) -> str:
    """Reproduction code that applies the flagged transform and binds ``grads``.

    Uses the facts' ``transform``, ``has_aux``, ``argnums`` (int or tuple) and the
    differentiated ``position``; ``model`` and ``x`` must exist, the other differentiated
    positions get ``x``. ``forward`` is the loss over the model, with the placeholder ``M`` for it
    (replaced on the syntax tree).
    """
    transform = facts.transform if facts.transform in flax_table.GRAD_TRANSFORMS else "grad"
    position = programs.bounded_index(facts.position if isinstance(facts.position, int) else 0, "the position")
    argnums = [programs.bounded_index(a, "argnums") for a in facts.argnums or [position]
               if isinstance(a, int)] or [position]
    if position not in argnums:
        argnums = [position]
    count = max(argnums) + 1
    arguments = ["model" if i == position else "x" for i in range(count)]
    parameters = ["a%d" % i for i in range(count)]
    value = programs.sum_of(programs.filled(forward, expressions={"M": parameters[position]}),
                            *[programs.call("jnp.sum", parameter) for i, parameter in enumerate(parameters)
                              if i != position])
    tuple_argnums = bool(facts.argnums_is_tuple) or len(argnums) > 1
    options = {"argnums": programs.literal(tuple(argnums) if tuple_argnums else argnums[0])}
    has_aux = bool(facts.has_aux)
    if has_aux:
        value = programs.items(value, "0.0")
        options["has_aux"] = "True"
    result = "grads"
    if transform == "value_and_grad":
        result = "(_, aux), grads" if has_aux else "_, grads"
    elif has_aux:
        result = "grads, aux"
    gradient = programs.call(programs.call(programs.attribute("nnx", transform), "loss", **options), *arguments)
    return programs.lines(
        programs.function("loss", parameters, programs.returning(value)),
        programs.assign(result, gradient),
        programs.assign("grads", programs.subscript("grads", argnums.index(position)) if tuple_argnums else "grads"),
    )


#: Variable types that both ``flax.nnx`` and ``tree_runtime`` provide.
SHARED_VARIABLE_TYPES = frozenset({"Variable", "BatchStat", "Cache", "Intermediate", "Param", "Perturbation"})


def dedented(code: str) -> str:
    """``code`` dedented, without surrounding blank lines, ending in one newline."""
    import textwrap

    return textwrap.dedent(code).strip("\n") + "\n"
