"""NNX110 ``transform-returns-mutable-array``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from typing import ClassVar

from dataclasses import dataclass

from checkers.shared_references.messages import describe_use, function_label, short_source
from checkers.shared_references.returns import ReturnRule
from checkers.shared_references.reproduction import dedented
from nnx_lint.api import Facts, Invalid, Reproduction, Valid, programs, raises, returned_inputs

#: JAX's words for it, in both flax's Tree Mode and tree_runtime (category "mutable-array-output").
_RETURNED_REF = "returned a mutable array reference"


@dataclass(frozen=True, kw_only=True)
class TransformReturnsMutableArrayFacts(Facts):
    """What ``NNX110`` reports (the diagnostic's ``facts``, in this order)."""

    #: The shared object's paths, as flax's aliasing errors name them (``Facts.paths``).
    paths: ClassVar[tuple[tuple[str, ...], ...]] = (("returned",),)

    transform: str
    function: str
    form: str
    returned: str
    #: "input" (a ref parameter returned), "new ref" (``jax.new_ref`` made inside) or
    #: "ref variables" (a Variable or Module made inside with ``ref=True`` Variables).
    origin: str
    parameter: str | None
    evidence: str
    confidence: str
    pin: list


class TransformReturnsMutableArray(ReturnRule):
    """An NNX-transformed function returns a mutable array ref (`jax.new_ref`, `ref=True` Variables).

    What it does:
        Looks at the `return` values of functions given to NNX transforms and flags a mutable
        array ref among them: a `jax.Ref` input returned by `nnx.jit`, `nnx.cond`,
        `nnx.switch` or `nnx.remat` (the parameter annotated `jax.Ref`, or passed a
        `jax.new_ref(...)` at the call sites in this file); and, returned by `nnx.jit`, a
        `jax.new_ref(...)` made inside, or a Variable or Module made inside with ref
        Variables (`nnx.with_vars(m, ref=True)`, `nnx.Param(v, ref=True)`, built under
        `nnx.var_defaults(ref=True)`) when the function also takes an NNX object. Refs read
        (`r[...]`), frozen (`jax.freeze(r)`) or converted back (`nnx.with_vars(m, ref=False)`)
        stay silent, as do transforms that return refs in both modes (`nnx.vmap`, `has_aux`
        outputs of `nnx.grad`) or reject them in both (`nnx.eval_shape`, a new ref from a
        function with no NNX input). Respects the transform's opt-in.

    Why is this bad?:
        Graph mode turns the refs a transform returns back into refs after the call. Tree
        Mode hands the output to JAX, which rejects it: `ValueError: function f ... traced
        for jit returned a mutable array reference of type Ref{float32[]} ...` (measured with
        flax 0.12.8; the `nnx.jit` docstring says Tree Mode does not support returning
        mutable array references). An input ref is updated in place: returning it is
        unnecessary.

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references)
        - {spec}
    """

    code = "NNX110"
    facts_type = TransformReturnsMutableArrayFacts
    fixes = ("pin",)
    symbol = "transform-returns-mutable-array"
    kind = "raises"
    message = (
        "`nnx.{transform}`-transformed `{function}` returns mutable array ref `{returned}`: "
        "Tree Mode raises ValueError"
    )
    help = (
        "Tree Mode transforms cannot return mutable array refs (ValueError: ... returned a mutable array "
        "reference). Return arrays (`r[...]`, `jax.freeze(r)`) or `nnx.with_vars(m, ref=False)`; an input "
        "ref is updated in place"
    )
    VALID = [
        Valid(
            "arrays-frozen-or-converted",
            """
            import jax
            import jax.numpy as jnp
            from flax import nnx

            def run(model: nnx.Linear):
                r = jax.new_ref(jnp.array(1.0))

                @nnx.jit
                def f(r: jax.Ref, m):
                    r[...] += 1.0
                    fresh = jax.new_ref(jnp.array(10.0))
                    built = nnx.with_vars(nnx.Linear(1, 1, rngs=nnx.Rngs(0)), ref=True)
                    return r[...], jax.freeze(fresh), nnx.with_vars(built, ref=False)

                f(r, model)
                nnx.vmap(lambda x: jax.new_ref(x))(jnp.ones(3))
                nnx.jit(lambda r: r, graph=True, graph_updates=True)(r)
            """,
        ),
        Valid(
            "no-nnx-input-raises-in-graph-mode-too",
            """
            import jax
            import jax.numpy as jnp
            from flax import nnx

            make = nnx.jit(lambda x: jax.new_ref(x))
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "input-and-new-ref",
            """
            import jax
            import jax.numpy as jnp
            from flax import nnx

            m = jax.new_ref(jnp.array(1.0))

            @nnx.jit()
            def f(m: jax.Ref):
                m[...] += 1.0
                m2 = jax.new_ref(jnp.array(10.0))
                return m2, m  # NNX110

            m2, m_out = f(m)
            """,
            tree_mode=raises("ValueError", _RETURNED_REF),
        ),
        Invalid(
            "module-with-ref-variables",
            """
            from flax import nnx

            model = nnx.Linear(1, 1, rngs=nnx.Rngs(0))

            @nnx.jit
            def f(m):
                return nnx.with_vars(nnx.Linear(1, 1, rngs=nnx.Rngs(1)), ref=True)  # NNX110

            out = f(model)
            """,
            tree_mode=raises("ValueError", _RETURNED_REF),
        ),
    ]
    finding_code = "NNX110"

    def finding(self, definition, uses, found):
        """A mutable array ref returned, an input's or one made inside."""
        if not isinstance(found, returned_inputs.ReturnedRef):
            return None
        return found.expression, {
            **describe_use(found.use),
            "function": function_label(definition),
            "returned": short_source(found.expression, 32),
            "origin": found.origin,
            "parameter": found.parameter,
            "evidence": found.evidence,
            "confidence": "static",  # a jax.Ref annotation or argument, or a ref made in the body
        }

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """`nnx.jit` over a function returning a ref: the input ref itself (origin "input")
        or one made inside, next to a Module input (graph mode needs an NNX input to return
        it). Control: the ref's array (`r[...]`) returned instead."""
        return _returned_ref_reproduction(facts)


def _returned_ref_reproduction(facts: Facts) -> Reproduction:
    """NNX110: nnx.jit returns a mutable array ref (the input, or one made inside)."""
    transform = facts.transform
    stand_ins = () if transform == "jit" else ("`nnx.jit` stands for `nnx.%s`" % programs.identifier_or(transform, "?"),)
    if facts.origin == "input":
        body = dedented("""
            r = jax.new_ref(jnp.ones(2))
            nnx.jit(lambda r: r)(r)
            return 'ran'
            """)
        control = dedented("""
            r = jax.new_ref(jnp.ones(2))
            nnx.jit(lambda r: r[...])(r)
            return 'ran'
            """)
    else:
        body = dedented("""
            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            nnx.jit(lambda m: jax.new_ref(jnp.ones(2)))(model)
            return 'ran'
            """)
        control = dedented("""
            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            nnx.jit(lambda m: jax.new_ref(jnp.ones(2))[...])(model)
            return 'ran'
            """)
    return Reproduction(body, expect_error="mutable-array-output", control=control, stand_ins=stand_ins)
