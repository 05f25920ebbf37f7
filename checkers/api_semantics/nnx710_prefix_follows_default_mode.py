"""NNX710 ``prefix-follows-default-mode``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.api import (
    ABSENT,
    Facts,
    Invalid,
    NNXCall,
    Reproduction,
    Rule,
    Valid,
    bound_values_of,
    fact_index,
    flax_table,
    lookup,
    pin_sites_in,
    programs,
    raises,
)

if TYPE_CHECKING:
    from nnx_lint.api import FileContext

#: How far a name is followed back to the ``nnx.prefix`` call it was bound to.
_MAX_ALIASES = 3
_MADE_HERE = "the prefix is made here, following the default mode"


@dataclass(frozen=True, kw_only=True)
class PrefixFollowsDefaultModeFacts(Facts):
    """What ``NNX710`` reports (the diagnostic's ``facts``, in this order)."""

    use: str
    pin: list = ABSENT


class PrefixFollowsDefaultMode(Rule):
    """`nnx.prefix(...)` without `graph=`, read as a `TreeState` or given to a transform pinned to graph mode.

    What it does:
        Flags an `nnx.prefix(node, filters)` that follows the default mode (no `graph=`, no
        graph-mode scope) when its result is read as the graph-mode `TreeState` it is today
        (`.state`), or is passed in the axes or shardings (`in_axes`, `out_axes`,
        `in_shardings`, `out_shardings`, `in_specs`, `out_specs`) of a transform that pins
        graph mode with `graph=True, graph_updates=False` (the only graph-mode flags that
        accept a `TreeState` prefix today). The prefix may be passed inline or through a
        name bound to the call, also by unpacking (`px1, px2 = nnx.prefix((m1, m2), ...)`).

    Why is this bad?:
        `nnx.prefix` reads the default mode at each call. In graph mode it flattens the node
        and returns a `TreeState` (`.state['kernel']`); in Tree Mode it returns a pytree
        shaped like the node itself (`.kernel`). After the flip, `prefix.state` raises
        `AttributeError: 'Linear' object has no attribute 'state'`, and a transform that
        kept `graph=True` rejects the Module-shaped prefix: `ValueError: Found graph node
        of type Linear at path [0] in in_axes for nnx.vmap. Graph nodes are not allowed as
        prefixes when graph=True`. Give the prefix the mode of the transform that reads
        it: `nnx.prefix(..., graph=True)` next to a `graph=True` transform, or migrate both
        together (`graph=False` on each, and read the prefix as the node: `prefix.kernel`).
        A check `isinstance(prefix, nnx.extract.TreeState)` silently turns False as well;
        it is not flagged.

    References:
        - Patterns in the catalogue: [H12](../catalogue.md#h12)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX710"
    visits_nnx_calls_only = True
    facts_type = PrefixFollowsDefaultModeFacts
    fixes = ("pin",)
    symbol = "prefix-follows-default-mode"
    kind = "raises"
    catalogue = ("H12",)
    message = "`nnx.prefix` (no `graph=`) {use}: Tree Mode makes it node-shaped, which raises"
    help = (
        "`nnx.prefix` follows the default mode: a `TreeState` in graph mode, a pytree shaped like the node in "
        "Tree Mode. Give it the mode of its reader, `nnx.prefix(..., graph=True)` beside a `graph=True` "
        "transform, or migrate both with `graph=False` (and read the prefix as the node: `prefix.kernel`)"
    )
    VALID = [
        Valid(
            "prefix-with-the-mode-of-its-transform",
            """
            import jax.numpy as jnp
            from flax import nnx

            def forward(model, x):
                kept = nnx.prefix(model, {nnx.Param: 0, ...: None}, graph=True)
                f = nnx.vmap(lambda m, x: m(x), in_axes=(kept, None), graph=True, graph_updates=False)
                tree = nnx.prefix(model, {nnx.Param: 0, ...: None}, graph=False)
                g = nnx.vmap(lambda m, x: m(x), in_axes=(tree, None), graph=False)
                default = nnx.prefix(model, {nnx.Param: 0, ...: None})
                h = nnx.vmap(lambda m, x: m(x), in_axes=(default, None), graph_updates=False)
                return f(model, x), g(model, x), h(model, x), kept.state, tree.kernel
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "state-read-and-pinned-transform",
            """
            import jax.numpy as jnp
            from flax import nnx

            def forward(model, x):
                axes = nnx.prefix(model, {nnx.Param: 0, ...: None})
                kernel_axis = axes.state["kernel"]  # NNX710
                f = nnx.vmap(lambda m, x: m(x), in_axes=(axes, None),  # NNX710
                             graph=True, graph_updates=False)
                return kernel_axis, f(model, x)
            """,
            tree_mode=raises("AttributeError: 'Linear' object has no attribute 'state'; then the vmap rejects "
                             "the Module-shaped prefix"),
        ),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        #: The prefix calls whose first `.state` read was reported.
        self._reads_reported: set[int] = set()

    def visit_attribute(self, node: nodes.Attribute) -> None:
        if node.attrname != "state":  # an Attribute node is a read (stores are AssignAttr)
            return
        made_by = self._prefix_call(node.expr)
        if made_by is None or id(made_by.node) in self._reads_reported:
            return
        # one finding per prefix, at its first read: the fix is on the prefix, the other reads are related
        self._reads_reported.add(id(made_by.node))
        later = [(read, "read as a `TreeState` here too") for read in fact_index(self.context).attribute_reads_in(node.scope())
                 if read is not node and read.attrname == "state" and read.fromlineno >= node.fromlineno
                 and self._same_prefix(read.expr, made_by)]
        self.report(node, use="read as a `TreeState` (`.state`)", pin=pin_sites_in(self.context, made_by),
                    related=[(made_by.node, _MADE_HERE), *later])

    def _same_prefix(self, expression: nodes.NodeNG, made_by: NNXCall) -> bool:
        found = self._prefix_call(expression)
        return found is not None and found.node is made_by.node

    def visit_call(self, node: nodes.Call) -> None:
        transform = self.context.nnx_call(node)
        if transform is None or not transform.is_transform or transform.via_partial:
            return
        mode = self.context.mode.call_mode(transform)
        if mode.graph is not True or mode.graph_updates is not False:
            return  # only graph=True, graph_updates=False accepts the graph-mode TreeState today
        for keyword in sorted(flax_table.PREFIX_KEYWORDS & transform.keywords.keys()):
            for made_by, where in self._prefixes_in(transform.keywords[keyword]):
                self.report(where, use=f"in `{keyword}` of `nnx.{transform.name}(graph=True)`",
                            pin=pin_sites_in(self.context, made_by),
                            related=[(made_by.node, _MADE_HERE),
                                     (node, f"`nnx.{transform.name}` pins graph mode here")])

    def _prefixes_in(self, axes: nodes.NodeNG):
        """``(the nnx.prefix call, the expression that carries it)`` for each prefix inside ``axes``;
        a name bound once to a tuple, list or dict literal (``in_shardings = (p, rep)``) is looked into."""
        if isinstance(axes, nodes.Name):
            _scope, assignments = lookup(axes)
            values = bound_values_of(assignments[0]) if len(assignments) == 1 and \
                isinstance(assignments[0], nodes.AssignName) else []
            if len(values) == 1 and isinstance(values[0], (nodes.Tuple, nodes.List, nodes.Dict)):
                axes = values[0]
        for candidate in [axes, *fact_index(self.context).names_and_calls_in(axes)]:
            if isinstance(candidate, (nodes.Name, nodes.Call)):
                made_by = self._prefix_call(candidate)
                if made_by is not None:
                    yield made_by, candidate

    def _prefix_call(self, expression: nodes.NodeNG, depth: int = 0) -> NNXCall | None:
        """The ``nnx.prefix`` call that follows the default mode and made ``expression``'s value."""
        if depth > _MAX_ALIASES:
            return None
        if isinstance(expression, nodes.Call):
            call = self.context.nnx_call(expression)
            if call is not None and call.name == "prefix" and not call.via_partial and \
                    self.context.flip_changes(call):
                return call
            return None
        if not isinstance(expression, nodes.Name):
            return None
        _scope, assignments = lookup(expression)
        found = [self._bound_prefix(assignment, depth) for assignment in assignments]
        return found[0] if found and all(found) else None

    def _bound_prefix(self, assignment: nodes.NodeNG, depth: int) -> NNXCall | None:
        """The prefix call an assignment binds its name to: ``p = nnx.prefix(...)``, ``q = p``, or one
        element of ``a, b = nnx.prefix((m1, m2), ...)`` (a prefix of a tuple is a tuple of prefixes)."""
        if not isinstance(assignment, nodes.AssignName):
            return None
        values = bound_values_of(assignment)
        if not values:  # unpacked from a call: the element is that call's prefix
            statement = assignment.parent
            while isinstance(statement, (nodes.Tuple, nodes.List)):
                statement = statement.parent
            values = [statement.value] if isinstance(statement, nodes.Assign) and \
                isinstance(statement.value, nodes.Call) else []
        return self._prefix_call(values[0], depth + 1) if len(values) == 1 else None

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """A Linear's prefix made without `graph=` and read as a `TreeState` (`.state`); the control
        is the Tree Mode reading (`.kernel`). For a prefix given to a pinned transform the same read
        shows the Module-shaped prefix the transform rejects: tree_runtime has no graph mode to pin."""
        model = "model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))\naxes = nnx.prefix(model, {nnx.Param: 0, ...: None})"
        stand_ins = () if facts.use.startswith("read") else (
            "reading `.state` stands for the transform pinned to `graph=True`",)
        return Reproduction(programs.lines(model, "return axes.state['kernel']"), expect_error="other:AttributeError",
                            control=programs.lines(model, "return axes.kernel"), stand_ins=stand_ins)
