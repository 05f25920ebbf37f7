"""NNX101 ``aliased-module-attribute``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from checkers.shared_references.messages import DUPLICATE
from checkers.shared_references.base import ClassAliasRule
from checkers.shared_references.reproduction import class_alias_reproduction
from nnx_lint.api import Facts, Invalid, Reproduction, Valid, raises


class AliasedAttribute(ClassAliasRule):
    """A Module stores one Variable or submodule under two attribute paths (tied weights).

    What it does:
        Replays each NNX Module class's construction — `__init__`, the helper methods it
        calls, base classes' `__init__` (also from other files of the project), and the
        constructor arguments child classes keep — and flags the store that makes one
        Variable or Module reachable at a second path: `self.b = self.a`,
        `self.head.kernel = self.embed.embedding`, a local stored twice, an object stored
        and also wrapped by a stored wrapper (`nnx.LoRA(base_module=...)`,
        `nnx.WeightNorm(layer)`). It reports the second store and names both paths. A
        Module stored with one of its parts (`self.head = base.fc`, `self.model = base`)
        counts when the part holds Variables; a part that holds none (a config object
        passed as `super().__init__(config=base.config)`) does not. A raw mutable array
        ref (`jax.new_ref(...)`) stored twice, by this class or by two child Modules given
        the same ref, counts as well: Tree Mode rejects it like a Variable.

        Policy: the class is what needs fixing, so the class is reported wherever it is
        used. A class defined inside a function (tests do this) whose instances never reach
        an NNX transform, graph API or `nnx.Optimizer` in the file is a latent risk, not a
        break (that code runs in Tree Mode), and no other file can import it: it is not
        reported. Module-level classes are always reported, because other files may use them. Silent when the store is in a scope that keeps graph mode, or when every
        use of the class in this file (instances passed to NNX transforms, graph APIs,
        `nnx.Optimizer`, `.eval()` / `.train()`, or built in a lambda given to an NNX
        call) keeps graph mode (`graph=True`, `nnx.compat.*`) or, all of them, chooses Tree Mode
        (`graph=False`: that code fails today already). Modules that store only
        constants and plain arrays (`jnp.array(...)`, numpy, `jax.random`) hold no
        Variables and may be shared: Tree Mode accepts one array reachable twice. Stores on
        alternative branches (`if`/`else`) mean "may be": the finding holds when a branch
        that can run stores a Variable (branches under `if False:` / `if TYPE_CHECKING:`
        never count). A
        rename followed by `del` / `delattr` of the old name, an attribute overwritten
        before the constructor ends, ties made at call time (`self.embed.attend(x)`,
        `embedding.T` in `__call__`) and copies (`nnx.clone`) stay silent.

    Why is this bad?:
        Tree Mode forbids any Variable being reachable twice. Every NNX transform raises
        `ValueError: Duplicate Param(...) found at paths: .args[0].a, .args[0].b ...
        does not support Variable aliasing`, and every graph API (`nnx.split`,
        `nnx.state`, `nnx.clone`, `nnx.Optimizer`, `model.eval()`, ...) raises
        `Tree mode (graph=False) does not support shared references`. A raw `jax.new_ref`
        reachable twice gives `Duplicate Ref ...` in graph APIs and JAX's `only one reference
        to a mutable array may be passed as an argument` in NNX transforms (graph mode
        deduplicates it). Inside
        `nnx.fori_loop` / `nnx.while_loop` the aliases silently diverge (NNX108).

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references) — patterns [A1](../catalogue.md#a1), [A2](../catalogue.md#a2)
        - {spec}
    """

    code = "NNX101"
    fixes = ("pin",)
    symbol = "aliased-module-attribute"
    kind = "raises"
    #: Variable aliasing among the inputs is found when they are flattened (before tracing).
    stage = "inputs-flattened"
    catalogue = ("A1", "A2")
    category = "attribute"
    message = (
        "`{class_name}` stores one {kind} at both `self.{first_path}` and `self.{second_path}`: Tree "
        "Mode raises ValueError"
    )
    help = (
        "Tree Mode rejects shared references in every NNX transform and graph API (ValueError: "
        "Duplicate ...). Store it once and tie by use (`self.embed.attend(x)`, a `@property`), or keep "
        "graph mode (`graph=True` / `nnx.compat.*`) at every use"
    )
    VALID = [
        Valid(
            "tie-by-use-r01-fix",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Tied(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.ones((2, 2)))
                def __call__(self, x):
                    return x @ self.w @ self.w.T

            class TiedLM(nnx.Module):
                def __init__(self, rngs):
                    self.embed = nnx.Embed(10, 4, rngs=rngs)
                def __call__(self, tokens):
                    return self.embed.attend(self.embed(tokens))

            @nnx.jit
            def step(m, x):
                m.w[...] += 1.0
                return m(x)

            y = step(Tied(), jnp.ones((1, 2)))
            """,
        ),
        Valid(
            "property-or-opted-in-r02-fix",
            """
            import optax
            from flax import nnx

            class Untied(nnx.Module):
                def __init__(self, rngs):
                    self.encoder = nnx.Linear(2, 2, rngs=rngs)
                @property
                def decoder(self):
                    return self.encoder

            class Tied(nnx.Module):
                def __init__(self, rngs):
                    self.encoder = nnx.Linear(2, 2, rngs=rngs); self.decoder = self.encoder

            def run():
                u = Untied(nnx.Rngs(0))
                a = (len(nnx.state(u)), nnx.Optimizer(u, optax.sgd(0.1), wrt=nnx.Param), u.eval())
                t = Tied(nnx.Rngs(0))
                b = (len(nnx.state(t, graph=True)), nnx.Optimizer(t, optax.sgd(0.1), wrt=nnx.Param, graph=True),
                     t.eval(graph=True), nnx.compat.clone(t), list(nnx.compat.iter_modules(t)))
                return a, b
            """,
        ),
        Valid(
            "rename-then-delete-and-overwrite",
            """
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.old = nnx.Linear(2, 2, rngs=rngs)
                    self.new = self.old
                    del self.old
                    self.a = nnx.Linear(2, 2, rngs=rngs)
                    self.b = self.a
                    self.b = nnx.Linear(2, 2, rngs=rngs)
                    self.c = nnx.clone(self.a)
                    self.size = 3
                    self.width = self.size
                    self.act = nnx.relu
                    self.other_act = self.act
            """,
        ),
        Valid(
            "two-objects-same-class",
            """
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.encoder = nnx.Linear(2, 2, rngs=rngs)
                    self.decoder = nnx.Linear(2, 2, rngs=rngs)
                    self.kernel_t = self.encoder.kernel.T
            """,
        ),
        Valid(
            "module-opted-in",
            """
            from flax import nnx
            nnx.set_graph_mode(True)
            nnx.set_graph_updates(True)

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.encoder = nnx.Linear(2, 2, rngs=rngs)
                    self.decoder = self.encoder
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "tied-variable-r01",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Tied(nnx.Module):
                def __init__(self):
                    self.w_in = nnx.Param(jnp.ones((2, 2)))
                    self.w_out = self.w_in  # NNX101

            model = Tied()
            y = nnx.jit(lambda m, x: m(x))(model, jnp.ones((1, 2)))
            """,
            tree_mode=raises("ValueError", DUPLICATE),
        ),
        Invalid(
            "shared-submodule-graph-api-r02",
            """
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.encoder = nnx.Linear(2, 2, rngs=rngs)
                    self.decoder = self.encoder  # NNX101

            graphdef, state = nnx.split(Model(nnx.Rngs(0)))
            """,
            tree_mode=raises("ValueError", "does not support shared references"),
        ),
        Invalid(
            "tied-embedding-conditional",
            """
            from flax import nnx

            class LM(nnx.Module):
                def __init__(self, rngs, tie: bool = True):
                    self.embed = nnx.Embed(10, 4, rngs=rngs)
                    self.head = nnx.Linear(4, 10, use_bias=False, rngs=rngs)
                    if tie:
                        self.head.kernel = self.embed.embedding  # NNX101

            model = LM(nnx.Rngs(0))
            state = nnx.state(model)
            """,
            tree_mode=raises("ValueError", DUPLICATE),
        ),
        Invalid(
            "local-stored-twice-and-wrapper",
            """
            from flax import nnx

            class Model(nnx.Module):
                def __init__(self, rngs):
                    linear = nnx.Linear(2, 2, rngs=rngs)
                    self.linear = linear
                    self.lora = nnx.LoRA(2, 1, 2, base_module=linear, rngs=rngs)  # NNX101

            model = Model(nnx.Rngs(0))
            nnx.jit(lambda m: None)(model)
            """,
            tree_mode=raises("ValueError", DUPLICATE),
        ),
        Invalid(
            "raw-mutable-array-ref-twice",
            """
            import jax
            import jax.numpy as jnp
            from flax import nnx

            class Counter(nnx.Module):
                def __init__(self):
                    self.count = jax.new_ref(jnp.zeros(()))
                    self.alias = self.count  # NNX101

            model = Counter()
            state = nnx.state(model)
            """,
            tree_mode=raises("ValueError", "Duplicate Ref"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """The class with one Variable / Module at both paths (a flax layer of the finding's
        kind, `Box` Modules for the intermediate paths), through the transform or graph API
        the file uses it with (`used_with`: the transforms both runtimes implement, and
        split / state / graphdef / clone / iter_graph); nnx.jit when there is none or for
        any other use (`nnx.Optimizer`, and `.eval()` / `.train()` / `iter_modules`, which
        tree_runtime does not check for shared references). Control: the r01 fix, the
        object stored once."""
        return class_alias_reproduction(facts, "once")
