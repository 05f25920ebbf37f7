"""NNX705 ``scalar-in-data-container``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from nnx_lint.api import Facts, Invalid, Reproduction, Rule, Valid, flax_table, programs, raises


_SCALAR_TYPES = (int, float, bool, str)


@dataclass(frozen=True, kw_only=True)
class ScalarInDataContainerFacts(Facts):
    """What ``NNX705`` reports (the diagnostic's ``facts``, in this order)."""

    scalars: str
    scalar_values: list


class ScalarInDataContainer(Rule):
    """Python scalars inside an `nnx.data(...)` container next to Variables.

    What it does:
        Flags `nnx.data(<tuple, list or dict literal>)` whose elements mix Variables or
        Modules with Python scalars (`int`, `float`, `bool`, `str` literals).

    Why is this bad?:
        Graph-mode flattening keeps non-array leaves of data containers static. In Tree Mode
        the container is a pytree and the scalar becomes a leaf: it appears in `nnx.state`
        (checkpoint structure changes), is traced under `jit` (`TypeError: Shapes must be 1D
        sequences of concrete values of integer type` when used as a shape) and
        differentiated by `grad`; floats are silently traced. Keep scalars in plain (static)
        attributes, `nnx.static(...)`, or `nnx.List`/`nnx.Dict` elements.

    References:
        - Patterns in the catalogue: [H5](../catalogue.md#h5)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX705"
    visits_nnx_calls_only = True
    facts_type = ScalarInDataContainerFacts
    no_fix_reason = "the error comes from the container's contents, not from the mode of one call, so no call-site keyword keeps graph mode for it; keep the scalars out of the `nnx.data` container (or in `nnx.Variable`s / arrays), which needs the author's judgement"
    symbol = "scalar-in-data-container"
    kind = "raises"
    catalogue = ("H5",)
    message = (
        "Python scalar(s) {scalars} in `nnx.data(...)` next to Variables: Tree Mode makes them "
        "traced leaves (TypeError as static values)"
    )
    help = (
        "In Tree Mode they become traced pytree leaves, part of `nnx.state`, so using them as static "
        "values raises TypeError. Store them in a plain attribute or `nnx.static(...)` instead"
    )
    VALID = [
        Valid(
            "static-attributes",
            """
            import jax.numpy as jnp
            from flax import nnx

            class M(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.ones(4))
                    self.cfg_param = nnx.Param(jnp.ones(1))
                    self.cfg_size = 2
                    self.layers = nnx.data([nnx.Linear(2, 2, rngs=nnx.Rngs(0))])
                    self.sizes = nnx.List([1, 2])
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "tuple-with-int",
            """
            import jax.numpy as jnp
            from flax import nnx

            class M(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.ones(4))
                    self.cfg = nnx.data((nnx.Param(jnp.ones(1)), 2))  # NNX705
                def __call__(self):
                    return jnp.zeros(self.cfg[1]) + self.w.sum()
            """,
            tree_mode=raises("TypeError", "Shapes must be 1D sequences of concrete values"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """A Param next to the flagged scalar in ``nnx.data((...))``, read under ``nnx.jit``:
        an int used as a shape raises (it is a traced leaf); a float/bool is silently traced
        (the observation is whether the jitted code saw a Python scalar); a string cannot be
        a leaf at all. The control keeps the scalar in a plain (static) attribute."""
        values = facts.scalar_values or [2]
        value = values[0]
        scalar = programs.literal(value)  # a literal of the analysed code: only ever repr'd plain data

        def made(cfg: str) -> str:  # the Module, its configuration stored by ``cfg``
            return programs.filled("class M(nnx.Module):\n    def __init__(self):\n"
                                   "        self.w = nnx.Param(jnp.ones(4))\n        CFG\n\nm = M()\n",
                                   statements={"CFG": cfg})

        model = made(programs.filled("self.cfg = nnx.data((nnx.Param(jnp.ones(1)), SCALAR))",
                                     expressions={"SCALAR": scalar}))
        # the control's configuration is static: a plain tuple
        static = made(programs.filled("self.cfg_param = nnx.Param(jnp.ones(1))\nself.cfg = (None, SCALAR)",
                                      expressions={"SCALAR": scalar}))
        if isinstance(value, int) and not isinstance(value, bool):
            use = "return list(nnx.jit(lambda m: jnp.zeros(m.cfg[1]) + m.w.sum())(m).shape)\n"
            return Reproduction(model + use, expect_error="other:TypeError", control=static + use)
        if isinstance(value, str):
            use = "nnx.jit(lambda m: m.w.sum())(m)\nreturn 'ran'\n"
            return Reproduction(model + use, expect_error="non-pytree", control=static + use)
        kind = "bool" if isinstance(value, bool) else "float"
        # the observation: a Python scalar inside the trace?
        use = programs.filled("seen = []\nnnx.jit(lambda m: seen.append(isinstance(m.cfg[1], KIND)))(m)\n"
                              "return seen[0]\n", {"KIND": kind})
        return Reproduction(model + use, expect_tree=False, expect_graph=True, control=static + use)

    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        if call is None or call.name != "data" or not call.args:
            return
        container = call.args[0]
        if isinstance(container, (nodes.Tuple, nodes.List)):
            elements = list(container.elts)
        elif isinstance(container, nodes.Dict):
            elements = [value for _, value in container.items]
        else:
            return
        scalars = [e for e in elements if isinstance(e, nodes.Const) and isinstance(e.value, _SCALAR_TYPES)]
        if not scalars:
            return
        has_state = False
        for element in elements:
            if isinstance(element, nodes.Call):
                ref = self.context.classes.class_of(element)
                if ref is not None and (ref.qualified_name.startswith(flax_table.NNX_PREFIX) or (
                        ref.definition is not None and self.context.classes.info(ref.definition).is_nnx_module)):
                    has_state = True
        if not has_state:
            return
        self.report(node, scalars=", ".join(s.as_string() for s in scalars),
                    scalar_values=[s.value for s in scalars])
