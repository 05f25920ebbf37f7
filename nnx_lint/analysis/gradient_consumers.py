"""What a gradient's consumers do with it: where it is used as an ``nnx.State`` (NNX403), checked
against ``nnx.State`` (NNX404) or reduced over all its leaves, for the grad semantics family's analysis."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from astroid import nodes

from nnx_lint.analysis.flow import expressions_within
from nnx_lint.analysis.gradient_flow import GradientUse
from nnx_lint.analysis.names import NameResolver
from nnx_lint.base import program_syntax as programs
from nnx_lint.flax_table import table as flax_table

if TYPE_CHECKING:
    from nnx_lint.analysis.grad_arguments import Differentiated


#: flax containers whose Tree Mode gradient (the container itself) still indexes, iterates and
#: answers ``in`` like graph mode's State (measured with flax 0.12.8); ``nnx.Sequential`` is
#: a container that does none of it, so its gradient breaks like any Module's.
MAPPING_LIKE_CONTAINERS = frozenset({flax_table.NNX_DICT, flax_table.NNX_LIST})


#: Functions that need a ``State``/Mapping argument (position of that argument): flax's and
#: ``dict(...)``.
STATE_FUNCTIONS = {**flax_table.NNX_STATE_FUNCTIONS, "builtins.dict": 0, "dict": 0}



#: Methods through which Python's ``in`` works on an object (else: TypeError, not iterable).
_MEMBERSHIP_METHODS = frozenset({"__contains__", "__iter__", "__getitem__"})

#: Classes a gradient is checked against that graph mode's gradient was an instance of.
#: (``nnx.GraphState`` is another class: graph-mode transforms do not return it.)
STATE_TYPE_NAMES = frozenset({flax_table.NNX_STATE})

#: ``unittest`` assertions on an instance's class.
_ASSERT_INSTANCE = frozenset({"assertIsInstance", "assertNotIsInstance"})

#: ``type(g) <op> C``: the comparison, named as a test.
_IDENTITY_TESTS = {"is": "type-is", "==": "type-is", "is not": "type-is-not", "!=": "type-is-not"}


@dataclass(frozen=True)
class StateTypeCheck:
    """A gradient checked against ``nnx.State``; ``test`` is ``isinstance``, ``assertIsInstance``,
    ``assertNotIsInstance``, ``type-is`` or ``type-is-not``."""

    test: str
    text: str            #: the check as written
    state_class: str     #: the spelling of ``nnx.State`` that reaches the check
    how: str             #: "" (written there), "in the tuple", "one value of `grad_type`"
    node: nodes.NodeNG

    @property
    def tree_mode_value(self) -> bool:
        """What the ``isinstance``/``type(...) is`` test gives in Tree Mode (graph mode: the opposite)."""
        return tree_mode_value(self.test)


def tree_mode_value(test: str) -> bool:
    """What a check of a Module gradient against ``nnx.State`` gives in Tree Mode: only
    ``type(g) is not nnx.State`` holds (graph mode's gradient was a State: the opposite)."""
    return test == "type-is-not"


class GradientConsumers:
    """The consumer half of the per-file grad analysis (:class:`nnx_lint.analysis.grad_arguments._Analysis`
    inherits it): it needs ``context``, ``transforms`` and :meth:`is_state_value`."""

    # -- consumers --------------------------------------------------------------------------
    def reported_at(self, use: GradientUse, where: nodes.NodeNG, happens: str) -> tuple[nodes.NodeNG, list]:
        """Where a finding on ``where`` (a consumer of the gradient ``use``) is reported, and
        the related locations that adds: ``where`` itself, or, when the gradient was followed
        into another project file, the call of this file that passed it there, with
        ``where`` (``happens`` says what it does) as a related location."""
        if use.exit_call is None or where.root() is self.context.module:
            return where, []
        return use.exit_call, [(where, happens)]

    def state_usage(self, use: nodes.NodeNG, differentiated: Differentiated) -> tuple[str, str, nodes.NodeNG] | None:
        """``(usage, error, node)`` when the gradient ``use`` is used as an ``nnx.State`` here."""
        parent = use.parent
        text = use.name if isinstance(use, nodes.Name) else use.as_string()
        type_name = differentiated.class_name or "Module"
        if self._guarded_by_state_check(use):
            return None  # `if isinstance(grads, nnx.State): grads.filter(...)`: Tree Mode skips it
        if isinstance(parent, nodes.Keyword) and self._optimizer_extra_argument(parent):
            return (f".update({parent.arg}={programs.clipped(text, 20)})",
                    "ValueError: pytree structure error: different types, against the State of params", parent)
        if differentiated.container and differentiated.qualified_name in MAPPING_LIKE_CONTAINERS:
            return self._mapping_like_usage(use, text)
        if isinstance(parent, nodes.Subscript) and parent.value is use:
            return (f"{text}[{parent.slice.as_string()}]", f"TypeError: '{type_name}' object is not subscriptable", parent)
        if isinstance(parent, nodes.Attribute) and parent.expr is use and parent.attrname in flax_table.STATE_METHODS:
            if parent.attrname in differentiated.class_attributes:
                return None
            if isinstance(parent.parent, nodes.Call) and parent.parent.func is parent:
                return (f"{text}.{parent.attrname}()",
                        f"AttributeError: '{type_name}' object has no attribute '{parent.attrname}'", parent.parent)
            return None
        if isinstance(parent, (nodes.For, nodes.Comprehension)) and parent.iter is use:
            return (f"for ... in {text}", f"TypeError: '{type_name}' object is not iterable", use)
        if isinstance(parent, nodes.Compare) and any(op in ("in", "not in") and right is use for op, right in parent.ops):
            if differentiated.class_attributes & _MEMBERSHIP_METHODS:
                return None  # the class answers `in` itself
            return (programs.clipped(parent.as_string(), 40), f"TypeError: argument of type '{type_name}' is not iterable", parent)
        if isinstance(parent, nodes.Call) and use in parent.args:
            name = self.context.qualified_name(parent.func)
            index = parent.args.index(use)
            where = STATE_FUNCTIONS.get(name or "", False)
            if where is not False and (where is None or where == index or (where == "rest" and index >= 1)):
                short = name.replace(flax_table.NNX_PREFIX, "nnx.").replace("builtins.", "")
                return (f"{short}({text})", "raises (needs a State/Mapping)", parent)
            return self._against_a_state(parent, use, name, text)
        return None

    def _against_a_state(self, call: nodes.Call, use: nodes.NodeNG, name: str | None,
                         text: str) -> tuple[str, str, nodes.NodeNG] | None:
        """``jax.tree.map(f, <State>, grads)`` / ``optax.apply_updates(<State>, grads)``."""
        if name in flax_table.TREE_MAPS or name == flax_table.OPTAX_APPLY_UPDATES:
            trees = call.args[1:] if name in flax_table.TREE_MAPS else call.args
            # a State on some path is enough: graph mode combines them there, Tree Mode raises
            if any(self.is_state_value(other, on_some_path=True) for other in trees if other is not use):
                short = flax_table.OPTAX_APPLY_UPDATES if name == flax_table.OPTAX_APPLY_UPDATES else flax_table.TREE_MAP
                return (f"{short}(..., {text})",
                        "ValueError: pytree structure error: different types, against an nnx.State", call)
        return None

    def state_type_check(self, use: nodes.NodeNG) -> StateTypeCheck | None:
        """The check of the gradient ``use`` against ``nnx.State`` made here, if any:
        ``isinstance(use, C)``, ``self.assertIsInstance(use, C)`` / ``assertNotIsInstance``,
        ``type(use) is C`` / ``is not`` / ``==`` / ``!=``, where the class expression ``C``
        may be ``nnx.State``: written so (any spelling the name resolver canonicalises to
        it), inside a tuple of classes, or one branch of a name bound to ``nnx.State if
        flag else Net``."""
        parent = use.parent
        if not isinstance(parent, nodes.Call) or not parent.args or parent.args[0] is not use:
            return None
        func = parent.func
        if _is_builtin(func, "isinstance") and len(parent.args) == 2:
            return self._against_state(parent, "isinstance", parent.args[1])
        if isinstance(func, nodes.Attribute) and func.attrname in _ASSERT_INSTANCE:
            cls = parent.args[1] if len(parent.args) > 1 else \
                next((k.value for k in parent.keywords or () if k.arg == "cls"), None)
            return self._against_state(parent, func.attrname, cls) if cls is not None else None
        compare = parent.parent
        if _is_builtin(func, "type") and len(parent.args) == 1 and isinstance(compare, nodes.Compare) \
                and len(compare.ops) == 1 and compare.ops[0][0] in _IDENTITY_TESTS:
            operator, right = compare.ops[0]
            other = right if compare.left is parent else compare.left if right is parent else None
            if other is not None:
                return self._against_state(compare, _IDENTITY_TESTS[operator], other)
        return None

    def _mapping_like_usage(self, use: nodes.NodeNG, text: str) -> tuple[str, str, nodes.NodeNG] | None:
        """:meth:`state_usage` for the gradient of an ``nnx.Dict`` / ``nnx.List``: Tree Mode's
        gradient is that container, which still indexes, iterates and answers ``in`` like the
        State graph mode gave; only combining it with a State, or a State-only function, raises
        (an optax extra argument is :meth:`state_usage`'s, for every gradient)."""
        parent = use.parent
        if isinstance(parent, nodes.Call) and use in parent.args:
            name = self.context.qualified_name(parent.func)
            if name == flax_table.NNX_TO_PURE_DICT:
                return f"nnx.to_pure_dict({text})", "raises (needs a State/Mapping)", parent
            return self._against_a_state(parent, use, name, text)
        return None

    def _optimizer_extra_argument(self, keyword: nodes.Keyword) -> bool:
        """Whether ``keyword`` is an optax extra argument of an optimizer step:
        ``optimizer.update(model, grads, grad=...)``, where ``optimizer`` is an
        ``nnx.Optimizer`` (or a subclass keeping flax's ``update``) or, its class unknown, the call passes a
        linesearch's ``value_fn=``. flax hands those keywords to ``tx.update`` next to the
        State of params, and a linesearch tree-maps ``grad`` against it."""
        call = keyword.parent
        if not isinstance(call, nodes.Call) or not isinstance(call.func, nodes.Attribute) \
                or call.func.attrname != "update" or keyword.arg is None:
            return False
        receiver = self.context.classes.class_of_self(call.func.expr)
        if receiver is not None:
            # A project subclass that defines its own `update` decides what its keywords mean.
            overridden = receiver.definition is not None and self.transforms.method_of(receiver.definition, "update")
            return self.context.classes.is_instance_of(receiver, flax_table.OPTIMIZER_CLASSES) and not overridden
        return any(other.arg == "value_fn" for other in call.keywords or ())

    def _guarded_by_state_check(self, use: nodes.NodeNG) -> bool:
        """Whether ``use`` (a name) runs only when ``isinstance(<that name>, nnx.State)`` held:
        in the body of an ``if`` / ``a if c else b`` testing it (alone or in an ``and``)."""
        if not isinstance(use, nodes.Name):
            return False
        child, node = use, use.parent
        while node is not None and not isinstance(node, (nodes.FunctionDef, nodes.Lambda, nodes.Module)):
            if isinstance(node, nodes.If) and child in node.body or isinstance(node, nodes.IfExp) and child is node.body:
                tests = node.test.values if isinstance(node.test, nodes.BoolOp) and node.test.op == "and" else [node.test]
                for test in tests:
                    if isinstance(test, nodes.Call) and _is_builtin(test.func, "isinstance") and len(test.args) == 2 \
                            and isinstance(test.args[0], nodes.Name) and test.args[0].name == use.name \
                            and self._against_state(test, "isinstance", test.args[1]) is not None:
                        return True
            child, node = node, node.parent
        return False

    def _against_state(self, node: nodes.NodeNG, test: str, cls: nodes.NodeNG) -> StateTypeCheck | None:
        """``node`` (the check) as a :class:`StateTypeCheck` if its class expression ``cls`` may be ``nnx.State``."""
        for expression, _reference in expressions_within(cls):
            if isinstance(expression, (nodes.Name, nodes.Attribute)) \
                    and self.context.qualified_name(expression) in STATE_TYPE_NAMES:
                how = "" if expression is cls else (
                    "in the tuple" if isinstance(cls, nodes.Tuple) else f"one value of `{programs.clipped(cls.as_string(), 30)}`")
                return StateTypeCheck(test, node.as_string(), expression.as_string(), how, node)
        return None

    def whole_tree_usage(self, use: nodes.NodeNG) -> tuple[str, nodes.NodeNG] | None:
        """``(consumer, node)`` when the gradient ``use`` is reduced over all its leaves here."""
        parent = use.parent
        if isinstance(parent, nodes.Call) and use in parent.args:
            name = self.context.qualified_name(parent.func)
            if name in flax_table.WHOLE_TREE_CONSUMERS and parent.args.index(use) == flax_table.WHOLE_TREE_CONSUMERS[name]:
                return name, parent
        return None


def _is_builtin(func: nodes.NodeNG, name: str) -> bool:
    """``func`` is the builtin ``name`` (a bare name no scope of the file rebinds)."""
    return isinstance(func, nodes.Name) and func.name == name and NameResolver.defining_scope(name, func) is None
