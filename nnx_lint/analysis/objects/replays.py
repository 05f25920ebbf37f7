"""A method that re-runs, word for word, a block of the code that built the object: the stores it
makes put back the values construction left (maxtext's ``MLA.mla_query_projection`` repeats
``_init_projections``' four lines that set ``self.softmax_scale`` from attributes nothing else
changes). Tree Mode dropping such a store changes nothing (issue 43: "a re-store of the same value").

Construction code: any ``__init__`` of the object's classes, and a private method (``_name``) that
only construction code of those classes calls on ``self``."""
from __future__ import annotations

from astroid import nodes

from nnx_lint.base.node_index import nodes_of_class

#: Calls a replayed block may make: they return the same number for the same arguments.
_PURE_BUILTINS = frozenset({"abs", "min", "max", "float", "int", "round", "pow"})
_PURE_MODULES = frozenset({"math"})
_MAX_CLASSES = 32
_MAX_DEPTH = 3


def replays_construction(model, classdef: nodes.ClassDef, store: nodes.AssignAttr, restores, depth: int = 0) -> bool:
    """Whether ``store`` (``self.attr = ...`` in a method of ``classdef`` or a base) sits in a block
    of its method's statements that a construction function of ``classdef`` holds with the same
    text, and that block puts back the value construction left: it computes only from literals,
    pure calls, its own locals and attributes (``self.x``) that construction alone writes, before
    the block (or that ``restores(store)`` judges re-stores too), and every store of ``attr`` on
    the object besides is in the construction block or another copy of it."""
    if depth > _MAX_DEPTH or not isinstance(store.expr, nodes.Name):
        return False
    method = store.frame()
    if not isinstance(method, nodes.FunctionDef) or not method.args.args:
        return False
    self_name = method.args.args[0].name
    if store.expr.name != self_name:
        return False
    classes = _classes(model, classdef)
    construction = _construction_functions(classes)
    if method in construction:
        return False
    top = next((s for s in [store, *store.node_ancestors()] if s.parent is method and s in method.body), None)
    if top is None:
        return False
    for built, built_self in ((f, f.args.args[0].name) for f in construction if f.args.args):
        block, copy = _matching_blocks(method.body, top, built.body)
        if block is None or not all(_replayable(s, self_name) for s in block):
            continue
        if _holds_value(model, classes, construction, block, copy, store.attrname, built, built_self, restores, depth):
            return True
    return False


def _classes(model, classdef: nodes.ClassDef) -> list[nodes.ClassDef]:
    found, stack = [], [classdef]
    while stack and len(found) < _MAX_CLASSES:
        current = stack.pop()
        if current not in found:
            found.append(current)
            stack.extend(model.world.bases(current))
    return found


def _methods(classes: list[nodes.ClassDef]) -> list[nodes.FunctionDef]:
    return [m for c in classes for m in c.body if isinstance(m, nodes.FunctionDef) and m.args.args]


def _construction_functions(classes: list[nodes.ClassDef]) -> set[nodes.FunctionDef]:
    """The ``__init__`` methods, and the private methods every call of which (``self._name(...)``,
    in the classes' methods) is in construction code."""
    methods = _methods(classes)
    found = {m for m in methods if m.name == "__init__"}
    changed = True
    while changed:
        changed = False
        for helper in methods:
            if helper in found or not helper.name.startswith("_") or helper.name.startswith("__"):
                continue
            calls = [c for m in methods for c in nodes_of_class(m, nodes.Call)
                     if isinstance(c.func, nodes.Attribute) and c.func.attrname == helper.name]
            if calls and all(c.frame() in found and _on_self(c.func.expr, c.frame()) for c in calls):
                found.add(helper)
                changed = True
    return found


def _on_self(expression: nodes.NodeNG, function: nodes.FunctionDef) -> bool:
    return isinstance(expression, nodes.Name) and bool(function.args.args) and expression.name == function.args.args[0].name


def _matching_blocks(body: list, top: nodes.NodeNG, other: list) -> tuple:
    """The longest run of statements around ``top`` in ``body`` that ``other`` holds with the same
    text: ``(block, copy)``, or ``(None, None)``."""
    index = body.index(top)
    text = top.as_string()
    for start in (i for i, s in enumerate(other) if s.as_string() == text):
        before = 0
        while index - before > 0 and start - before > 0 and \
                body[index - before - 1].as_string() == other[start - before - 1].as_string():
            before += 1
        after = 0
        while index + after + 1 < len(body) and start + after + 1 < len(other) and \
                body[index + after + 1].as_string() == other[start + after + 1].as_string():
            after += 1
        return body[index - before:index + after + 1], other[start - before:start + after + 1]
    return None, None


