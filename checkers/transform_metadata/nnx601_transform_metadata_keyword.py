"""NNX601 ``transform-metadata-keyword``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

from astroid import nodes

from nnx_lint.api import (
    METADATA_TRANSFORMS,
    NNX_PARTITION_NAME,
    Facts,
    Invalid,
    Reproduction,
    Rule,
    UnsafeFact,
    Valid,
    differs,
    literal,
    pin_sites_in,
    shown,
)




@dataclass(frozen=True, kw_only=True)
class TransformMetadataKeywordFacts(Facts):
    """What ``NNX601`` reports (the diagnostic's ``facts``, in this order)."""

    transform: str
    partition: str | None
    partition_text: str
    metadata: str
    pin: list


class TransformMetadataKeyword(Rule):
    """`transform_metadata=` keyword on `nnx.vmap` / `nnx.scan` / `nnx.pmap`.

    What it does:
        Flags a non-empty `transform_metadata=` argument of `nnx.vmap`, `nnx.scan` or
        `nnx.pmap` (direct call, decorator or `functools.partial`) where graph mode is
        not explicitly kept.

    Why is this bad?:
        Tree Mode transforms never read the keyword. Nothing raises: the partition axis it
        names (`nnx.PARTITION_NAME`) is silently not added to the Variables' sharding
        metadata, so a stacked kernel of shape `(layers, din, dout)` keeps
        `out_sharding=('din', 'dout')` and sharding is applied to the wrong dimensions.
        Stack an `@nnx.transform_metadata(in_axes=..., out_axes=..., partition=...)` layer
        under the transform instead, with the same axes.

    References:
        - [Tree Mode in brief: transform_metadata](../tree-mode.md#transform-metadata) — patterns [F1](../catalogue.md#f1)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX601"
    facts_type = TransformMetadataKeywordFacts
    fixes = ("pin", "transform-metadata-layer")
    symbol = "transform-metadata-keyword"
    kind = "silent"
    catalogue = ("F1",)
    message = (
        "`transform_metadata=` on `nnx.{transform}` is silently ignored in Tree Mode (partition axis "
        "{partition_text}not added)"
    )
    help = (
        "Tree Mode does not add the partition axis to the sharding metadata. Stack "
        "`@nnx.transform_metadata(in_axes=..., out_axes=..., partition=...)` under the transform "
        "instead"
    )
    VALID = [
        Valid(
            "transform-metadata-layer",
            """
            from flax import nnx

            @nnx.vmap(in_axes=0, out_axes=0)
            @nnx.transform_metadata(in_axes=0, out_axes=0, partition='layers')
            def create_stack(rngs):
                return nnx.Linear(3, 3, rngs=rngs)
            """,
        ),
        Valid(
            "compat-and-empty",
            """
            from flax import nnx

            create = nnx.compat.vmap(lambda r: nnx.Linear(3, 3, rngs=r),
                                     transform_metadata={nnx.PARTITION_NAME: 'layers'})
            forward = nnx.vmap(lambda m, x: m(x), transform_metadata={})
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "vmap-decorator",
            """
            from flax import nnx

            @nnx.vmap(in_axes=0, out_axes=0, transform_metadata={nnx.PARTITION_NAME: 'layers'})  # NNX601
            def create_stack(rngs):
                return nnx.Linear(3, 3, rngs=rngs)
            """,
            tree_mode=differs("the stacked kernel's out_sharding lacks the 'layers' partition axis"),
        ),
        Invalid(
            "scan-partial",
            """
            from functools import partial
            from flax import nnx

            scan_layers = partial(nnx.scan, in_axes=(0, nnx.Carry), out_axes=nnx.Carry,
                                  transform_metadata={nnx.PARTITION_NAME: 'layers'})  # NNX601
            """,
            tree_mode=differs("inside the scan the 'layers' axis is not removed from the metadata"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """Stack a layer with ``transform_metadata=`` and read the kernel's ``out_sharding``.

        Runs eagerly: ``jax.set_mesh`` (needed to create sharded Variables) cannot be
        used inside a trace. The sizes are tiny.
        """
        partition = facts.partition or "layers"
        if not isinstance(partition, str):
            raise UnsafeFact(f"the partition name {shown(partition)} is not a string")
        # the name (text of the analysed code) enters the program as a string literal only
        name = literal(partition)
        transform = facts.transform if facts.transform in ("vmap", "scan") else "vmap"
        setup = f"""
            mesh = jax.make_mesh((1, 1, 1), ({name}, "din", "dout"),
                                 axis_types=(jax.sharding.AxisType.Auto,) * 3)

            class Layer(nnx.Module):
                def __init__(self):
                    self.kernel = nnx.Param(jnp.ones((3, 3)), out_sharding=("din", "dout"))
        """
        if transform == "scan":
            use = f"""
            class Stack(nnx.Module):  # already stacked, with the partition axis in its metadata
                def __init__(self):
                    self.kernel = nnx.Param(jnp.ones((2, 3, 3)), out_sharding=({name}, "din", "dout"))

            seen = []

            @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry,
                      transform_metadata={{nnx.PARTITION_NAME: {name}}})
            def forward(layer, x):
                seen.append(list(layer.kernel.out_sharding))
                return x

            with jax.set_mesh(mesh):
                forward(Stack(), jnp.ones((3,)))
            return seen[0]
            """
            expect_tree, expect_graph = [partition, "din", "dout"], ["din", "dout"]
        else:
            use = f"""
            @nnx.vmap(in_axes=0, out_axes=0, transform_metadata={{nnx.PARTITION_NAME: {name}}})
            def create(x):
                return Layer()

            with jax.set_mesh(mesh):
                stacked = create(jnp.arange(2))
            return list(stacked.kernel.out_sharding)
            """
            expect_tree, expect_graph = ["din", "dout"], [partition, "din", "dout"]
        code = textwrap.dedent(setup).strip("\n") + "\n\n" + textwrap.dedent(use).strip("\n") + "\n"
        return Reproduction(code, expect_tree=expect_tree, expect_graph=expect_graph, traced=False)

    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        if call is None or call.name not in METADATA_TRANSFORMS or "transform_metadata" not in call.keywords:
            return
        value = call.keywords["transform_metadata"]
        if isinstance(value, nodes.Dict) and not value.items:
            return  # the default: nothing is lost
        if not self.context.flip_changes(call):
            return
        partition = self._partition_name(value)
        self.report(
            call.keyword_node("transform_metadata") or node,
            transform=call.name,
            partition=partition,
            partition_text=f"{partition!r} " if partition else "",
            metadata=value.as_string(),
            pin=pin_sites_in(self.context, call),
        )

    def _partition_name(self, value: nodes.NodeNG) -> str | None:
        if not isinstance(value, nodes.Dict):
            return None
        for key, item in value.items:
            is_partition_key = self.context.qualified_name(key) == NNX_PARTITION_NAME or (
                isinstance(key, nodes.Const) and key.value == "partition_name"
            )
            if is_partition_key and isinstance(item, nodes.Const) and isinstance(item.value, str):
                return item.value
        return None
