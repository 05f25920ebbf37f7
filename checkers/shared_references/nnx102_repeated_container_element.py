"""NNX102 ``repeated-container-element``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from astroid import nodes

from checkers.shared_references.messages import DUPLICATE, KIND_WORDS, short_source
from checkers.shared_references.base import ClassAliasRule
from checkers.shared_references.reproduction import class_alias_reproduction
from nnx_lint.api import Facts, Invalid, Ref, Reproduction, SHARED_KINDS, Valid, flax_table, join_path, raises


class RepeatedContainerElement(ClassAliasRule):
    """A container (`nnx.List`, `nnx.Sequential`, `nnx.Dict`, a list) holds one object twice.

    What it does:
        Flags `nnx.List([block, block])`, `nnx.List([block] * n)`,
        `nnx.Sequential(block, block)`, `[block for _ in range(n)]` (a block built
        outside the comprehension), and `self.blocks.append(block)` in a loop, when the
        repeated object holds Variables. Stores in Module constructors are found by
        replaying the class (see NNX101); containers built anywhere else are checked where
        they are built. `[Block(...) for _ in range(n)]` builds distinct objects and stays
        silent, as does repeating functions (`nnx.relu`) or `Dropout` without `rngs`.

        Policy as NNX101 for containers stored by a class (opt-in by scope or by every
        use in the file); a container built outside a class is silent when every use of
        it in the file keeps graph mode. Elements sharing one `Rngs` inside a class are
        reported as NNX105.

    Why is this bad?:
        Tree Mode forbids any Variable being reachable twice: an NNX transform receiving
        the container (or a model holding it) raises `ValueError: Duplicate Param(...)
        found at paths: .args[0].layers[0].bias, .args[0].layers[1].bias`, and graph APIs
        raise `Tree mode (graph=False) does not support shared references`. To share
        parameters across depth, store the block once and apply it repeatedly.

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references) — patterns [A3](../catalogue.md#a3)
        - {spec}
    """

    code = "NNX102"
    fixes = ("pin",)
    symbol = "repeated-container-element"
    kind = "raises"
    #: Variable aliasing among the inputs is found when they are flattened (before tracing).
    stage = "inputs-flattened"
    catalogue = ("A3",)
    category = "container"
    message = (
        "`{container}` holds one {kind} at `{first_path}` and `{second_path}`: Tree Mode raises ValueError"
    )
    help = (
        "Tree Mode rejects shared references (ValueError: Duplicate ...). Store the block once and "
        "apply it repeatedly (keep a repeat count), or build distinct blocks (`[Block(...) for _ in "
        "range(n)]`)"
    )
    VALID = [
        Valid(
            "store-once-r03-fix",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Stack(nnx.Module):
                def __init__(self, rngs, depth=2):
                    self.block = nnx.Linear(2, 2, rngs=rngs)
                    self.depth = depth
                def __call__(self, x):
                    for _ in range(self.depth):
                        x = self.block(x)
                    return x

            model = Stack(nnx.Rngs(0))
            y = nnx.jit(lambda m, x: m(x))(model, jnp.ones((1, 2)))
            """,
        ),
        Valid(
            "distinct-blocks-and-functions",
            """
            from flax import nnx

            class Stack(nnx.Module):
                def __init__(self, rngs, n):
                    self.layers = nnx.List([nnx.Linear(2, 2, rngs=rngs) for _ in range(n)])
                    self.blocks = nnx.List()
                    for _ in range(n):
                        self.blocks.append(nnx.Linear(2, 2, rngs=rngs))
                    drop = nnx.Dropout(0.1)
                    self.mlp = nnx.Sequential(nnx.Linear(2, 2, rngs=rngs), nnx.relu, drop,
                                              nnx.Linear(2, 2, rngs=rngs), nnx.relu, drop)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "list-same-block-r03",
            """
            from flax import nnx

            class Stack(nnx.Module):
                def __init__(self, rngs):
                    block = nnx.Linear(2, 2, rngs=rngs)
                    self.layers = nnx.List([block, block])  # NNX102

            model = Stack(nnx.Rngs(0))
            """,
            tree_mode=raises("ValueError", DUPLICATE),
        ),
        Invalid(
            "repeat-and-sequential",
            """
            from flax import nnx

            def build(rngs, n):
                block = nnx.Linear(2, 2, rngs=rngs)
                layers = nnx.List([block] * n)  # NNX102
                mlp = nnx.Sequential(block, nnx.relu, block)  # NNX102
                return layers, mlp
            """,
            tree_mode=raises("ValueError", DUPLICATE),
        ),
        Invalid(
            "append-in-loop",
            """
            from flax import nnx

            class Stack(nnx.Module):
                def __init__(self, rngs, n):
                    shared = nnx.Linear(2, 2, rngs=rngs)
                    self.blocks = nnx.List()
                    for _ in range(n):
                        self.blocks.append(shared)  # NNX102
            """,
            tree_mode=raises("ValueError", DUPLICATE),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """The container (`nnx.List`, or `nnx.Sequential` as the facts say) holding one
        Linear at both positions, in the class at the finding's path, through nnx.jit
        (or the API the file uses it with). Control: distinct blocks."""
        return class_alias_reproduction(facts, "distinct")

    #: Elements appended one by one (``self.blocks.append(shared)`` in a loop): there is no
    #: container expression to show, so the message names the class and the paths.
    appended_message = (
        "`{class_name}` stores the same {kind} at `self.{first_path}` and `self.{second_path}`: "
        "Tree Mode raises ValueError"
    )

    def report(self, node: nodes.NodeNG, facts=None, *, message: str | None = None, help: str | None = None,
               related=None, **fields) -> None:
        """As :meth:`Rule.report`, with :attr:`appended_message` when no container expression exists."""
        container = facts.container if facts is not None else fields.get("container")
        if message is None and container is None:
            message = self.appended_message
        super().report(node, facts, message=message, help=help, related=related, **fields)

    def __init__(self, context) -> None:
        super().__init__(context)
        self._pending: list[tuple[nodes.Call, dict]] = []

    def visit_call(self, node: nodes.Call) -> None:
        super().visit_call(node)
        call = self.context.nnx_call(node)
        if call is None or call.name not in flax_table.CONTAINER_NAMES or call.is_compat or call.via_partial:
            return
        if self._in_class_store(node) or self._in_outer_container(node):
            return
        items = [item for item in self.classes.stored_items(node) if item[0]]
        for position, (path, ref, _container) in enumerate(items):
            if ref is None:
                continue
            for other_path, other_ref, _ in items[position + 1:]:
                if other_ref is None or not ref.overlaps(other_ref) or _prefix(path, other_path):
                    continue
                kind = self.classes.kind_of(other_ref)
                if kind not in SHARED_KINDS or self.context.mode.scope_keeps_graph_mode(node):
                    continue
                self._pending.append((node, dict(
                    class_name=None, first_path=join_path(path), second_path=join_path(other_path),
                    kind=KIND_WORDS.get(kind, kind), shared=ref.describe(), container=short_source(node),
                    conditional=False, stored_in=None, confidence="static", first_part="", second_part="",
                    container_type=call.name if call.name in ("List", "Sequential") else None,
                    used_with=None)))
                return

    def leave_module(self, node: nodes.Module) -> None:
        super().leave_module(node)
        for container, facts in self._pending:
            uses = self._object_uses.get(Ref(("new", container)))
            if uses and all(uses):
                continue  # every use of this container keeps graph mode
            self.report(container, **facts, **self._pin_facts(Ref(("new", container))))

    def _in_class_store(self, node: nodes.NodeNG) -> bool:
        """Inside the value of a ``self.x = ...`` store of a method (the class replay covers it)."""
        current = node
        while current is not None and not isinstance(current, (nodes.FunctionDef, nodes.Lambda, nodes.Module)):
            if isinstance(current, (nodes.Assign, nodes.AnnAssign)):
                targets = current.targets if isinstance(current, nodes.Assign) else [current.target]
                return any(isinstance(t, nodes.AssignAttr) for t in targets) and isinstance(
                    current.scope(), nodes.FunctionDef) and isinstance(current.scope().parent, nodes.ClassDef)
            if isinstance(current, nodes.Call) and current is not node and isinstance(current.func, nodes.Attribute) \
                    and current.func.attrname == "append":
                return isinstance(current.scope(), nodes.FunctionDef) and isinstance(current.scope().parent,
                                                                                      nodes.ClassDef)
            current = current.parent
        return False

    def _in_outer_container(self, node: nodes.NodeNG) -> bool:
        current = node.parent
        while current is not None and not isinstance(current, (nodes.FunctionDef, nodes.Lambda, nodes.Module)):
            if isinstance(current, nodes.Call):
                call = self.context.nnx_call(current)
                if call is not None and call.name in flax_table.CONTAINER_NAMES:
                    return True
            current = current.parent
        return False


def _prefix(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]