def _replayable(statement: nodes.NodeNG, self_name: str) -> bool:
    """Assignments to ``self.x`` or a local, and ``if`` statements of them, computed from literals,
    names, ``self.x``, arithmetic, comparisons and pure calls."""
    if isinstance(statement, nodes.If):
        return _pure(statement.test, self_name) and all(_replayable(s, self_name) for s in statement.body + statement.orelse)
    if isinstance(statement, nodes.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
        plain = isinstance(target, nodes.AssignName) or (
            isinstance(target, nodes.AssignAttr) and isinstance(target.expr, nodes.Name) and target.expr.name == self_name)
        return plain and _pure(statement.value, self_name)
    return False


def _pure(node: nodes.NodeNG, self_name: str) -> bool:
    if isinstance(node, (nodes.Const, nodes.Name)):
        return True
    if isinstance(node, nodes.Attribute):
        if isinstance(node.expr, nodes.Name) and node.expr.name == self_name:
            return True
        return isinstance(node.expr, nodes.Name) and node.expr.name in _PURE_MODULES
    if isinstance(node, nodes.Call):
        func = node.func
        known = (isinstance(func, nodes.Name) and func.name in _PURE_BUILTINS) or (
            isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Name) and func.expr.name in _PURE_MODULES)
        return known and not node.keywords and all(_pure(a, self_name) for a in node.args)
    if isinstance(node, (nodes.BinOp, nodes.UnaryOp, nodes.Compare, nodes.BoolOp)):
        return all(_pure(child, self_name) for child in node.get_children())
    return False


def _holds_value(model, classes, construction, block, copy, attribute, built, built_self, restores, depth) -> bool:
    """The block's names are its own locals or pure modules, its inputs (``self.x`` read before the
    block writes it) are invariant, and ``attribute``'s stores are all in the copy or a replay."""
    self_name = block[0].frame().args.args[0].name
    written: set[str] = set()
    local_names: set[str] = set()
    for statement in block:
        for node in _in_order(statement):
            if isinstance(node, nodes.AssignName):
                local_names.add(node.name)
            elif isinstance(node, nodes.AssignAttr):
                written.add(node.attrname)
            elif isinstance(node, nodes.Name):
                if node.name not in local_names | _PURE_MODULES | _PURE_BUILTINS | {self_name}:
                    return False  # a parameter or an outer name: its value may differ from construction's
            elif isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name) \
                    and node.expr.name == self_name and node.attrname not in written:
                if not _invariant_before(model, classes, construction, node.attrname, copy, built, restores, depth):
                    return False
    copies = {id(n) for s in copy for n in nodes_of_class(s, nodes.AssignAttr)}
    for other in _stores(classes, attribute):
        if id(other) in copies:
            continue
        method = other.frame()
        if method in construction:
            return False  # construction stores it again outside the block: the block's value may not last
        if method is block[0].frame():
            if not any(other is n or other in n.nodes_of_class(nodes.AssignAttr) for n in block):
                return False
        elif not replays_construction(model, classes[0], other, restores, depth + 1):
            return False
    return True


def _in_order(statement: nodes.NodeNG):
    """The nodes of ``statement`` in evaluation order: an assignment's value before its target."""
    if isinstance(statement, nodes.Assign):
        yield from _in_order(statement.value)
        for target in statement.targets:
            yield target
        return
    if isinstance(statement, nodes.If):
        yield from _in_order(statement.test)
        for child in statement.body + statement.orelse:
            yield from _in_order(child)
        return
    yield statement
    for child in statement.get_children():
        yield from _in_order(child)


def _stores(classes: list[nodes.ClassDef], attribute: str) -> list[nodes.AssignAttr]:
    """Every ``self.attribute = ...`` in the classes' methods."""
    return [node for method in _methods(classes) for node in nodes_of_class(method, nodes.AssignAttr)
            if node.attrname == attribute and _on_self(node.expr, method) and node.frame() is method]


def _invariant_before(model, classes, construction, attribute: str, copy, built, restores, depth) -> bool:
    """Whether ``self.attribute`` holds, when construction runs the block, the value it keeps: each
    store is construction code before the block (earlier in its function, or before the first
    ``self``/``super()`` call of an ``__init__``, which may lead to the block), or a re-store."""
    stores = _stores(classes, attribute)
    if not stores:
        return False
    start = copy[0].fromlineno
    for node in stores:
        function = node.frame()
        if function is built:
            if node.fromlineno >= start:
                return False
        elif function in construction:
            if function.name != "__init__" or node.fromlineno >= _first_delegation(function):
                return False
        elif not restores(node, depth + 1):
            return False
    return True


def _first_delegation(function: nodes.FunctionDef) -> int:
    """The line of the first call in ``function`` on ``self`` or ``super()`` (it may run other
    construction code); past the end when there is none."""
    lines = [c.fromlineno for c in nodes_of_class(function, nodes.Call) if isinstance(c.func, nodes.Attribute) and (
        _on_self(c.func.expr, function) or (isinstance(c.func.expr, nodes.Call) and isinstance(c.func.expr.func, nodes.Name)
                                            and c.func.expr.func.name == "super"))]
    return min(lines, default=function.tolineno + 1)
