"""NNX703 ``kwargs-to-transformed-function``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from nnx_lint.api import (
    ABSENT,
    DecodedTransform,
    Facts,
    Invalid,
    Reproduction,
    Rule,
    Valid,
    entry_pin_target,
    fact_index,
    flax_table,
    pin_sites_in,
    programs,
    raises,
    transform_resolver,
)




@dataclass(frozen=True, kw_only=True)
class KeywordArgumentsToTransformedFunctionFacts(Facts):
    """What ``NNX703`` reports (the diagnostic's ``facts``, in this order)."""

    keywords: str
    transform: str
    effect: str
    detail: str
    keyword_names: list
    positional: int
    entry_line: int | None
    call_line: int
    variant: str
    in_axes_length: int = ABSENT
    in_axes: int | None = ABSENT
    argnums: list = ABSENT
    pin: list


class KeywordArgumentsToTransformedFunction(Rule):
    """Keyword arguments passed to a function transformed by `vmap` / `pmap` / `scan` / `grad`.

    What it does:
        Flags calls of a function transformed by `nnx.vmap` / `nnx.pmap` (with tuple or
        non-zero `in_axes`), `nnx.scan`, or `nnx.grad` / `nnx.value_and_grad` (when a
        differentiated position is passed by keyword) that pass keyword arguments. `nnx.jit`
        is fine, and so are graph-mode opt-ins.

    Why is this bad?:
        Graph mode binds keyword arguments to positions first, so `in_axes` / `argnums`
        apply to them. Tree Mode follows JAX: `vmap` raises `ValueError: vmap in_axes must
        be ... a tuple of entries corresponding to the positional arguments`, or silently
        maps a keyword argument over axis 0 even where `in_axes` said `None`; `scan` raises
        `TypeError: unexpected keyword argument`; `grad` raises `TypeError: differentiating
        with respect to argnums=0 requires at least 1 positional arguments`. Pass the
        arguments positionally.

    References:
        - Patterns in the catalogue: [H2](../catalogue.md#h2)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX703"
    facts_type = KeywordArgumentsToTransformedFunctionFacts
    fixes = ("pin",)
    symbol = "kwargs-to-transformed-function"
    kind = "raises"
    catalogue = ("H2",)
    message = "{keywords} passed by keyword to a function transformed by `nnx.{transform}`: {effect}"
    help = "{detail}. Pass them positionally"
    VALID = [
        Valid(
            "positional",
            """
            import jax.numpy as jnp
            from flax import nnx

            def run(model, xs):
                y = nnx.vmap(lambda m, x: m(x), in_axes=(None, 0))(model, xs)
                b = nnx.vmap(lambda x: x.sum(), in_axes=None, axis_size=3)(xs)
                g = nnx.grad(lambda m, x: jnp.sum(m(x)))(model, xs)
                g2 = nnx.grad(lambda m, x: jnp.sum(m(x)))(model, x=xs)
                c = nnx.scan(lambda c, xs: (c + xs.sum(), None), in_axes=(nnx.Carry, 0),
                             out_axes=(nnx.Carry, 0))(jnp.zeros(()), xs)[0]
                j = nnx.jit(lambda m, x: m(x))(model, x=xs)
                k = nnx.vmap(lambda m, x: m(x))(model, x=xs)
                return y, b, g, g2, c, j, k
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "vmap-grad-scan-kwargs",
            """
            import jax.numpy as jnp
            from flax import nnx

            @nnx.vmap(in_axes=(None, 0))
            def forward(m, x):
                return m(x)

            def run(model, xs):
                y = forward(model, x=xs)  # NNX703
                b = nnx.vmap(lambda x: x.sum(), in_axes=None, axis_size=3)(x=xs)  # NNX703
                loss = lambda m, x: jnp.sum(m(x))
                g = nnx.grad(loss)(m=model, x=xs)  # NNX703
                scanned = nnx.scan(lambda c, xs: (c + xs.sum(), None), in_axes=(nnx.Carry, 0),
                                   out_axes=(nnx.Carry, 0))
                c = scanned(jnp.zeros(()), xs=xs)  # NNX703
                return y, b, g, c
            """,
            tree_mode=raises("ValueError", "vmap in_axes must be an int, None, or a tuple"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """The flagged transform called with the flagged number of positional arguments and
        the rest by keyword (``variant``): ``vmap`` with tuple ``in_axes`` and ``scan`` raise,
        ``grad`` cannot reach a keyword-passed differentiated argument, and ``vmap`` with
        ``in_axes=None`` / a non-zero axis silently maps the keyword over axis 0 (the
        observation is the output shape). The control passes everything positionally."""
        variant = facts.variant or ("scan" if facts.transform == "scan" else "vmap-tuple")
        note = "# found: nnx.pmap; vmap applies the same argument rules on one CPU device\n" \
            if facts.transform == "pmap" else ""
        if variant == "scan":
            setup = "xs = jnp.ones((3, 3))\nscanned = nnx.scan(lambda c, xs: (c + xs.sum(), None), " \
                    "in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))\n"
            main = setup + "return list(scanned(jnp.zeros(()), xs=xs)[0].shape)\n"
            control = setup + "return list(scanned(jnp.zeros(()), xs)[0].shape)\n"
            return Reproduction(note + main, expect_error="other:TypeError", control=control)
        if variant in ("vmap-broadcast", "vmap-axis"):
            axis = facts.in_axes if isinstance(facts.in_axes, int) else None
            options = {"in_axes": "None", "axis_size": "3"} if axis is None else {"in_axes": programs.literal(axis)}
            setup = programs.lines("xs = jnp.ones((3, 4))",
                                   programs.assign("f", programs.call("nnx.vmap", "lambda x: x", **options)))
            tree = [3, 4]
            graph = [3, 3, 4] if axis is None else [4, 3]
            return Reproduction(note + setup + "return list(f(x=xs).shape)\n", expect_tree=tree, expect_graph=graph,
                                control=setup + "return list(f(xs).shape)\n")
        if variant == "grad":
            argnums = [a for a in facts.argnums or [0] if isinstance(a, int) and 0 <= a < 6] or [0]
            given = programs.bounded_index(facts.positional or 0, "the positional count", 6)
            count = max(max(argnums) + 1, 2, given + 1)
            positional = min(given, count - 1)
            names = ["m"] + ["x%d" % i for i in range(1, count)]
            total = programs.sum_of("jnp.sum(m(x1))", *[programs.call("jnp.sum", name) for name in names[2:]])
            loss = programs.function("loss", names, programs.returning(total))
            values = ["model"] + ["jnp.ones((1, 2))"] * (count - 1)
            by_keyword = dict(zip(names[positional:], values[positional:]))
            options = {} if argnums == [0] else {
                "argnums": programs.literal(tuple(argnums) if len(argnums) > 1 else argnums[0])}
            transform = "value_and_grad" if facts.transform == "value_and_grad" else "grad"
            setup = programs.lines("model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))", loss,
                                   programs.assign("g", programs.call(programs.attribute("nnx", transform), "loss",
                                                                      **options)))
            main = setup + programs.lines(programs.call("g", *values[:positional], **by_keyword),
                                          "return 'differentiated'")
            control = setup + programs.lines(programs.call("g", *values), "return 'differentiated'")
            return Reproduction(main, expect_error="other:TypeError", control=control)
        length = facts.in_axes_length if isinstance(facts.in_axes_length, int) else 2
        length = min(max(length, 2), 6)
        positional = min(programs.bounded_index(facts.positional or 0, "the positional count"), length - 1)
        names = ["m"] + ["x%d" % i for i in range(1, length)]
        values = ["model"] + ["jnp.ones((3, 2))"] * (length - 1)
        body = programs.sum_of("m(x1)", *[programs.call(programs.attribute(name, "sum")) for name in names[2:]])
        mapped = programs.call("nnx.vmap", programs.lambda_function(names, body),
                               in_axes=programs.items("None", *["0"] * (length - 1)))
        setup = programs.lines("model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))", programs.assign("f", mapped))

        def shape_of(call: str) -> str:
            return programs.lines(programs.returning(programs.call("list", programs.attribute(call, "shape"))))

        return Reproduction(note + setup + shape_of(programs.call("f", *values[:positional],
                                                                  **dict(zip(names[positional:], values[positional:])))),
                            expect_error="other:ValueError",
                            control=setup + shape_of(programs.call("f", *values)))

    def visit_call(self, node: nodes.Call) -> None:
        keywords = [k for k in node.keywords or []]
        if not keywords or any(k.arg is None for k in keywords) or any(isinstance(a, nodes.Starred) for a in node.args):
            return
        if self.context.nnx_call(node) is not None:
            return  # creating a transform, not calling a transformed function
        resolver = transform_resolver(self.context)
        entry = fact_index(self.context).running_entry(node)
        if entry is None or not entry.affected or entry.transform not in flax_table.POSITIONAL_ARGUMENT_TRANSFORMS:
            return
        positional = len(node.args)
        if isinstance(entry.function, nodes.FunctionDef) and isinstance(entry.function.parent, nodes.ClassDef):
            positional += 1  # the bound `self`
        # a bare decorator (`@nnx.vmap`) takes the defaults: in_axes=0, argnums=0
        options = resolver.decode(entry.call) if entry.call is not None else None
        found = self._effect(entry.transform, options, positional)
        if found is None:
            return
        effect, detail = found
        line = node.lineno
        anchor = node
        self.report(anchor, keywords=", ".join(f"`{k.arg}`" for k in keywords), transform=entry.transform,
                    effect=effect, detail=detail, keyword_names=[k.arg for k in keywords], positional=positional,
                    entry_line=entry.function.lineno, call_line=line, **self._variant(entry.transform, options),
                    pin=pin_sites_in(self.context, entry_pin_target(entry)))

    @staticmethod
    def _variant(transform: str, options: DecodedTransform | None) -> dict:
        """What the reproduction needs: ``variant`` and the ``in_axes`` / ``argnums`` values."""
        if transform == "scan":
            return {"variant": "scan"}
        if transform in flax_table.MAPPING_TRANSFORMS:
            axes = options.in_axes if options is not None else 0
            if isinstance(axes, tuple):
                return {"variant": "vmap-tuple", "in_axes_length": len(axes)}
            return {"variant": "vmap-broadcast" if axes is None else "vmap-axis", "in_axes": axes}
        return {"variant": "grad", "argnums": sorted(options.argnums if options is not None else (0,))}

    @staticmethod
    def _effect(transform: str, options: DecodedTransform | None, positional: int) -> tuple[str, str] | None:
        """``(what Tree Mode does, why)`` for keyword arguments to this transformed function
        (``options``: the transform as the resolver decodes it; None for a bare decorator)."""
        if transform == "scan":
            return "Tree Mode raises TypeError", "Tree Mode `scan` rejects keyword arguments (unexpected keyword argument)"
        if transform in flax_table.MAPPING_TRANSFORMS:
            axes = options.in_axes if options is not None else 0
            if isinstance(axes, tuple):
                return ("Tree Mode raises ValueError",
                        f"Tree Mode `{transform}` needs in_axes to match the positional arguments")
            if axes is None or (isinstance(axes, int) and axes != 0):
                return ("Tree Mode silently maps them over axis 0",
                        f"Tree Mode `{transform}` maps keyword arguments over axis 0: in_axes={axes!r} no "
                        "longer applies to them")
            return None  # in_axes=0 (the default): keyword arguments are mapped over axis 0 either way
        argnums = options.argnums if options is not None else (0,)
        if argnums is None:
            return None  # computed argnums or a DiffState
        positions = set(argnums)
        if positions and max(positions) >= positional:
            return ("Tree Mode raises TypeError",
                    f"Tree Mode `{transform}` differentiates positional arguments only (argnums={sorted(positions)} "
                    f"needs {max(positions) + 1} positional arguments, got {positional})")
        return None
