"""Which transformed function a call runs: the transform resolver's "transformed callables".

``step(model, x)`` with ``step = nnx.jit(train_step)``, ``model(x)`` with ``Model.__call__``
decorated with a transform, ``self._fwd(x)`` with ``self._fwd = nnx.jit(f)`` stored by the class,
``train_step(...)`` imported from a project module that decorates it: each such call runs a
transformed function, and :meth:`TransformedCallables.running_entry` gives its
:class:`~nnx_lint.analysis.transform_types.Entry`. Part of
:class:`~nnx_lint.analysis.transforms.TransformResolver` (a mixin: the entries, the function
lookups and the decorator decoding it uses are the resolver's).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.analysis.flow import bound_values_of, lookup
from nnx_lint.analysis.names import is_external
from nnx_lint.analysis.transform_types import Entry, _is_class_reference
from nnx_lint.flax_table.names import LIBRARY_PREFIXES
from nnx_lint.flax_table.signatures import AHEAD_OF_TIME_METHODS

if TYPE_CHECKING:
    from nnx_lint.analysis.context import FileContext

#: How many names bound to names (``a = b``, ``b = nnx.jit(f)``) are followed.
MAX_ALIAS_DEPTH = 4


class TransformedCallables:
    """The calls that run a transformed function (mixed into the transform resolver)."""

    context: FileContext
    _callables: dict[int, Entry | None]
    _running_entries: dict[int, Entry | None]

    def transformed_callable(self, expression: nodes.NodeNG) -> Entry | None:
        """If calling ``expression`` calls a transformed function, its :class:`Entry`.

        ``nnx.vmap(f, ...)`` (inline), a name bound to ``nnx.jit(f)``, a function decorated
        with a transform (this file or another project file), ``self.decorated_method``.
        """
        key = id(expression)
        if key in self._callables:
            return self._callables[key]
        self._callables[key] = None  # guards recursion
        found = self._transformed_callable(expression, 0)
        self._callables[key] = found
        return found

    def running_entry(self, call: nodes.Call) -> Entry | None:
        """The :class:`Entry` of the transformed function ``call`` runs, also when that
        function is not known (``self._forward = nnx.jit(forward_fn)`` with ``forward_fn`` a
        parameter: its expression then stands for it). Ahead-of-time calls (``.lower(...)``,
        ``.trace(...)``) run nothing. Memoised: several rules ask about every call."""
        key = id(call)
        if key not in self._running_entries:
            self._running_entries[key] = self._running_entry(call)
        return self._running_entries[key]

    def _running_entry(self, call: nodes.Call) -> Entry | None:
        entry = self.transformed_callable(call.func)
        if entry is not None:
            return entry
        if isinstance(call.func, nodes.Attribute) and call.func.attrname in AHEAD_OF_TIME_METHODS:
            return None
        found = self.transformed(call.func)
        if found is None:
            return None
        transform, function, unaffected = found
        return Entry(function, transform.name, transform.node, transform, unaffected, "call")

    def _transformed_callable(self, expression: nodes.NodeNG, depth: int) -> Entry | None:
        if depth > MAX_ALIAS_DEPTH:
            return None
        if isinstance(expression, nodes.Call):
            return self._first_call_entry(expression)
        if isinstance(expression, nodes.Name):
            _scope, assignments = lookup(expression)
            for assignment in assignments:
                if isinstance(assignment, (nodes.ImportFrom, nodes.Import)):
                    return self._imported_callable(self.qualified_name(expression))
                entry = self._binding_entry(assignment, lambda value: self._transformed_callable(value, depth + 1))
                if entry is not None:
                    return entry
            if assignments and all(isinstance(a, (nodes.FunctionDef, nodes.AsyncFunctionDef)) for a in assignments):
                return None  # a plain function, not an instance whose decorated `__call__` would run
            return self._decorated_call_method(expression)
        if isinstance(expression, nodes.Attribute):
            qualified = self.qualified_name(expression)
            if qualified and is_external(qualified):
                return None  # `jnp.zeros`, `optax.adam`: a library's function is no project's transformed one
            for function in self.functions_of(expression):
                entry = self._decorated_entry(function)
                if entry is not None:
                    return entry
            return (self._imported_callable(self.qualified_name(expression))
                    or self._decorated_call_method(expression)
                    or self._stored_transform(expression, depth))
        return None

    def _stored_transform(self, expression: nodes.Attribute, depth: int) -> Entry | None:
        """``self._fwd(...)`` where the class (or a base class) stored ``self._fwd = nnx.jit(f)``."""
        if expression.attrname not in self._names_stored_from_calls():
            return None
        owner = self.context.classes.class_of_self(expression.expr)
        if owner is None or owner.definition is None:
            return None
        for store in self.context.classes.info(owner.definition).stores_of(expression.attrname):
            entry = self._transformed_callable(store.value, depth + 1) if store.value is not None else None
            if entry is not None:
                return entry
        return None

    def _decorated_call_method(self, expression: nodes.NodeNG) -> Entry | None:
        """``model(x)`` where ``Cls.__call__`` is decorated with a transform."""
        if _is_class_reference(expression):
            return None
        ref = self.context.classes.class_of_self(expression)
        if ref is None or ref.definition is None:
            return None
        return self._decorated_entry(self.method_of(ref.definition, "__call__"))

    def _decorated_entry(self, function: nodes.NodeNG | None) -> Entry | None:
        """The transform the first transforming decorator of ``function`` applies, if any."""
        if not isinstance(function, (nodes.FunctionDef, nodes.AsyncFunctionDef)) or not function.decorators:
            return None
        for decorator in function.decorators.nodes:
            entry = self._decorator_entry(function, decorator)
            if entry is not None:
                return entry
        return None

    def _imported_callable(self, qualified_name: str | None) -> Entry | None:
        if not qualified_name or qualified_name.startswith(LIBRARY_PREFIXES):
            return None
        module_name, _, attribute = qualified_name.rpartition(".")
        module = self.context.project.load(module_name) if module_name else None
        if module is None:
            return None
        for assignment in reversed(module.locals.get(attribute, [])):
            # The last binding only, and only `name = nnx.jit(f)` there: following names across
            # modules could cycle.
            return self._binding_entry(assignment, self._first_call_entry)
        return None

    def _binding_entry(self, assignment: nodes.NodeNG,
                       value_entry: Callable[[nodes.NodeNG], Entry | None]) -> Entry | None:
        """The entry one binding of a name gives: its decorated function's, or the first that
        ``value_entry`` finds among the values it binds (``step = nnx.jit(f)``)."""
        if isinstance(assignment, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
            return self._decorated_entry(assignment)
        if isinstance(assignment, nodes.AssignName):
            for value in bound_values_of(assignment):
                entry = value_entry(value)
                if entry is not None:
                    return entry
        return None

    def _first_call_entry(self, value: nodes.NodeNG) -> Entry | None:
        """The first entry of a call that applies a transform (``nnx.jit(f)``), if ``value`` is one."""
        if not isinstance(value, nodes.Call):
            return None
        return next(iter(self._call_entries(value)), None)
