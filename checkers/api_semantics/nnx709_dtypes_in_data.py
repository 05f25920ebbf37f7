"""NNX709 ``dtypes-in-data``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from nnx_lint.api import Facts, Invalid, Reproduction, Rule, Valid, flax_table, programs, raises



@dataclass(frozen=True, kw_only=True)
class DtypesInDataFacts(Facts):
    """What ``NNX709`` reports (the diagnostic's ``facts``, in this order)."""

    dtypes: str


class DtypesInData(Rule):
    """dtypes stored in an `nnx.data(...)` attribute (`nnx.data(jax.tree.map(lambda v: v.dtype, state))`).

    What it does:
        Flags `nnx.data(X)` where `X` is made of dtypes: a `jax.tree.map` whose function
        returns `<value>.dtype` or `getattr(<value>, "dtype", ...)` (a tree of the
        parameters' dtypes, kept to cast back later), a dtype such as `jnp.float32` or
        `jnp.dtype(...)`, or a list, tuple or dict literal of those.

    Why is this bad?:
        Graph mode keeps the non-array leaves of a data attribute static, so the Module
        goes through `nnx.jit` and the other transforms. In Tree Mode `nnx.data` makes the
        attribute part of the pytree and each dtype a leaf, which JAX rejects: `TypeError:
        Error interpreting argument to <function> as an abstract array ... Float32DType`
        (google/tunix's gradient accumulator breaks this way). Wrap them in
        `nnx.static(...)`, or keep a single dtype in a plain (static) attribute.

    References:
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX709"
    visits_nnx_calls_only = True
    facts_type = DtypesInDataFacts
    no_fix_reason = ("what makes the attribute a leaf is `nnx.data` itself, not the mode of one call: no "
                     "call-site keyword keeps graph mode for it; store the dtypes as a plain attribute")
    symbol = "dtypes-in-data"
    kind = "raises"
    message = "`nnx.data(...)` holds dtypes ({dtypes}): in Tree Mode they are leaves; transforms raise TypeError"
    help = (
        "In Tree Mode `nnx.data` puts the attribute in the pytree, and a dtype is not a valid JAX leaf. Wrap "
        "the dtypes in `nnx.static(...)` (a single dtype may also be a plain attribute)"
    )
    VALID = [
        Valid(
            "plain-attribute",
            """
            import jax, jax.numpy as jnp
            from flax import nnx

            class Accumulator(nnx.Module):
                def __init__(self, model):
                    state = nnx.state(model, nnx.Param)
                    self.dtypes = nnx.static(jax.tree.map(lambda v: v[...].dtype, state,
                                                          is_leaf=lambda x: isinstance(x, nnx.Variable)))
                    self.grads = nnx.data(jax.tree.map(jnp.zeros_like, state))
                    self.compute_dtype = jnp.float32
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "tree-of-dtypes",
            """
            import jax, jax.numpy as jnp
            from flax import nnx

            class Accumulator(nnx.Module):
                def __init__(self, model):
                    state = nnx.state(model, nnx.Param)
                    self.dtypes = nnx.data(jax.tree.map(lambda v: v[...].dtype, state,  # NNX709
                                                        is_leaf=lambda x: isinstance(x, nnx.Variable)))
                    self.count = nnx.Variable(jnp.zeros(()))

            def run():
                accumulator = Accumulator(nnx.Linear(2, 2, rngs=nnx.Rngs(0)))
                nnx.jit(lambda a: a.count[...] + 1)(accumulator)
            """,
            tree_mode=raises("TypeError", "Error interpreting argument"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """A Module holding ``nnx.data({"w": jnp.float32})`` next to a Param, passed to
        ``nnx.jit``; the control stores the same dict as a plain attribute."""

        def made(dtypes: str) -> str:  # the program, the dtypes stored as ``dtypes``
            return programs.filled("class M(nnx.Module):\n    def __init__(self):\n"
                                   "        self.w = nnx.Param(jnp.ones(2))\n        self.dtypes = DTYPES\n\n"
                                   "m = M()\nnnx.jit(lambda m: m.w[...].sum())(m)\nreturn 'ran'\n",
                                   expressions={"DTYPES": dtypes})

        # the control stores the dict as a plain (static) attribute
        model, control = made("nnx.data({'w': jnp.float32})"), made("{'w': jnp.float32}")
        return Reproduction(model, expect_error="other:TypeError", control=control)

    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        if call is None or call.name != "data" or not call.args:
            return
        made_of = self._dtypes(call.args[0])
        if made_of is not None:
            self.report(node, dtypes=made_of)

    def _dtypes(self, value: nodes.NodeNG, depth: int = 0) -> str | None:
        """How ``value`` is made of dtypes (shown in the message), or None."""
        if depth > 3:
            return None
        if isinstance(value, (nodes.List, nodes.Tuple, nodes.Set)) and value.elts:
            found = [self._dtypes(element, depth + 1) for element in value.elts]
            return found[0] if all(found) else None
        if isinstance(value, nodes.Dict) and value.items:
            found = [self._dtypes(item, depth + 1) for _, item in value.items]
            return found[0] if all(found) else None
        if isinstance(value, nodes.Call) and self.context.qualified_name(value.func) in flax_table.TREE_MAPS and value.args:
            function = value.args[0]
            if isinstance(function, nodes.Lambda) and _is_dtype_read(function.body):
                return "a `jax.tree.map` of `.dtype`"
            return None
        if _is_dtype_read(value) or self._is_dtype(value):
            return f"`{programs.clipped(value.as_string(), 20)}`"
        return None

    def _is_dtype(self, value: nodes.NodeNG) -> bool:
        """``jnp.float32``, ``np.dtype("int8")``: a dtype by its name."""
        if isinstance(value, nodes.Call):
            name = self.context.qualified_name(value.func) or ""
            return name.startswith(flax_table.DTYPE_MODULES) and name.rpartition(".")[2] == "dtype"
        if isinstance(value, (nodes.Name, nodes.Attribute)):
            name = self.context.qualified_name(value) or ""
            return name.startswith(flax_table.DTYPE_MODULES) and name.rpartition(".")[2] in flax_table.DTYPE_NAMES
        return False


def _is_dtype_read(value: nodes.NodeNG) -> bool:
    """``x.dtype`` or ``getattr(x, "dtype", ...)``."""
    if isinstance(value, nodes.Attribute):
        return value.attrname == "dtype"
    return isinstance(value, nodes.Call) and isinstance(value.func, nodes.Name) and value.func.name == "getattr" \
        and len(value.args) >= 2 and isinstance(value.args[1], nodes.Const) and value.args[1].value == "dtype"
