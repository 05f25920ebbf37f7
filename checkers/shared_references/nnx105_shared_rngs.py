"""NNX105 ``shared-rngs``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from astroid import nodes

from checkers.shared_references.base import ClassAliasRule
from checkers.shared_references.reproduction import class_alias_reproduction
from nnx_lint.api import (
    DISPLAY_ONLY,
    Facts,
    Invalid,
    PIN,
    Reproduction,
    Rewrite,
    RewriteSite,
    Valid,
    fact_index,
    inside,
    object_flow,
    raises,
)


def fork_advice(site: RewriteSite):
    """Give each module its own stream (``rngs.fork()``); which modules may share keys is the
    author's call, so the fix is display-only."""
    return site.todo("pass `rngs.fork()` (an independent copy) to all but one of the modules that store this "
                     "`Rngs`, or store it once at the top")


FORK_SHARED_RNGS = Rewrite(
    "fork-shared-rngs", DISPLAY_ONLY,
    "a `# TODO(nnx-lint)` comment: pass `rngs.fork()` to all but one of the modules that store the `Rngs` "
    "(which modules may share keys is a judgement)",
    fork_advice,
)


#: Files with more functions than this do not ask the object-flow model for the sharings the
#: construction replay does not see (see :meth:`SharedRngs.model_findings`).
MODEL_FILE_FUNCTIONS = 40


