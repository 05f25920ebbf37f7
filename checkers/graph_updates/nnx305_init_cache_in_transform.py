"""NNX305 ``init-cache-in-transform``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from collections.abc import Iterator
from astroid import nodes

from checkers.graph_updates.base import MethodCallInTransform
from checkers.graph_updates.reproduction import dedented, under
from nnx_lint.api import Facts, Invalid, Reach, Reproduction, TransformedCode, Valid, body_nodes, differs, root_name


def _stores_on_self(method: nodes.FunctionDef) -> bool:
    """Whether a method assigns ``self.<attr>`` or calls ``init_cache`` for its effect."""
    if not method.args.args:
        return False
    self_name = method.args.args[0].name
    for node in body_nodes(method):
        if isinstance(node, nodes.AssignAttr):
            root = root_name(node)
            if root is not None and root.name == self_name:
                return True
        if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute) \
                and node.func.attrname == "init_cache" and isinstance(node.parent, nodes.Expr):
            return True
    return False


class InitCacheInTransform(MethodCallInTransform):
    """`init_cache(...)` inside transformed code.

    What it does:
        Flags `.init_cache(...)` called, inside code that runs under a Tree Mode NNX
        transform, on a module that came from outside the transform.

    Why is this bad?:
        `init_cache` creates new `nnx.Cache` attributes. Inside a Tree Mode transform they
        land on the per-call copy and are dropped: the caller's module has no cache, and the
        next decode step raises `ValueError: Autoregressive cache not initialized`, far from
        the cause. Create the cache eagerly before the transformed decode loop and only
        update it inside.

    References:
        - Patterns in the catalogue: [C6](../catalogue.md#c6)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX305"
    fixes = ("pin",)
    symbol = "init-cache-in-transform"
    kind = "silent"
    catalogue = ("C6",)
    methods = frozenset({"init_cache"})

    def findings(self, service: TransformedCode, reach: Reach) -> Iterator[tuple[nodes.NodeNG, dict]]:
        for node, facts in super().findings(service, reach):
            if not isinstance(node.parent, nodes.Expr):
                continue  # `cache = model.init_cache(...)`: a functional cache, returned not stored
            ref = self.owner_class(service, node.func.expr)
            if ref is not None and ref.definition is not None:
                method = service.transforms.method_of(ref.definition, "init_cache")
                if method is not None and not _stores_on_self(method):
                    continue
            yield node, facts
    message = (
        "`{receiver}.init_cache(...)` under {traced_by}{where}: Tree Mode silently "
        "drops the new Cache Variables"
    )
    help = (
        "The next decode step then raises 'Autoregressive cache not initialized'. Call `init_cache` "
        "eagerly before the transformed decode loop"
    )
    VALID = [
        Valid(
            "init-cache-outside",
            """
            import jax.numpy as jnp
            from flax import nnx

            def run(x):
                mha = nnx.MultiHeadAttention(num_heads=2, in_features=4, decode=True, rngs=nnx.Rngs(0))
                mha.init_cache(x.shape)
                for _ in range(2):
                    nnx.jit(lambda m, x: m(x))(mha, x)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "init-cache-in-jit",
            """
            from flax import nnx

            @nnx.jit
            def prefill_and_step(m, x):
                m.init_cache(x.shape)  # NNX305
                return m(x)
            """,
            tree_mode=differs("mha.cached_key is None after the call; the next step raises ValueError"),
        ),
    ]

    #: MultiHeadAttention's cache mechanism with names both implementations provide: a slot
    #: declared empty in ``__init__``, filled with a new ``nnx.Cache`` by ``init_cache``.
    _DECODER = """
        class Decoder(nnx.Module):
            def __init__(self):
                self.w = nnx.Param(jnp.ones((4, 4)))
                self.cached_key = nnx.data(None)

            def init_cache(self, shape):
                self.cached_key = nnx.Cache(jnp.zeros(shape))

            def __call__(self, x):
                if self.cached_key is None:
                    raise ValueError("Autoregressive cache not initialized, call ``init_cache`` first.")
                self.cached_key[...] = self.cached_key[...] + x
                return x @ self.w


        model, x = Decoder(), jnp.ones((1, 4))
    """

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """``init_cache`` then a decode step, under the flagged transform; the observation is
        the caller's cache shape (None when the Cache Variables were dropped). The control
        initialises the cache eagerly and only decodes inside ``nnx.jit``."""
        statement, note = under(facts.transform, "prefill", "model, x", loss="jnp.sum(model(x))")
        main = dedented(cls._DECODER) + dedented("""
            def prefill(m, x):
                m.init_cache(x.shape)  # creates new Cache Variables
                return m(x)
        """) + note + statement + "\nreturn None if model.cached_key is None else list(model.cached_key.shape)\n"
        control = dedented(cls._DECODER) + dedented("""
            model.init_cache(x.shape)  # eagerly, before the transformed decode loop
            for _ in range(2):
                nnx.jit(lambda m, x: m(x))(model, x)
            return None if model.cached_key is None else list(model.cached_key.shape)
        """)
        return Reproduction(main, expect_tree=None, expect_graph=[1, 4], control=control)
