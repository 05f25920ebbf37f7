"""NNX601 ``transform-metadata-keyword``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from nnx_lint.api import (
    PIN,
    UNSAFE,
    Facts,
    Invalid,
    Reproduction,
    Rewrite,
    RewriteSite,
    Rule,
    Valid,
    differs,
    flax_table,
    pin_sites_in,
    programs,
)




@dataclass(frozen=True, kw_only=True)
class TransformMetadataKeywordFacts(Facts):
    """What ``NNX601`` reports (the diagnostic's ``facts``, in this order)."""

    transform: str
    partition: str | None
    partition_text: str
    metadata: str
    pin: list


def metadata_layer(site: RewriteSite):
    """``@nnx.vmap(..., transform_metadata={nnx.PARTITION_NAME: 'p'})`` becomes ``@nnx.vmap(...)``
    over ``@nnx.transform_metadata(in_axes=..., out_axes=..., partition='p')``.

    Only the decorator form of ``vmap`` spelled ``<module>.vmap`` with a one-entry dict literal
    naming the partition with a string; anything else is display-only.
    """
    cst, index = site.cst, site.index
    sites = site.pin
    call = index.node_at(sites[0]["line"], sites[0]["column"], sites[0]["end_line"], sites[0]["end_column"]) if sites else None
    if not isinstance(call, cst.Call):
        return site.todo(_METADATA_TODO)
    decorator = index.parent(call)
    func = call.func
    keyword = {arg.keyword.value: arg for arg in call.args if arg.keyword is not None}
    metadata = keyword.get("transform_metadata")
    partition = _partition(cst, metadata.value, func) if metadata is not None else None
    mechanical = (
        isinstance(decorator, cst.Decorator) and decorator.decorator is call
        and site.facts.transform == "vmap"
        and isinstance(func, cst.Attribute) and func.attr.value == "vmap" and site.is_name_chain(func.value)
        and partition is not None
        and all(arg.keyword is not None for arg in call.args)
    )
    if not mechanical:
        return site.todo(_METADATA_TODO)
    args = [arg for arg in call.args if arg is not metadata]
    if args and call.args[-1] is metadata:
        args[-1] = args[-1].with_changes(comma=metadata.comma)
    in_axes = index.code(keyword["in_axes"].value) if "in_axes" in keyword else "0"
    out_axes = index.code(keyword["out_axes"].value) if "out_axes" in keyword else "0"
    layer = f"{index.code(func.value)}.transform_metadata(in_axes={in_axes}, out_axes={out_axes}, partition={partition})"
    function = index.parent(decorator)
    if not isinstance(function, (cst.FunctionDef, cst.ClassDef)):
        return None
    decorators = list(function.decorators)
    position = next(i for i, d in enumerate(decorators) if d is decorator)
    decorators[position] = decorator.with_changes(decorator=call.with_changes(args=args))
    decorators.insert(position + 1, cst.Decorator(decorator=cst.parse_expression(layer)))
    return site.unsafe(f"Stack `@{layer}` under the transform instead of `transform_metadata=`",
                       index.replacement(function, function.with_changes(decorators=decorators)))


def _partition(cst, value, func) -> str | None:
    """The partition's string literal code if ``value`` is ``{nnx.PARTITION_NAME: '...'}``."""
    if not isinstance(value, cst.Dict) or len(value.elements) != 1:
        return None
    element = value.elements[0]
    if not isinstance(element, cst.DictElement) or not isinstance(element.value, cst.SimpleString):
        return None
    key = element.key
    names_partition = (
        isinstance(key, cst.Attribute) and key.attr.value == "PARTITION_NAME"
        and isinstance(func, cst.Attribute) and key.value.deep_equals(func.value)
    ) or (isinstance(key, cst.SimpleString) and key.evaluated_value == "partition_name")
    return element.value.value if names_partition else None


_METADATA_TODO = ("stack `@nnx.transform_metadata(in_axes=..., out_axes=..., partition=...)` under the transform "
                  "(the axes of the stacked dimension) and drop `transform_metadata=`")

TRANSFORM_METADATA_LAYER = Rewrite(
    "transform-metadata-layer", UNSAFE,
    "moves `transform_metadata={nnx.PARTITION_NAME: 'p'}` of an `@nnx.vmap(...)` decorator into a stacked "
    "`@nnx.transform_metadata(in_axes=..., out_axes=..., partition='p')` layer with the same axes; other forms get a "
    "display-only TODO",
    metadata_layer,
    writes="transform_metadata",
)


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
    visits_nnx_calls_only = True
    facts_type = TransformMetadataKeywordFacts
    fixes = (PIN, TRANSFORM_METADATA_LAYER)
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
            raise programs.UnsafeFact("the partition name %s is not a string" % programs.shown(partition))
        # the name (text of the analysed code) enters the program as a string literal only
        name = programs.literal(partition)
        transform = facts.transform if facts.transform in ("vmap", "scan") else "vmap"
        setup = """
            mesh = jax.make_mesh((1, 1, 1), (NAME, "din", "dout"),
                                 axis_types=(jax.sharding.AxisType.Auto,) * 3)

            class Layer(nnx.Module):
                def __init__(self):
                    self.kernel = nnx.Param(jnp.ones((3, 3)), out_sharding=("din", "dout"))
        """
        if transform == "scan":
            # Stack is already stacked, with the partition axis in its metadata
            use = """
            class Stack(nnx.Module):
                def __init__(self):
                    self.kernel = nnx.Param(jnp.ones((2, 3, 3)), out_sharding=(NAME, "din", "dout"))

            seen = []

            @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry,
                      transform_metadata={nnx.PARTITION_NAME: NAME})
            def forward(layer, x):
                seen.append(list(layer.kernel.out_sharding))
                return x

            with jax.set_mesh(mesh):
                forward(Stack(), jnp.ones((3,)))
            return seen[0]
            """
            expect_tree, expect_graph = [partition, "din", "dout"], ["din", "dout"]
        else:
            use = """
            @nnx.vmap(in_axes=0, out_axes=0, transform_metadata={nnx.PARTITION_NAME: NAME})
            def create(x):
                return Layer()

            with jax.set_mesh(mesh):
                stacked = create(jnp.arange(2))
            return list(stacked.kernel.out_sharding)
            """
            expect_tree, expect_graph = ["din", "dout"], [partition, "din", "dout"]
        code = programs.lines(programs.filled(setup, expressions={"NAME": name}),
                              programs.filled(use, expressions={"NAME": name}))
        return Reproduction(code, expect_tree=expect_tree, expect_graph=expect_graph, traced=False)

    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        if call is None or call.name not in flax_table.METADATA_TRANSFORMS or "transform_metadata" not in call.keywords:
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
            is_partition_key = self.context.qualified_name(key) == flax_table.NNX_PARTITION_NAME or (
                isinstance(key, nodes.Const) and key.value == "partition_name"
            )
            if is_partition_key and isinstance(item, nodes.Const) and isinstance(item.value, str):
                return item.value
        return None
