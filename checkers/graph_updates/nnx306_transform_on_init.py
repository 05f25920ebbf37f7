"""NNX306 ``transform-on-init``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from checkers.graph_updates.reproduction import dedented
from nnx_lint.api import (
    Facts,
    Invalid,
    Reproduction,
    Rule,
    Valid,
    differs,
    entry_pin_target,
    flax_table,
    pin_sites_in,
    programs,
    transform_resolver,
)


@dataclass(frozen=True, kw_only=True)
class TransformOnInitFacts(Facts):
    """What ``NNX306`` reports (the diagnostic's ``facts``, in this order)."""

    transform: str
    class_name: str
    confidence: str
    split_rngs: bool
    pin: list


class TransformOnInit(Rule):
    """An NNX transform decorating `__init__`.

    What it does:
        Flags an NNX transform (`@nnx.vmap`, `@nnx.scan`, `@nnx.pmap`, `@nnx.jit`, ...)
        decorating a class's `__init__`, unless it keeps graph mode.

    Why is this bad?:
        The graph-mode idiom builds stacked layers in place on the traced `self`. A Tree Mode
        transform runs `__init__` on a copy, so every attribute it creates is dropped:
        the object silently has no `linear` at all and the first use raises `AttributeError`.
        Transform a factory that returns the layer and assign the stacked output:
        `self.linear = nnx.vmap(make, in_axes=0)(rngs.split(n))`.

    References:
        - Patterns in the catalogue: [C7](../catalogue.md#c7)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX306"
    facts_type = TransformOnInitFacts
    fixes = ("pin",)
    symbol = "transform-on-init"
    kind = "silent"
    catalogue = ("C7",)
    message = (
        "`@nnx.{transform}` on `{class_name}.__init__`: Tree Mode silently drops the attributes "
        "`__init__` creates on `self`"
    )
    help = (
        "They are created on the traced `self`, and the object ends up without them. Transform a "
        "factory that returns the layer and assign its output: `self.x = nnx.{transform}(make, "
        "...)(...)`"
    )
    VALID = [
        Valid(
            "factory",
            """
            from flax import nnx

            class Stack(nnx.Module):
                def __init__(self, rngs):
                    @nnx.vmap(in_axes=0, out_axes=0)
                    def make(rngs):
                        return nnx.Linear(3, 3, rngs=rngs)
                    self.linear = make(rngs.split(4))

                def __call__(self, x):
                    @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
                    def body(layer, x):
                        return layer(x)
                    return body(self.linear, x)
            """,
        ),
        Valid(
            "compat-decorator",
            """
            from flax import nnx

            class Stack(nnx.Module):
                @nnx.split_rngs(splits=4)
                @nnx.compat.vmap(in_axes=(0, 0), out_axes=0)
                def __init__(self, rngs):
                    self.linear = nnx.Linear(3, 3, rngs=rngs)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "vmapped-init",
            """
            from flax import nnx

            class Stack(nnx.Module):
                @nnx.split_rngs(splits=4)
                @nnx.vmap(in_axes=(0, 0), out_axes=0)  # NNX306
                def __init__(self, rngs):
                    self.linear = nnx.Linear(3, 3, rngs=rngs)
            """,
            tree_mode=differs("Stack(nnx.Rngs(0)) has no attribute 'linear'"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """``__init__`` decorated by the flagged transform (under ``@nnx.split_rngs`` when the
        finding has it) building a layer on ``self``; the observation is whether the object
        has the layer. The control transforms a factory and assigns its output."""
        transform = programs.choice_or(facts.transform or "vmap", flax_table.TRANSFORMS, "jit")
        note = ""
        if transform in flax_table.AXES_TRANSFORMS:
            if transform != "vmap":
                # a comment naming a transform of TRANSFORMS only (choice_or above)
                note = ("# found: @nnx.%s on __init__; vmap builds the same stacked layer on the traced "
                        "`self`\n# (pmap needs devices, scan cannot carry a Module that gains attributes)\n" % transform)
            if facts.split_rngs:
                decorators, construct = ["nnx.split_rngs(splits=4)", "nnx.vmap(in_axes=(0, 0), out_axes=0)"], \
                    "Stack(nnx.Rngs(0))"
            else:
                decorators, construct = ["nnx.vmap(in_axes=(0, 0), out_axes=0)"], "Stack(nnx.Rngs(0).split(4))"
        else:
            if transform != "jit":
                note = "# found: @nnx.%s on __init__; the same per-call copy of `self` under nnx.jit\n" % transform
            decorators, construct = ["nnx.jit"], "Stack(nnx.Rngs(0))"
        # the layer is created on the traced `self`
        init = programs.function("__init__", ["self", "rngs"], "self.linear = nnx.Linear(3, 3, rngs=rngs)",
                                 decorators=decorators)
        main = note + programs.filled("class Stack(nnx.Module):\n    INIT\n\nm = CONSTRUCT\nreturn hasattr(m, 'linear')\n",
                                      expressions={"CONSTRUCT": construct}, statements={"INIT": init})
        control = dedented("""
            class Stack(nnx.Module):
                def __init__(self, rngs):
                    @nnx.vmap(in_axes=0, out_axes=0)
                    def make(rngs):
                        return nnx.Linear(3, 3, rngs=rngs)

                    self.linear = make(rngs.split(4))  # the stacked layer is an output of the transform


            m = Stack(nnx.Rngs(0))
            return hasattr(m, 'linear')
        """)
        return Reproduction(main, expect_tree=False, expect_graph=True, control=control)

    def visit_functiondef(self, node: nodes.FunctionDef) -> None:
        if node.name != "__init__" or not isinstance(node.parent, nodes.ClassDef) or node.decorators is None:
            return
        resolver = transform_resolver(self.context)
        for entry in resolver.entries_of(node):
            if entry.form == "decorator" and entry.affected:
                # `@nnx.split_rngs(...)`: graph-mode splitting in place is part of the pattern,
                # so a pin keeps their graph mode too
                splits = [d.call for d in resolver.decorators(node) if d.name == "split_rngs"]
                self.report(entry.node, transform=entry.transform, class_name=node.parent.name,
                            confidence="transform", split_rngs=bool(splits),
                            pin=pin_sites_in(self.context, entry_pin_target(entry), *splits))
                return
