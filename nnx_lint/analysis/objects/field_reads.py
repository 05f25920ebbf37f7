"""Reads of ``self.x`` that can only see the value a method itself just stored there.

The model's fields are flow-insensitive: ``self.rotary_embedding`` holds every object any
store puts there. maxtext's ``CompressedAttention`` lets its base class build one rotary
embedding, replaces it (``self.rotary_embedding = DeepSeekV4RotaryEmbedding(...)``), and only
then hands ``self.rotary_embedding`` to the compressors it builds: at runtime they get the
replacement, and the field's union gave them the base's embedding too, with the Rngs it keeps
(a shared Rngs that is not there). :func:`dominating_stores` finds each such read: one that
every path from the method's start reaches through a store of the same attribute on the same
``self``, with no call, ``yield`` or ``await``, and no store of that attribute through any
other name, in between. The summary then reads the stored value instead of the field.

What it trusts: an operator (``a > b``, ``x[i]``) runs no user code that assigns the attribute
(a ``__gt__`` or ``__getitem__`` that does is not modelled); any call might, so every call
forgets what was stored.
"""
from __future__ import annotations

from astroid import nodes

from nnx_lint.analysis.names import decorator_names, root_name
from nnx_lint.base.node_index import nodes_of_class

#: Statements whose blocks run in an order this module does not follow: what was stored before
#: them is forgotten inside and after them.
_OPAQUE = (nodes.With, nodes.AsyncWith, nodes.Match, nodes.TryStar) if hasattr(nodes, "TryStar") \
    else (nodes.With, nodes.AsyncWith, nodes.Match)

Known = dict  # attribute name -> the value node of the store in force


def dominating_stores(function: nodes.FunctionDef) -> dict[int, nodes.NodeNG]:
    """``id(read)`` -> the value node of the store every path reaches it through, for each read
    ``self.x`` in ``function`` (a method, ``self`` its first parameter and never rebound)."""
    receiver = _receiver(function)
    if receiver is None:
        return {}
    walker = _Walker(receiver)
    walker.block(function.body, {})
    return walker.found


def receiver_of(function: nodes.NodeNG) -> nodes.AssignName | None:
    """The parameter an instance method is called with its instance as (``self``): the first of a
    method defined in a class body that is not a static or class method (told by its
    :func:`~nnx_lint.analysis.names.decorator_names`). None for anything else, or a method without
    parameters."""
    if not isinstance(function, nodes.FunctionDef) or not isinstance(function.parent, nodes.ClassDef):
        return None
    if decorator_names(function) & {"staticmethod", "classmethod"}:
        return None
    positional = function.args.posonlyargs or function.args.args
    return positional[0] if positional else None


def fills_instances(method: nodes.FunctionDef) -> bool:
    """Whether ``method`` may make or fill instances of its class by itself: a constructor, a
    class or static method (a factory), or an instance method that stores through its first
    parameter (``self.x = ...``, ``self.x.y = ...``, ``setattr(self, ...)``, in nested functions too)."""
    receiver = receiver_of(method)
    if method.name in ("__init__", "__post_init__", "__new__") or receiver is None:
        return True
    for node in nodes_of_class(method, (nodes.AssignAttr, nodes.DelAttr, nodes.Call)):
        if isinstance(node, nodes.Call):
            if not (isinstance(node.func, (nodes.Name, nodes.Attribute)) and "setattr" in (
                    getattr(node.func, "name", None), getattr(node.func, "attrname", None))):
                continue
            if not node.args:
                continue
            base = node.args[0]
        else:
            base = node.expr
        root = root_name(base)
        if root is not None and root.name == receiver.name:
            return True
    return False


def _receiver(function: nodes.NodeNG) -> str | None:
    """The name of ``function``'s receiver, when the body never rebinds it."""
    receiver = receiver_of(function)
    if receiver is None:
        return None
    bindings = function.locals.get(receiver.name, [])
    return receiver.name if len(bindings) == 1 and bindings[0] is receiver else None


