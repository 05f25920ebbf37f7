"""Per-scope summaries: one walk over a function's (or module's) own statements emits the
inclusion constraints of the object-flow model, and nothing else.

A summary does not depend on who calls the function: its variables are expression nodes,
bindings and the function's return, and the solver instantiates them once per call-site
context (:mod:`nnx_lint.analysis.objects.solver`). Names read are resolved to the bindings in
force where they are read (:func:`nnx_lint.analysis.flow.lookup`), so ``rngs = rngs.fork()``
then ``self.rngs = rngs`` stores the fork, not the parameter. Calls are recorded, not
resolved: the solver resolves them as the callee's objects become known.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from astroid import nodes

from nnx_lint.analysis.annotations import parameter_annotation
from nnx_lint.analysis.flow import lookup
from nnx_lint.analysis.objects.field_reads import dominating_stores
from nnx_lint.flax_table import object_relations as relations

#: A variable of a summary, before a context is attached: ``("e", node)`` an expression's value,
#: ``("b", binding)`` a name binding, ``("r", function)`` a function's return.
Local = tuple

#: Methods of containers that put their argument into the container.
_INSERTS = {"append": 0, "add": 0, "insert": 1, "appendleft": 0}
_SCOPES = (nodes.FunctionDef, nodes.Lambda, nodes.ClassDef, nodes.Module)
_LITERALS = (bool, int, float, str, type(None))


@dataclass(frozen=True)
class Alloc:
    """``dst ⊇ {object made here}``: ``kind`` is a literal kind (container, function, class,
    constant), ``"definition"`` for a module-level class or function a name reads, or ``"name"``
    for a project definition an imported name refers to."""

    dst: Local
    kind: str
    site: nodes.NodeNG
    value: object = None


@dataclass(frozen=True)
class Copy:
    """``dst ⊇ src``; ``truthy`` drops falsy constants (the left operand of ``x or y``)."""

    dst: Local
    src: Local
    truthy: bool = False


@dataclass(frozen=True)
class OrElse:
    """``dst ⊇ src`` once ``guard`` may hold a false value (``guard or src``): a falsy literal, or
    an object whose truth the model does not know; an unknown (empty) ``guard`` too, after the solve."""

    dst: Local
    src: Local
    guard: Local
    truthy: bool = False


@dataclass(frozen=True)
class Load:
    """``dst ⊇ base.attr`` (``attr`` ``"*"``: any element of a container)."""

    dst: Local
    base: Local
    attr: str
    node: nodes.NodeNG


@dataclass(frozen=True)
class Store:
    """``base.attr ⊇ src``, made by ``node`` (an attribute store, ``setattr``, ``append``)."""

    base: Local
    attr: str
    src: Local
    node: nodes.NodeNG


@dataclass(frozen=True)
class Call:
    """A call, resolved by the solver: ``func`` is the callee's variable, ``qualified_name`` the
    library name the callee spells (``flax.nnx.Rngs``), if any."""

    dst: Local
    node: nodes.Call
    func: Local
    args: tuple[Local, ...]
    keywords: tuple[tuple[str, Local], ...]
    star: Local | None = None
    double_star: Local | None = None
    qualified_name: str | None = None
    #: ``super().method(...)``: the class whose method holds the call, and the receiver.
    super_of: nodes.ClassDef | None = None
    receiver: Local | None = None


@dataclass(frozen=True)
class Parameter:
    """A parameter's binding: its position, its default's variable, and its annotation."""

    binding: Local
    name: str
    position: int | None
    default: Local | None
    annotation: nodes.NodeNG | None
    kind: str = "plain"  # plain | star | double-star


@dataclass
class Summary:
    """The constraints of one scope (a function, lambda or module body)."""

    scope: nodes.NodeNG
    constraints: list = field(default_factory=list)
    parameters: list[Parameter] = field(default_factory=list)
    #: The nested functions and lambdas defined here (each gets its own summary).
    nested: list[nodes.NodeNG] = field(default_factory=list)


def own_scope(node: nodes.NodeNG) -> nodes.NodeNG:
    """The function, lambda or module whose summary holds ``node`` (comprehensions and class
    bodies belong to the scope around them)."""
    scope = node.scope()
    while not isinstance(scope, (nodes.FunctionDef, nodes.Lambda, nodes.Module)):
        scope = scope.parent.scope()
    if isinstance(node, (nodes.FunctionDef, nodes.Lambda)) and scope is node and node.parent is not None:
        return own_scope(node.parent)
    return scope


class Extractor:
    """Builds the :class:`Summary` of one scope. ``qualified_name(node)`` resolves imported names."""

    def __init__(self, scope: nodes.NodeNG, qualified_name) -> None:
        self.summary = Summary(scope)
        self.scope = scope
        self.qualified_name = qualified_name
        self.emit = self.summary.constraints.append
        #: Reads of ``self.x`` that only see the value the method stored just before.
        self.dominating = dominating_stores(scope) if isinstance(scope, nodes.FunctionDef) else {}

    # -- statements ---------------------------------------------------------------------
    def run(self) -> Summary:
        scope = self.scope
        if isinstance(scope, (nodes.FunctionDef, nodes.Lambda)):
            self._parameters(scope)
        if isinstance(scope, nodes.Lambda) and not isinstance(scope, nodes.FunctionDef):
            self.emit(Copy(("r", scope), self.expression(scope.body)))
        else:
            for statement in scope.body:
                self.statement(statement)
        return self.summary

    def _parameters(self, function: nodes.NodeNG) -> None:
        arguments = function.args
        positional = list(arguments.posonlyargs or []) + list(arguments.args or [])
        defaults = list(arguments.defaults or [])
        first_default = len(positional) - len(defaults)
        for index, binding in enumerate(positional):
            default = defaults[index - first_default] if index >= first_default else None
            self._parameter(binding, index, default, parameter_annotation(function, binding.name))
        for index, binding in enumerate(arguments.kwonlyargs or []):
            default = (arguments.kw_defaults or [None] * (index + 1))[index]
            self._parameter(binding, None, default, parameter_annotation(function, binding.name))
        if arguments.vararg_node is not None:
            self.summary.parameters.append(
                Parameter(("b", arguments.vararg_node), arguments.vararg, None, None, None, "star"))
        if arguments.kwarg_node is not None:
            self.summary.parameters.append(
                Parameter(("b", arguments.kwarg_node), arguments.kwarg, None, None, None, "double-star"))

    def _parameter(self, binding, position, default, annotation) -> None:
        default_var = self.expression(default) if default is not None else None
        self.summary.parameters.append(Parameter(("b", binding), binding.name, position, default_var, annotation))

    def statement(self, node: nodes.NodeNG) -> None:
        if isinstance(node, (nodes.FunctionDef, nodes.ClassDef)):
            for decorator in node.decorators.nodes if node.decorators else []:
                self.expression(decorator)
            if isinstance(node, nodes.FunctionDef):
                self.summary.nested.append(node)
                self.emit(Alloc(("b", node), "function", node))
            else:
                self.emit(Alloc(("b", node), "class", node))
                for inner in node.body:  # class-level assignments and nested statements
                    if not isinstance(inner, nodes.FunctionDef):
                        self.statement(inner)
            return
        if isinstance(node, nodes.Assign):
            value = self.expression(node.value)
            for target in node.targets:
                self.target(target, value, node.value)
            return
        if isinstance(node, nodes.AnnAssign):
            if node.value is not None:
                self.target(node.target, self.expression(node.value), node.value)
            return
        if isinstance(node, nodes.AugAssign):
            self.expression(node.value)
            return
        if isinstance(node, nodes.Return):
            if node.value is not None:
                self.emit(Copy(("r", self.scope), self.expression(node.value)))
            return
        if isinstance(node, (nodes.For, nodes.AsyncFor)):
            iterated = self.expression(node.iter)
            element = ("e", node.target)
            self.emit(Load(element, iterated, "*", node.iter))
            self.target(node.target, element, None)
        elif isinstance(node, (nodes.With, nodes.AsyncWith)):
            for item, alias in node.items:
                value = self.expression(item)
                if alias is not None:
                    self.target(alias, value, item)
        for child in node.get_children():
            if isinstance(node, (nodes.For, nodes.AsyncFor)) and child in (node.target, node.iter):
                continue
            if isinstance(node, (nodes.With, nodes.AsyncWith)):
                if any(child is item or child is alias for item, alias in node.items):
                    continue
            if child.is_statement or isinstance(child, (nodes.FunctionDef, nodes.ClassDef)):
                self.statement(child)
            elif isinstance(child, nodes.NodeNG) and not isinstance(child, (nodes.Arguments,)):
                self.expression(child)

    def target(self, target: nodes.NodeNG, value: Local, value_node: nodes.NodeNG | None) -> None:
        """Bind ``value`` to an assignment target (names, attributes, subscripts, unpacking)."""
        if isinstance(target, nodes.AssignName):
            self.emit(Copy(("b", target), value))
        elif isinstance(target, nodes.AssignAttr):
            self.emit(Store(self.expression(target.expr), target.attrname, value, target))
        elif isinstance(target, nodes.Subscript):
            self.expression(target.slice)
            self.emit(Store(self.expression(target.value), _key(target.slice), value, target))
            self.emit(Store(("e", target.value), "*", value, target))
        elif isinstance(target, (nodes.Tuple, nodes.List)):
            literal = value_node if isinstance(value_node, (nodes.Tuple, nodes.List)) \
                and len(value_node.elts) == len(target.elts) else None
            for index, element in enumerate(target.elts):
                if isinstance(element, nodes.Starred):
                    self.target(element.value, value, None)
                    continue
                if literal is not None:
                    self.target(element, ("e", literal.elts[index]), literal.elts[index])
                    continue
                part = ("e", element)
                self.emit(Load(part, value, f"[{index}]", element))
                self.target(element, part, None)
        elif isinstance(target, nodes.Starred):
            self.target(target.value, value, None)

    # -- expressions ----------------------------------------------------------------------
    def expression(self, node: nodes.NodeNG) -> Local:
        """Emit what ``node`` evaluates to; returns its variable ``("e", node)``."""
        var = ("e", node)
        emit = self.emit
        if isinstance(node, nodes.Const):
            if isinstance(node.value, _LITERALS):
                emit(Alloc(var, "constant", node, node.value))
        elif isinstance(node, nodes.Name):
            self._name(node, var)
        elif isinstance(node, nodes.Attribute):
            name = self.qualified_name(node) if starts_at_import(node.expr) else None
            stored = self.dominating.get(id(node))
            if name is not None:
                emit(Alloc(var, "name", node, name))
            elif stored is not None:
                self.expression(node.expr)
                emit(Copy(var, ("e", stored)))
            else:
                emit(Load(var, self.expression(node.expr), node.attrname, node))
        elif isinstance(node, nodes.Call):
            self._call(node, var)
        elif isinstance(node, nodes.IfExp):
            self.expression(node.test)
            emit(Copy(var, self.expression(node.body)))
            orelse = self.expression(node.orelse)
            if not _asks_for_fork(node.test):  # `rngs.fork() if hasattr(rngs, "fork") else rngs`: an Rngs forks
                emit(Copy(var, orelse))
        elif isinstance(node, nodes.BoolOp):
            last = len(node.values) - 1
            previous = None
            for index, value in enumerate(node.values):
                operand = self.expression(value)
                if node.op == "or" and previous is not None:  # reached only when the previous may be false
                    emit(OrElse(var, operand, previous, truthy=index < last))
                else:
                    emit(Copy(var, operand, truthy=node.op == "or" and index < last))
                previous = operand
        elif isinstance(node, (nodes.Tuple, nodes.List, nodes.Set)):
            emit(Alloc(var, "container", node, type(node).__name__.lower()))
            for index, element in enumerate(node.elts):
                if isinstance(element, nodes.Starred):
                    inner = ("e", element)
                    emit(Load(inner, self.expression(element.value), "*", element))
                    emit(Store(var, "*", inner, element))
                    continue
                value = self.expression(element)
                emit(Store(var, f"[{index}]", value, element))
                emit(Store(var, "*", value, element))
        elif isinstance(node, nodes.Dict):
            emit(Alloc(var, "container", node, "dict"))
            for key, value in node.items:
                if isinstance(key, nodes.DictUnpack):
                    inner = ("e", value)
                    emit(Load(("e", key), self.expression(value), "*", value))
                    emit(Store(var, "*", ("e", key), value))
                    continue
                self.expression(key)
                element = self.expression(value)
                emit(Store(var, _key(key), element, value))
                emit(Store(var, "*", element, value))
        elif isinstance(node, (nodes.ListComp, nodes.SetComp, nodes.GeneratorExp, nodes.DictComp)):
            emit(Alloc(var, "container", node, "list"))
            for generator in node.generators:
                element = ("e", generator.target)
                emit(Load(element, self.expression(generator.iter), "*", generator.iter))
                self.target(generator.target, element, None)
                for condition in generator.ifs:
                    self.expression(condition)
            produced = node.value if isinstance(node, nodes.DictComp) else node.elt
            emit(Store(var, "*", self.expression(produced), produced))
            if isinstance(node, nodes.DictComp):
                self.expression(node.key)
        elif isinstance(node, nodes.Subscript):
            self.expression(node.slice)
            emit(Load(var, self.expression(node.value), _key(node.slice), node))
        elif isinstance(node, nodes.Lambda):
            self.summary.nested.append(node)
            emit(Alloc(var, "function", node))
        elif isinstance(node, nodes.Starred):
            emit(Copy(var, self.expression(node.value)))
        elif isinstance(node, nodes.NamedExpr):
            value = self.expression(node.value)
            self.target(node.target, value, node.value)
            emit(Copy(var, value))
        elif isinstance(node, nodes.Await):
            emit(Copy(var, self.expression(node.value)))
        else:
            for child in node.get_children():
                if isinstance(child, (nodes.Lambda,)) or not isinstance(child, _SCOPES):
                    self.expression(child)
        return var

    def _name(self, node: nodes.Name, var: Local) -> None:
        bindings = _only_parameter(node) or lookup(node)[1]
        for binding in bindings:
            if isinstance(binding, nodes.ClassDef) and isinstance(binding.parent, nodes.Module):
                # a module-level class is itself, wherever it is read: read from another file's
                # function, its module's body is not instantiated by this file's model (functions
                # of other files stay unresolved there: following them cost maxtext's files their budget)
                self.emit(Alloc(var, "definition", binding))
            elif isinstance(binding, (nodes.AssignName, nodes.FunctionDef, nodes.ClassDef)):
                self.emit(Copy(var, ("b", binding)))
            elif isinstance(binding, nodes.Arguments):  # astroid answers `*args` / `**kwargs` with the Arguments
                for star in (binding.vararg_node, binding.kwarg_node):
                    if star is not None and star.name == node.name:
                        self.emit(Copy(var, ("b", star)))
            elif isinstance(binding, (nodes.Import, nodes.ImportFrom)):
                name = self.qualified_name(node)
                if name is not None:
                    self.emit(Alloc(var, "name", node, name))

    def _call(self, node: nodes.Call, var: Local) -> None:
        func = node.func
        super_of = receiver = None
        if isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Call) \
                and isinstance(func.expr.func, nodes.Name) and func.expr.func.name == "super":
            method = node.scope()
            if isinstance(method, nodes.FunctionDef) and isinstance(method.parent, nodes.ClassDef) \
                    and method.args.args:
                super_of = method.parent
                first = method.args.args[0]
                receiver = ("b", first)
            func_var = ("e", func)
        else:
            func_var = self.expression(func)
        args = []
        star = None
        for argument in node.args:
            if isinstance(argument, nodes.Starred):
                star = self.expression(argument.value)
                continue
            args.append(self.expression(argument))
        keywords = []
        double_star = None
        for keyword in node.keywords or []:
            value = self.expression(keyword.value)
            if keyword.arg is None:
                double_star = value
            else:
                keywords.append((keyword.arg, value))
        name = self.qualified_name(func) if isinstance(func, (nodes.Name, nodes.Attribute)) else None
        self.emit(Call(var, node, func_var, tuple(args), tuple(keywords), star, double_star, name,
                       super_of, receiver))
        if isinstance(func, nodes.Attribute) and func.attrname in _INSERTS and len(node.args) > _INSERTS[func.attrname]:
            self.emit(Store(("e", func.expr), "*", args[_INSERTS[func.attrname]] if star is None else star, node))
        if isinstance(func, nodes.Attribute) and func.attrname == "extend" and node.args:
            element = ("x", node)
            self.emit(Load(element, args[0] if args else star, "*", node))
            self.emit(Store(("e", func.expr), "*", element, node))
        if _is_builtin(func, "setattr", name) and len(node.args) == 3 and isinstance(node.args[1], nodes.Const) \
                and isinstance(node.args[1].value, str):
            self.emit(Store(args[0], node.args[1].value, args[2], node))


def _asks_for_fork(test: nodes.NodeNG) -> bool:
    """``hasattr(x, "fork")`` / ``hasattr(type(x), "fork")``: a version guard that every ``nnx.Rngs``
    passes (maxtext's ``Dropout``), so its other arm is not the Rngs flow."""
    return isinstance(test, nodes.Call) and isinstance(test.func, nodes.Name) and test.func.name == "hasattr" \
        and len(test.args) == 2 and isinstance(test.args[1], nodes.Const) \
        and test.args[1].value in relations.FRESH_RNGS_METHODS


def _key(node: nodes.NodeNG) -> str:
    """The field an item key names: ``[0]`` for a literal index, ``'name'`` for a string, else ``*``."""
    if isinstance(node, nodes.Const) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return f"[{node.value}]"
    if isinstance(node, nodes.Const) and isinstance(node.value, str):
        return repr(node.value)
    return "*"


def _is_builtin(func: nodes.NodeNG, builtin: str, qualified_name: str | None) -> bool:
    """``setattr`` not rebound in the module (the name resolver leaves builtins unresolved)."""
    if qualified_name == f"builtins.{builtin}":
        return True
    return isinstance(func, nodes.Name) and func.name == builtin \
        and all(b.root().name == "builtins" for b in lookup(func)[1])


def _only_parameter(node: nodes.Name) -> list[nodes.NodeNG]:
    """``[parameter]`` when ``node`` reads a parameter of its own function that the function never
    rebinds (``self`` nearly always): the lookup's answer, without the lookup."""
    scope = node.scope()
    if not isinstance(scope, (nodes.FunctionDef, nodes.Lambda)):
        return []
    bindings = scope.locals.get(node.name, ())
    if len(bindings) == 1 and isinstance(bindings[0], nodes.AssignName) \
            and isinstance(bindings[0].parent, nodes.Arguments):
        return [bindings[0]]
    return []


def _may_be_imported(name: nodes.Name) -> bool:
    """Whether any scope around ``name`` binds it by an import (else no lookup is needed)."""
    scope = name.scope()
    while scope is not None:
        if any(isinstance(b, (nodes.Import, nodes.ImportFrom)) for b in scope.locals.get(name.name, ())):
            return True
        scope = scope.parent.scope() if scope.parent is not None else None
    return False


def starts_at_import(expression: nodes.NodeNG) -> bool:
    """Whether ``expression``, a name or an attribute chain, starts at a name an import binds
    (``nnx``, ``nnx.Rngs``, ``pkg.mod.f``)."""
    base = expression
    while isinstance(base, nodes.Attribute):
        base = base.expr
    if not isinstance(base, nodes.Name) or not _may_be_imported(base):
        return False
    _scope, bindings = lookup(base)
    return bool(bindings) and all(isinstance(b, (nodes.Import, nodes.ImportFrom)) for b in bindings)


def summarize(scope: nodes.NodeNG, qualified_name) -> Summary:
    """The :class:`Summary` of one function, lambda or module body."""
    return Extractor(scope, qualified_name).run()
