"""Where a value goes: could an expression's value leave the code that made it?

A rule that objects to a value only when something else receives it (a prefix filter is
harmless until a transform reads it) asks :func:`may_leave`. A value *leaves* when it is
returned or yielded, passed as an argument, stored on an object, a class or a global,
bound as a default, or put in a container or a name that does any of these. It stays when
every use only reads it: an attribute lookup (``sharding.map_prefix(path, v)``), a
subscript, a test, a comparison. What the walk cannot follow (unpacking into several
targets, ``with ... as``, a name rebound in a loop it cannot order) counts as leaving: the
answer errs toward "may leave", so a rule asking it only loses findings it can prove
harmless.

>>> import astroid
>>> module = astroid.parse('''
... def lookup(spec):
...     sharding = make(spec) if spec else None
...     return sharding.map_prefix("a", 1)
... def build(spec):
...     axes = make(spec)
...     return [axes]
... ''')
>>> kept, returned = [n for n in module.nodes_of_class(astroid.nodes.Call) if n.func.as_string() == "make"]
>>> may_leave(kept), may_leave(returned)
(False, True)
"""
from __future__ import annotations

from astroid import nodes

from nnx_lint.base.bounds import checkpoint
from nnx_lint.analysis.flow import lookup

#: How many names a value may pass through before the walk gives up (and says "may leave").
MAX_HOPS = 50
#: Nodes that hold their elements: a value in one goes wherever the container goes
#: (``(axes,) + rest`` holds ``axes`` as much as ``(axes,)`` does).
_CONTAINERS = (nodes.List, nodes.Tuple, nodes.Set, nodes.Dict, nodes.Starred, nodes.IfExp, nodes.BoolOp,
               nodes.NamedExpr, nodes.BinOp, nodes.Await)
#: Uses that only read the value (their result is something else).
_READS = (nodes.Compare, nodes.UnaryOp, nodes.If, nodes.While, nodes.Assert, nodes.Expr, nodes.Delete,
          nodes.JoinedStr, nodes.FormattedValue)


def may_leave(node: nodes.NodeNG) -> bool:
    """Whether the value of expression ``node`` may reach code other than the function
    (or module) that computes it: returned, yielded, passed to a call, stored on an
    object, a class or a global, or held by a container or a name that may leave.

    Reads (an attribute or a subscript of it, a test, a comparison) keep it. Anything the
    walk does not know is "may leave"."""
    return _leaves(node, set(), [0], held=False)


def _leaves(node: nodes.NodeNG, seen: set[int], hops: list[int], held: bool) -> bool:
    """``held``: ``node`` is a container (or a name of one) holding the value, not the value:
    reading an element, iterating or calling a method of it may hand the value on."""
    checkpoint("following where a value goes")
    parent = node.parent
    if parent is None:
        return True
    if isinstance(parent, (nodes.Return, nodes.Yield, nodes.YieldFrom, nodes.Lambda)):
        return True
    if isinstance(parent, nodes.Call):
        return parent.func is not node  # an argument leaves; calling the value reads it
    if isinstance(parent, nodes.Keyword):
        return True  # a keyword argument of a call (or of a class definition)
    if isinstance(parent, nodes.IfExp) and parent.test is node:
        return False
    if isinstance(parent, _CONTAINERS):
        if isinstance(parent, nodes.NamedExpr) and not _name_stays(parent.target, seen, hops, held):
            return True
        # A choice (``a if c else b``, ``a or b``) is the value itself; a literal or a sum holds it.
        same = isinstance(parent, (nodes.IfExp, nodes.BoolOp, nodes.NamedExpr, nodes.Await))
        return _leaves(parent, seen, hops, held=held if same else True)
    if isinstance(parent, nodes.Subscript) and parent.value is node:
        # ``value[key]`` reads the value; an element of a container holding it may be it.
        return _leaves(parent, seen, hops, held) if held else False
    if isinstance(parent, nodes.Subscript):
        return not _is_load(parent)  # the key of a subscript store is kept by the container
    if isinstance(parent, nodes.Attribute):
        return held  # a method of a container holding it may hand it on (``d.get``, ``l.pop``)
    if isinstance(parent, (nodes.For, nodes.Comprehension)):
        return held and parent.iter is node  # iterating a container hands out its elements
    if isinstance(parent, _READS):
        return False
    if isinstance(parent, (nodes.Assign, nodes.AnnAssign)):
        targets = parent.targets if isinstance(parent, nodes.Assign) else [parent.target]
        return any(not _name_stays(target, seen, hops, held) for target in targets)
    return True  # defaults, decorators, augmented assignments, with-items, ...


def _is_load(subscript: nodes.Subscript) -> bool:
    return getattr(subscript, "ctx", None) is None or subscript.ctx.name == "Load"


def _name_stays(target: nodes.NodeNG, seen: set[int], hops: list[int], held: bool) -> bool:
    """Whether a value bound to ``target`` stays: a local name none of whose uses lets it leave."""
    if not isinstance(target, nodes.AssignName):
        return False  # an attribute, a subscript, an unpacking: stored where others can reach it
    scope = target.scope()
    if not isinstance(scope, (nodes.FunctionDef, nodes.Lambda)) or target.name in _globals_of(scope):
        return False  # a module global or a class attribute: anyone may read it
    if id(target) in seen:
        return True  # already being followed: its other uses decide
    seen.add(id(target))
    hops[0] += 1
    if hops[0] > MAX_HOPS:
        return False
    for name in scope.nodes_of_class(nodes.Name):
        if name.name != target.name:
            continue
        # A read in a nested function (a closure) is followed like any other: what the
        # closure does with the value decides, not the closure itself.
        _name_scope, bindings = lookup(name)
        if any(binding is target for binding in bindings) and _leaves(name, seen, hops, held):
            return False
    return True


def _globals_of(scope: nodes.NodeNG) -> set[str]:
    return {name for node in scope.nodes_of_class(nodes.Global) for name in node.names}
