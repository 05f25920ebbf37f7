"""NNX304 ``eval-train-in-transform``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from checkers.graph_updates.base import MethodCallInTransform
from checkers.graph_updates.reproduction import dedented, under
from nnx_lint.api import Facts, Invalid, Reproduction, Valid, differs, flax_table, programs


class EvalTrainInTransform(MethodCallInTransform):
    """`model.eval()` / `model.train()` / `set_attributes(...)` inside transformed code.

    What it does:
        Flags `.eval()`, `.train()` and `.set_attributes(...)` called, inside code that runs
        under a Tree Mode NNX transform, on a module that came from outside the transform
        (a parameter of the transformed function, `self` of a method it calls).

    Why is this bad?:
        These methods flip static attributes (`deterministic`, `use_running_average`). In
        graph mode the flip reaches the caller's module; in Tree Mode it stays inside the
        call, so the caller's Dropout keeps dropping and BatchNorm keeps updating its
        statistics, silently. Call `model.eval()` outside the transform, or pass
        `nnx.view(model, deterministic=True)` in.

    References:
        - Patterns in the catalogue: [C5](../catalogue.md#c5)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX304"
    fixes = ("pin",)
    symbol = "eval-train-in-transform"
    kind = "silent"
    catalogue = ("C5",)
    methods = flax_table.MODE_SWITCH_METHODS
    message = (
        "`{receiver}.{method}(...)` under {traced_by}{where}: Tree Mode silently keeps "
        "the caller's module in its old mode"
    )
    help = (
        "In Tree Mode the flag change stays inside the call. Call it outside the transform, or pass "
        "`nnx.view({receiver}, deterministic=...)` in"
    )
    VALID = [
        Valid(
            "eval-outside-and-view",
            """
            import jax.numpy as jnp
            from flax import nnx

            def run(m, x):
                m.eval()
                y = nnx.jit(lambda m, x: m(x))(m, x)
                yv = nnx.jit(lambda m, x: nnx.view(m, deterministic=True)(x))(m, x)
                m2 = nnx.compat.jit(lambda m: m.eval())(m)
                return y, yv
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "eval-inside-jit",
            """
            from flax import nnx

            @nnx.jit
            def evaluate(m, x):
                m.eval()  # NNX304
                return m(x)
            """,
            tree_mode=differs("after evaluate(m, x) the caller's m.drop.deterministic is still False"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """The flagged method called on a Dropout-holding module under the flagged transform;
        the observation is the caller's ``drop.deterministic`` afterwards. The control calls
        it outside, before the transformed forward pass."""
        method = facts.method if facts.method in ("eval", "train", "set_attributes") else "eval"
        call = {"eval": "m.eval()", "train": "m.train()",
                "set_attributes": "m.set_attributes(deterministic=True)"}[method]
        start = "model.eval()  # starts in evaluation mode\n" if method == "train" else ""
        tree, graph = (True, False) if method == "train" else (False, True)
        model = dedented("""
            class Net(nnx.Module):
                def __init__(self, rngs):
                    self.lin = nnx.Linear(2, 2, rngs=rngs)
                    self.drop = nnx.Dropout(0.5)

                def __call__(self, x):
                    return self.drop(self.lin(x))


            model = Net(nnx.Rngs(0))
        """) + start
        statement, note = under(facts.transform, "switch_mode", "model", loss="model.lin.kernel[...].sum()")
        main = model + programs.lines(programs.function("switch_mode", ["m"], call)) + note + \
            programs.lines(statement, "return model.drop.deterministic")
        read, read_note = under(facts.transform, "forward", "model", loss="model.lin.kernel[...].sum()")
        control = model + "# outside the transform\n" + programs.filled(call, {"m": "model"}) + \
            "def forward(m):\n    return m.lin.kernel[...].sum()\n" + read_note + \
            programs.lines(read, "return model.drop.deterministic")
        return Reproduction(main, expect_tree=tree, expect_graph=graph, control=control)
