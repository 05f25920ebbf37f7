"""NNX103 ``duplicate-transform-argument``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from checkers.shared_references.analysis import (
    _describe_use,
    _DUPLICATE,
    _KIND_WORDS,
    _overlapping_pair,
    _relative_parts,
    _short,
    _view_of,
)
from checkers.shared_references.base import _FamilyRule
from checkers.shared_references.reproduction import _applied, _BOX, _code, _shared_object, _viewed
from nnx_lint.facts import Facts
from nnx_lint.fixes.sites import pin_sites_in
from nnx_lint.rule import Invalid, Reproduction, Valid, raises


@dataclass(frozen=True, kw_only=True)
class DuplicateTransformArgumentFacts(Facts):
    """What ``NNX103`` reports (the diagnostic's ``facts``, in this order)."""

    transform: str
    function: str
    form: str
    first: str
    second: str
    first_position: str
    second_position: str
    kinds: list
    first_part: str
    second_part: str
    first_view: str | None
    second_view: str | None
    confidence: str
    pin: list


class DuplicateTransformArgument(_FamilyRule):
    """One object passed twice into an NNX transform (`f(m, m)`, `f(m, m.sub)`, `f(m, nnx.state(m))`).

    What it does:
        Flags a call of an NNX-transformed function (decorated with `@nnx.jit` & co.,
        wrapped as `nnx.jit(f)`, bound to a name, imported from another project module,
        or a direct form such as `nnx.eval_shape(f, ...)` / `nnx.cond(...)`) where two
        arguments (keywords included) are the same Module / Variable / Rngs / State, or
        one is a part of the other (`model` and `model.encoder`, `model` and
        `nnx.state(model)`, `model` and a state group of `nnx.split(model)`). Objects are
        followed through local assignments; unknown types stay silent. Silent where the flip
        changes nothing: the transform keeps graph mode (`graph=True, graph_updates=True`,
        `nnx.compat.*`, scope) or already chooses Tree Mode (`graph=False` or
        `graph_updates=False`; with `graph=True, graph_updates=False` `nnx.eval_shape` and
        `nnx.custom_vjp` reject shared inputs today already, whatever the defaults).

    Why is this bad?:
        Tree Mode transforms reject Variable aliasing among their inputs: `ValueError:
        Duplicate Param(...) found at paths: .args[0].bias, .args[1].bias ... does not
        support Variable aliasing`. In graph mode `nnx.grad(f, argnums=(0, 1))(m, m)`
        already put the whole gradient under the first argument. Pass the object once and
        use it twice inside, or pass an independent `nnx.clone(...)`; disjoint state
        groups (`nnx.split(m, nnx.Param, ...)`) are fine.

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references) — catalogue row A4
        - {spec}
    """

    code = "NNX103"
    facts_type = DuplicateTransformArgumentFacts
    fixes = ("pin",)
    symbol = "duplicate-transform-argument"
    kind = "raises"
    catalogue = ("A4",)
    message = (
        "`{first}` and `{second}` share Variables, both passed to `nnx.{transform}`-transformed "
        "`{function}`: Tree Mode raises ValueError"
    )
    help = (
        "`{first}` ({first_position}) and `{second}` ({second_position}) are the same object or one "
        "holds the other, and Tree Mode rejects Variable aliasing among inputs (ValueError: Duplicate "
        "...). Pass it once and use it twice inside, or pass `nnx.clone(...)`"
    )
    VALID = [
        Valid(
            "once-or-clone-r04-fix",
            """
            import jax.numpy as jnp
            from flax import nnx

            def run():
                model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                x = jnp.ones((3, 2))
                f = lambda teacher, student, x: jnp.mean((teacher(x) - 2 * student(x)) ** 2)
                one = nnx.grad(lambda m, x: f(m, m, x))(model, x)
                teacher = nnx.clone(model)
                two = nnx.grad(f, argnums=(0, 1))(teacher, model, x)
                return one, two
            """,
        ),
        Valid(
            "disjoint-groups-plain-jax-opt-in",
            """
            import jax
            from flax import nnx

            def run(x):
                model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
                graphdef, params, rest = nnx.split(model, nnx.Param, ...)
                step = nnx.jit(lambda p, r: nnx.merge(graphdef, p, r)(x))
                step(params, rest)
                jax.jit(lambda a, b: a)(params, params)
                nnx.jit(lambda a, b: a, graph=True, graph_updates=True)(model, model)
                other = nnx.Linear(2, 2, rngs=nnx.Rngs(1))
                nnx.jit(lambda a, b: a(x) + b(x))(model, other)
                nnx.jit(lambda a, b: a)(x, x)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "same-object-r04",
            """
            import jax.numpy as jnp
            from flax import nnx

            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            x = jnp.ones((3, 2))
            f = lambda teacher, student, x: jnp.mean((teacher(x) - student(x)) ** 2)
            nnx.jit(f)(model, model, x)  # NNX103
            nnx.vmap(f, in_axes=(None, None, 0))(model, model, x)  # NNX103
            nnx.grad(f, argnums=(0, 1))(model, model, x)  # NNX103
            """,
            tree_mode=raises("ValueError", _DUPLICATE),
        ),
        Invalid(
            "object-and-its-part",
            """
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.encoder = nnx.Linear(2, 2, rngs=rngs)

            @nnx.jit
            def step(model, encoder, state):
                return None

            model = Model(nnx.Rngs(0))
            step(model, model.encoder, None)  # NNX103
            step(model, None, nnx.state(model))  # NNX103
            """,
            tree_mode=raises("ValueError", _DUPLICATE),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """The finding's transform called with one object at both argument positions
        (itself, a part of it, `nnx.state(...)` or a split group, as the facts say).
        pmap / shard_map / checkify / custom_vjp / scan are reproduced with nnx.jit (the
        same input check; tree_runtime lacks the first three). Control: an independent
        `nnx.clone(...)` at the second position."""
        return _duplicate_argument_reproduction(facts)

    def visit_call(self, node: nodes.Call) -> None:
        use = self.finder.application(node)
        if use is None or use.accepts_shared_inputs or use.name in ("fori_loop", "while_loop"):
            return
        refs = [(argument, self.classes.ref_of(argument.expression)) for argument in use.arguments]
        pair = _overlapping_pair(self.classes, refs)
        if pair is None:
            return
        first, ref_a, second, ref_b, kinds = pair
        first_part, second_part = _relative_parts(ref_a, ref_b)
        self.report(
            node,
            **_describe_use(use),
            first=_short(first.expression),
            second=_short(second.expression),
            first_position=first.label,
            second_position=second.label,
            kinds=[_KIND_WORDS.get(k, k) for k in kinds],
            first_part=first_part,
            second_part=second_part,
            first_view=_view_of(self.context, first.expression),
            second_view=_view_of(self.context, second.expression),
            confidence="static",
            pin=pin_sites_in(self.context, use.transform),
        )


def _duplicate_argument_reproduction(facts: dict) -> Reproduction:
    """NNX103: one object (or it and its part / its state) at the finding's two positions."""
    kinds = facts.get("kinds") or ["Module", "Module"]
    first_part, second_part = facts.get("first_part"), facts.get("second_part")
    kind = kinds[0] if not first_part else (kinds[1] if not second_part else "Module")
    shared = _shared_object(kind, [first_part, second_part])
    first_label, second_label = facts.get("first_position") or "args[0]", facts.get("second_position") or "args[1]"
    first = _viewed("shared", first_part, facts.get("first_view"))
    second = _viewed("shared", second_part, facts.get("second_view"))
    definition, call = _applied(facts.get("transform"), {first_label: first, second_label: second})
    # the rewrite: pass the object once (the other position gets an independent copy)
    fixed = _viewed("nnx.clone(shared)", second_part, facts.get("second_view"))
    fixed_definition, fixed_call = _applied(facts.get("transform"), {first_label: first, second_label: fixed})
    body = _code(_BOX, f"shared = {shared}", definition, call, "return 'ran'")
    control = _code(_BOX, f"shared = {shared}", fixed_definition, fixed_call, "return 'ran'")
    return Reproduction(body, expect_error="aliasing", control=control)