class SharedRngs(ClassAliasRule):
    """One `nnx.Rngs` (or a stream of it) stored by several modules of one model.

    What it does:
        Replays each NNX Module class's construction (as NNX101) and flags the store that
        makes one `Rngs` object — an `rngs` parameter (by name or `nnx.Rngs` annotation),
        or a stream of it (`rngs.dropout`, `rngs['noise']`) — reachable at a second path:
        a module that keeps `self.rngs = rngs` and passes the same `rngs` to a child that
        keeps it too, two children that both keep it, or a list of such children built in
        a loop. Storing `rngs.fork()` or a fresh `nnx.Rngs(...)` is the fix and stays
        silent; passing `rngs` to flax layers is fine (`nnx.Linear` only draws from it,
        `nnx.Dropout` / `nnx.MultiHeadAttention` store a fork). Opt-in policy as NNX101.

    Why is this bad?:
        An `Rngs` holds `RngKey` / `RngCount` Variables. Stored twice, they are shared
        references: every Tree Mode transform raises `ValueError: Duplicate RngCount(...)
        found at paths: .args[0].noise.rngs.noise.count, .args[0].rngs.noise.count`. Give
        each module its own stream state with `rngs.fork()`.

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references) — patterns [A7](../catalogue.md#a7), [A8](../catalogue.md#a8)
        - {spec}
    """

    code = "NNX105"
    fixes = (PIN, FORK_SHARED_RNGS)
    symbol = "shared-rngs"
    kind = "raises"
    #: Variable aliasing among the inputs is found when they are flattened (before tracing).
    stage = "inputs-flattened"
    catalogue = ("A7",)
    category = "rngs"
    message = (
        "`{class_name}` stores the same Rngs (`{shared}`) at `self.{first_path}` and "
        "`self.{second_path}`: Tree Mode raises ValueError"
    )
    help = (
        "Tree Mode rejects the shared RngKey/RngCount in every NNX transform (ValueError: Duplicate "
        "RngCount ...). Store `rngs.fork()` instead, so each module has its own stream state"
    )
    VALID = [
        Valid(
            "fork-r84-fix",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Noise(nnx.Module):
                def __init__(self, rngs):
                    self.rngs = rngs.fork()
                def __call__(self, x):
                    return x + self.rngs.noise.normal(x.shape)

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.noise = Noise(rngs)
                    self.rngs = rngs.fork()
                def __call__(self, x):
                    return self.noise(x) * self.rngs.noise.uniform(x.shape)

            model = Model(nnx.Rngs(noise=0))
            y1 = nnx.jit(lambda m, x: m(x))(model, jnp.ones(2))
            """,
        ),
        Valid(
            "flax-layers-draw-or-fork",
            """
            from flax import nnx

            class Block(nnx.Module):
                def __init__(self, rngs: nnx.Rngs):
                    self.rngs = rngs
                    self.linear = nnx.Linear(2, 2, rngs=rngs)
                    self.dropout = nnx.Dropout(0.1, rngs=rngs)
                    self.attention = nnx.MultiHeadAttention(2, 2, 2, rngs=rngs, decode=False)
                    self.key = rngs.params()
            """,
        ),
        Valid(
            "rngs-forked-by-an-isinstance-dispatch",
            """
            import jax
            from flax import nnx

            class Wrapper(nnx.Module):
                def __init__(self, rngs=None):
                    if isinstance(rngs, jax.Array):
                        self.rngs = nnx.Rngs(params=rngs)
                    elif isinstance(rngs, nnx.Rngs):
                        self.rngs = rngs.fork()
                    else:
                        self.rngs = rngs

            def wrap(rngs):
                return Wrapper(rngs=rngs)

            class Op(nnx.Module):
                def __init__(self, rngs: nnx.Rngs):
                    self.rngs = rngs
                    self.einsum = wrap(rngs)
            """,
        ),
        Valid(
            # bonsai sam2 model_hiera_det.py: the DropPath that keeps `rngs` is built only when
            # drop_path > 0.0, and every block gets float(linspace(0, 0.0, depth)[i]) == 0.0 (the
            # one call leaves drop_path_rate at its default): each block holds an Identity
            "rngs-in-a-branch-never-built",
            """
            import numpy as np
            from flax import nnx

            class Identity(nnx.Module):
                def __call__(self, x):
                    return x

            class DropPath(nnx.Module):
                def __init__(self, drop_prob, *, rngs):
                    self.drop_prob = drop_prob
                    self.rngs = rngs

            class MultiScaleBlock(nnx.Module):
                def __init__(self, dim, drop_path=0.0, *, rngs):
                    self.norm1 = nnx.LayerNorm(dim, rngs=rngs)
                    self.drop_path = DropPath(drop_prob=drop_path, rngs=rngs) if drop_path > 0.0 else Identity()

            class Hiera(nnx.Module):
                def __init__(self, embed_dim=4, depth=3, drop_path_rate=0.0, *, rngs):
                    dpr = np.linspace(0, drop_path_rate, depth)
                    self.blocks = nnx.List()
                    for i in range(depth):
                        self.blocks.append(MultiScaleBlock(dim=embed_dim, drop_path=float(dpr[i]), rngs=rngs))

            graphdef, state = nnx.split(Hiera(embed_dim=4, rngs=nnx.Rngs(0)))
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "parent-and-child-r84",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Noise(nnx.Module):
                def __init__(self, rngs):
                    self.rngs = rngs
                def __call__(self, x):
                    return x + self.rngs.noise.normal(x.shape)

            class Model(nnx.Module):
                def __init__(self, rngs):
                    self.rngs = rngs
                    self.noise = Noise(rngs)  # NNX105

            model = Model(nnx.Rngs(noise=0))
            y = nnx.jit(lambda m, x: m(x))(model, jnp.ones(2))
            """,
            tree_mode=raises("ValueError", "Duplicate RngCount"),
        ),
        Invalid(
            "stream-and-children-in-loop",
            """
            from flax import nnx

            class Sampler(nnx.Module):
                def __init__(self, rngs: nnx.Rngs):
                    self.stream = rngs.dropout

            class Model(nnx.Module):
                def __init__(self, rngs: nnx.Rngs, n: int):
                    self.rngs = rngs
                    self.sampler = Sampler(rngs)  # NNX105
                    self.blocks = nnx.List()
                    for _ in range(n):
                        self.blocks.append(Sampler(rngs))  # NNX105
            """,
            tree_mode=raises("ValueError", "Duplicate RngCount"),
        ),
    ]

    def model_findings(self, classdef: nodes.ClassDef, reported: set[tuple[int, int]]) -> None:
        """An Rngs the object-flow model shows at two paths of an instance that the replay does
        not see: a child built by a helper function, method or lambda (in any file), through a
        partial, a container, ``*args`` / ``**kwargs`` forwarding, a branch, or a method that
        falls back to ``self.rngs`` (``rngs = rngs or self.rngs``). Asked of a class that has such
        a fallback, or that holds an Rngs the replay sees, in a file of at most
        :data:`MODEL_FILE_FUNCTIONS` functions. The solve of a large file's class can cost seconds
        (maxtext's decoder builds every model family's layers), and most of a large file's
        classes hold an Rngs; a fallback in such a file was asked too until the fallback check
        alone was measured at 1.3 s of a cold run on flax (``graphlib.py``'s ``VariableDef``) and
        at most of the object model's memory on maxtext, with no finding on the twelve corpora."""
        if not self._small_file():
            return
        if not _falls_back_to_self(fact_index(self.context), classdef) and not self._holds_rngs(classdef):
            return
        statements = {line for line, _column in reported}
        for first, second, _owner in object_flow.shared_rngs_paths(object_flow.object_model(self.context), classdef):
            where = second.stores[0] if second.stores else None
            if where is None or where.root() is not self.context.module or not inside(where, classdef):
                continue
            if any(_not_an_rngs_branch(store) for store in first.stores + second.stores):
                continue
            # one finding per statement (`self.noise, self.rngs = Noise(rngs), rngs` is one)
            if where.lineno in statements or self.context.mode.scope_keeps_graph_mode(where, transform=True):
                continue
            statements.add(where.lineno)
            reported.add((where.lineno, where.col_offset))
            related = [(node, "stored here") for node in second.stores[1:] + first.stores
                       if node.root() is self.context.module and node is not where]
            frame = where.frame()
            self.report(where, related=related, **{
                "class_name": classdef.name, "first_path": first.text().lstrip("."),
                "second_path": second.text().lstrip("."), "kind": "Rngs", "shared": first.fields[-1],
                "container": None, "conditional": False, "stored_in": getattr(frame, "name", None),
                "confidence": "static", "first_part": "", "second_part": "", "container_type": None,
                "used_with": next(iter(self._use_names.get(id(classdef), [])), None),
                **self._pin_facts(id(classdef)),
            })

    def __init__(self, context) -> None:
        super().__init__(context)
        self._functions: int | None = None

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """The class storing one `nnx.Rngs` (or a stream of it, as the facts' parts say)
        at both paths, through nnx.jit or the API the file uses it with. Control: the
        second path stores `rngs.fork()` (the r84 fix)."""
        return class_alias_reproduction(facts, "fork")


    def _small_file(self) -> bool:
        if self._functions is None:
            self._functions = len(fact_index(self.context).functions_in(self.context.module))
        return self._functions <= MODEL_FILE_FUNCTIONS

    def _holds_rngs(self, classdef: nodes.ClassDef) -> bool:
        """Whether the replay of ``classdef``'s construction stores an Rngs (or a stream of one)."""
        return any(event.ref is not None and not event.deleted and self.classes.kind_of(event.ref) == "rngs"
                   for event in self.classes.construction(classdef).events)


def _falls_back_to_self(facts, classdef: nodes.ClassDef) -> bool:
    """Whether a method of ``classdef`` chooses between a value and one of ``self``'s attributes."""
    for choice in facts.choices_in(classdef):
        operands = choice.values if isinstance(choice, nodes.BoolOp) else (choice.body, choice.orelse)
        if any(isinstance(o, nodes.Attribute) and isinstance(o.expr, nodes.Name) and o.expr.name == "self"
               for o in operands):
            return True
    return False


def _not_an_rngs_branch(store: nodes.NodeNG) -> bool:
    """Whether ``store`` sits in the ``else`` of ``if isinstance(x, nnx.Rngs)`` (maxtext's ``ToNNX``:
    an Rngs is forked in the ``if`` arm; the model's flows do not tell the arms apart)."""
    current = store
    while current.parent is not None and not isinstance(current, (nodes.FunctionDef, nodes.ClassDef)):
        parent = current.parent
        if isinstance(parent, nodes.If) and current in parent.orelse:
            for test in [parent.test] + [b.test for b in _elifs_above(parent)]:
                if isinstance(test, nodes.Call) and isinstance(test.func, nodes.Name) \
                        and test.func.name == "isinstance" and len(test.args) == 2 \
                        and test.args[1].as_string().endswith("Rngs"):
                    return True
        current = parent
    return False


def _elifs_above(node: nodes.If) -> list[nodes.If]:
    """The ``if`` / ``elif`` tests above an ``elif`` (an ``elif`` is an ``If`` in its parent's ``orelse``)."""
    found = []
    while isinstance(node.parent, nodes.If) and node.parent.orelse == [node]:
        node = node.parent
        found.append(node)
    return found
