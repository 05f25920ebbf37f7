"""The value model's States: whether an expression is an ``nnx.State`` (:meth:`StateValues.is_state`),
for :class:`nnx_lint.analysis.values.ValueModel`, which inherits it."""
from __future__ import annotations

from astroid import nodes

from nnx_lint.flax_table import nnx_api
from nnx_lint.analysis.annotations import annotation_head
from nnx_lint.analysis.flow import bound_values, lookup
from nnx_lint.base.node_index import nodes_of_class
from nnx_lint.flax_table.names import JAX_LOOPS, NNX_CLONE, NNX_DATA, STRUCTURE_KEEPING


#: How deep :meth:`StateValues.is_state` follows names, keys and carries (a State is often
#: several rebindings away: split, tree-mapped to zeros, resharded, put in a loop's carry).
_MAX_STATE_DEPTH = 12


class StateValues:
    """The States half of :class:`nnx_lint.analysis.values.ValueModel`: it needs the model's
    ``context``, ``classes`` and ``_loop_calls`` (a memo of each loop body's loop call)."""

    # -- States -------------------------------------------------------------------------------
    def is_state(self, expression: nodes.NodeNG, depth: int = 0, *, on_some_path: bool = False) -> bool:
        """Whether ``expression`` is an ``nnx.State``: ``nnx.state(...)``, ``nnx.split(...)[1]``,
        a name bound (on every path) to one, an attribute stored as one, a ``State`` annotation,
        ``jax.tree.map(f, state)`` (the structure of its first tree), the value of a key of a
        dict that holds one (``carry["grad"]``, also the carry of a ``jax.lax.scan`` /
        ``fori_loop`` / ``while_loop`` body, which is the loop's initial value).

        ``on_some_path``: a State on some path the code can take is enough (a name rebound
        in one branch, a parameter rebound by ``nnx.split``): the question when combining a
        gradient with it, where graph mode runs on that path and Tree Mode raises.
        """
        if depth > _MAX_STATE_DEPTH:
            return False
        every = any if on_some_path else all
        if isinstance(expression, nodes.Call):
            name = self.context.qualified_name(expression.func)
            if name == NNX_CLONE:
                return bool(expression.args) and self.is_state(expression.args[0], depth + 1)
            if name in STRUCTURE_KEEPING:  # jax.tree.map(f, state, ...) has the first tree's structure
                position = STRUCTURE_KEEPING[name]
                return len(expression.args) > position and self.is_state(
                    expression.args[position], depth + 1, on_some_path=on_some_path)
            return name in nnx_api.STATE_PRODUCERS
        if isinstance(expression, nodes.Subscript):
            if isinstance(expression.value, nodes.Call) and self.context.qualified_name(expression.value.func) in nnx_api.SPLITS:
                return _is_int(expression.slice) and expression.slice.value >= 1
            if isinstance(expression.slice, nodes.Const) and isinstance(expression.slice.value, str):
                values = self._keyed_values(expression.value, expression.slice.value, depth)
                return bool(values) and every(self.is_state(v, depth + 1, on_some_path=on_some_path) for v in values)
            return False
        if isinstance(expression, nodes.Attribute):  # self.params, stored as a State
            owner = self.classes.class_of_self(expression.expr)
            if owner is None or owner.definition is None:
                return False
            # An empty container stored on another branch (`self.grads = nnx.data({})` when
            # nothing is allocated) is a placeholder: combining it with a non-empty tree raises
            # in both modes, so where the code runs in graph mode the attribute is the State.
            stores = [store for store in self.classes.info(owner.definition).stores_of(expression.attrname)
                      if not self._empty_container(store.value)]
            return bool(stores) and all(self._stored_state(store, depth) for store in stores)
        if isinstance(expression, nodes.Name):
            annotation = self.classes.class_of(expression)
            if annotation is not None and annotation.qualified_name in nnx_api.STATE_CLASSES:
                return True
            _scope, assignments = lookup(expression)
            carried = self._loop_carry(assignments)
            if carried is not None:
                return self.is_state(carried, depth + 1, on_some_path=on_some_path)
            return bool(assignments) and every(self._binds_state(a, depth, on_some_path) for a in assignments)
        return False

    def _keyed_values(self, base: nodes.NodeNG, key: str, depth: int) -> list[nodes.NodeNG]:
        """What ``base[key]`` may be when ``base`` is (bound to) a dict display or ``dict(...)``
        call, or is a loop body's carry started from one; empty when unknown."""
        if depth > _MAX_STATE_DEPTH:
            return []
        if isinstance(base, nodes.Dict):
            return [value for item, value in base.items if isinstance(item, nodes.Const) and item.value == key]
        if isinstance(base, nodes.Call) and self.context.qualified_name(base.func) == "builtins.dict":
            return [k.value for k in base.keywords or () if k.arg == key]
        if isinstance(base, nodes.Name):
            _scope, assignments = lookup(base)
            carried = self._loop_carry(assignments)
            if carried is not None:
                return self._keyed_values(carried, key, depth + 1)
            values = bound_values(base)
            found = [v for value in values for v in self._keyed_values(value, key, depth + 1)]
            return found if len(values) == 1 else []
        return []

    def _loop_carry(self, assignments: list[nodes.NodeNG]) -> nodes.NodeNG | None:
        """The initial value of the carry, when ``assignments`` is the one binding of a loop
        body's carry parameter (``def body(carry, x)`` given to ``jax.lax.scan(body, init, xs)``,
        ``fori_loop(lo, hi, body, init)``, ``while_loop(cond, body, init)``): the loop passes
        its initial value on the first pass, and a body that keeps its structure every pass."""
        if len(assignments) != 1 or not isinstance(assignments[0], nodes.AssignName) \
                or not isinstance(assignments[0].parent, nodes.Arguments):
            return None
        parameter = assignments[0]
        function = parameter.parent.parent
        if not isinstance(function, nodes.FunctionDef):
            return None
        key = id(function)
        if key not in self._loop_calls:
            self._loop_calls[key] = self._loop_call_of(function)
        found = self._loop_calls[key]
        if found is None:
            return None
        call, (_body, init_position, carry_position) = found
        positional = function.args.args or []
        if carry_position >= len(positional) or positional[carry_position] is not parameter:
            return None
        return call.args[init_position] if len(call.args) > init_position else None

    def _loop_call_of(self, function: nodes.FunctionDef) -> tuple[nodes.Call, tuple[int, int, int]] | None:
        """The one loop call in ``function``'s enclosing scope that takes it as its body."""
        scope = function.parent.scope() if function.parent is not None else None
        if scope is None:
            return None
        found = []
        for call in nodes_of_class(scope, nodes.Call):
            shape = JAX_LOOPS.get(self.context.qualified_name(call.func) or "")
            if shape is None or len(call.args) <= shape[0] or not isinstance(call.args[shape[0]], nodes.Name):
                continue
            _scope, bound = lookup(call.args[shape[0]])
            if bound == [function]:
                found.append((call, shape))
        return found[0] if len(found) == 1 else None

    def _stored_state(self, store, depth: int) -> bool:
        parent = store.target.parent
        if isinstance(parent, nodes.AnnAssign):
            if self.context.qualified_name(annotation_head(parent.annotation)) in nnx_api.STATE_CLASSES:
                return True
        value = self._data_content(store.value)
        return value is not None and self.is_state(value, depth + 1)

    def _data_content(self, value: nodes.NodeNG | None) -> nodes.NodeNG | None:
        """What ``nnx.data(value)`` wraps (``value`` itself when it is no such call)."""
        if isinstance(value, nodes.Call) and value.args and self.context.qualified_name(value.func) == NNX_DATA:
            return value.args[0]
        return value

    def _empty_container(self, value: nodes.NodeNG | None) -> bool:
        """``{}``, ``[]``, ``()``, ``dict()``, also wrapped in ``nnx.data(...)``."""
        value = self._data_content(value)
        if isinstance(value, (nodes.Dict, nodes.List, nodes.Tuple)):
            return not (value.items if isinstance(value, nodes.Dict) else value.elts)
        return isinstance(value, nodes.Call) and not value.args and not value.keywords \
            and self.context.qualified_name(value.func) in ("builtins.dict", "builtins.list", "builtins.tuple")

    def _binds_state(self, assignment: nodes.NodeNG, depth: int, on_some_path: bool = False) -> bool:
        if not isinstance(assignment, nodes.AssignName):
            return False
        parent = assignment.parent
        if isinstance(parent, (nodes.Assign, nodes.AnnAssign)) and parent.value is not None:
            return self.is_state(parent.value, depth + 1, on_some_path=on_some_path)
        if isinstance(parent, nodes.Tuple) and isinstance(parent.parent, nodes.Assign):
            value = parent.parent.value
            index = parent.elts.index(assignment)
            if isinstance(value, nodes.Call) and self.context.qualified_name(value.func) in nnx_api.SPLITS:
                return index >= 1 and not any(isinstance(e, nodes.Starred) for e in parent.elts[:index])
            if isinstance(value, nodes.Tuple) and len(value.elts) == len(parent.elts):
                return self.is_state(value.elts[index], depth + 1, on_some_path=on_some_path)
        return False


def _is_int(node: nodes.NodeNG | None) -> bool:
    return isinstance(node, nodes.Const) and type(node.value) is int