class _Walker:
    def __init__(self, receiver: str) -> None:
        self.receiver = receiver
        self.found: dict[int, nodes.NodeNG] = {}

    # -- statements ----------------------------------------------------------------------
    def block(self, statements: list, known: Known) -> Known:
        for statement in statements:
            known = self.statement(statement, known)
        return known

    def statement(self, node: nodes.NodeNG, known: Known) -> Known:
        if isinstance(node, nodes.If):
            known = self.expression(node.test, known)
            body = self.block(node.body, dict(known))
            orelse = self.block(node.orelse, dict(known))
            return {attr: value for attr, value in body.items() if orelse.get(attr) is value}
        if isinstance(node, (nodes.For, nodes.AsyncFor, nodes.While)):
            # the body runs again after itself: only what nothing in the loop changes holds in it
            known = _surviving(known, node)
            known = self.expression(node.iter if isinstance(node, (nodes.For, nodes.AsyncFor)) else node.test, known)
            self._forget_targets(getattr(node, "target", None), known)
            self.block(node.body, dict(known))
            self.block(node.orelse, dict(known))
            return _surviving(known, node)
        if isinstance(node, nodes.Try):
            self.block(node.body, dict(known))
            for handler in node.handlers:
                self.block(handler.body, {})
            self.block(node.orelse, {})
            self.block(node.finalbody, {})
            return {}
        if isinstance(node, _OPAQUE):
            return {}  # nothing is known inside, so no read there is recorded
        if isinstance(node, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.ClassDef, nodes.Lambda)):
            return {}  # decorators and default values are calls and expressions run here
        if isinstance(node, nodes.Assign):
            known = self.expression(node.value, known)
            for target in node.targets:
                self._assign(target, node.value, known)
            return known
        if isinstance(node, nodes.AnnAssign):
            if node.value is not None:
                known = self.expression(node.value, known)
            self._assign(node.target, node.value, known)
            return known
        if isinstance(node, nodes.AugAssign):
            self.expression(node.value, known)
            return {}  # `self.x += y` runs `__iadd__`
        if isinstance(node, nodes.Delete):
            for target in node.targets:
                self._forget_targets(target, known)
            return known
        for child in node.get_children():  # Expr, Return, Raise, Assert, ...
            known = self.expression(child, known)
        return known

    def _assign(self, target: nodes.NodeNG, value: nodes.NodeNG | None, known: Known) -> None:
        if isinstance(target, nodes.AssignAttr):
            self.expression(target.expr, known)
            known.pop(target.attrname, None)  # through another name, it may be this object's
            if value is not None and self._is_receiver(target.expr):
                known[target.attrname] = value
        elif isinstance(target, nodes.Subscript):
            self.expression(target.value, known)
            self.expression(target.slice, known)
        else:
            self._forget_targets(target, known)

    def _forget_targets(self, target: nodes.NodeNG | None, known: Known) -> None:
        if target is None:
            return
        for node in nodes_of_class(target, (nodes.AssignAttr, nodes.DelAttr)):
            known.pop(node.attrname, None)

    # -- expressions ---------------------------------------------------------------------
    def expression(self, node: nodes.NodeNG, known: Known) -> Known:
        """Walk ``node`` in evaluation order; return what is known after it."""
        if isinstance(node, (nodes.Lambda, nodes.FunctionDef)):
            return known  # its body runs later, if ever
        if isinstance(node, nodes.Attribute) and self._is_receiver(node.expr):
            value = known.get(node.attrname)
            if value is not None:
                self.found[id(node)] = value
            return known
        if isinstance(node, (nodes.IfExp, nodes.BoolOp)):
            # Parts that may not run: each is read as it would run (after the parts before it),
            # and what any of them may call or store is forgotten after the whole.
            before = known
            if isinstance(node, nodes.IfExp):
                known = self.expression(node.test, dict(known))
                self.expression(node.body, dict(known))
                self.expression(node.orelse, dict(known))
            else:
                known = dict(known)
                for value in node.values:
                    known = self.expression(value, known)
            return _surviving(before, node)
        for child in node.get_children():
            known = self.expression(child, known)
        if isinstance(node, (nodes.Call, nodes.Yield, nodes.YieldFrom, nodes.Await)):
            return {}
        if isinstance(node, nodes.NamedExpr):
            self._forget_targets(node.target, known)
        return known

    def _is_receiver(self, node: nodes.NodeNG) -> bool:
        return isinstance(node, nodes.Name) and node.name == self.receiver


def _surviving(known: Known, node: nodes.NodeNG) -> Known:
    """What ``known`` still says once ``node`` may have run: nothing after a call, a ``yield`` or
    an ``await`` in it; without the attributes it stores or deletes otherwise."""
    if not known:
        return known
    stored = set()
    for inner in nodes_of_class(node, (nodes.Call, nodes.Yield, nodes.YieldFrom, nodes.Await,
                                      nodes.AssignAttr, nodes.DelAttr, nodes.AugAssign)):
        if isinstance(inner, (nodes.AssignAttr, nodes.DelAttr)):
            stored.add(inner.attrname)
        else:
            return {}
    return {attr: value for attr, value in known.items() if attr not in stored}
