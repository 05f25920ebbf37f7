"""Reproduction programs built on syntax trees: the builders' whole toolkit (``nnx_lint.api.programs``).

A builder composes a program from pieces. Each piece is either *program text the builder
wrote itself* (``"nnx.Linear(2, 2, rngs=nnx.Rngs(0))"``), parsed here, or a piece these
helpers returned. A fact of the analysed code enters only as a checked name
(:func:`identifier`, :func:`attribute`, :func:`set_attribute`, keyword names of :func:`call`) or as an
``ast.Constant`` (:func:`literal`, :func:`access`); the pieces are joined as :mod:`ast`
nodes and written back with :func:`ast.unparse`, never by formatting strings, so no fact
text can close a bracket, start a statement or open a comment.

The checks themselves (:func:`identifier`, :func:`bounded_index`, ...) and the guard that
refuses any program carrying fact text as code live in :mod:`nnx_lint.base.program_text`;
they are re-exported here so that a builder needs this one namespace.
"""
from __future__ import annotations

import ast
import copy
import textwrap
from collections.abc import Iterable
from typing import Any, Union

from nnx_lint.base.program_text import (
    UnsafeFact,
    bounded_index,
    check_plain,
    choice_or,
    clipped,
    identifier,
    identifier_or,
    is_identifier,
    shown,
)

__all__ = [
    "UnsafeFact", "identifier", "identifier_or", "is_identifier", "bounded_index", "choice_or", "clipped",
    "shown", "literal", "attribute", "access", "call", "subscript", "items", "assign", "set_attribute",
    "returning", "sum_of", "lambda_function", "function", "lines", "filled",
]

#: A piece of a program: text the builder wrote (parsed here), or a node.
Piece = Union[str, ast.AST]


def _expression(piece: Piece) -> ast.expr:
    if isinstance(piece, ast.AST):
        return copy.deepcopy(piece)
    return ast.parse(textwrap.dedent(piece).strip(), mode="eval").body


def _statements(piece: Piece) -> list[ast.stmt]:
    if isinstance(piece, ast.stmt):
        return [copy.deepcopy(piece)]
    if isinstance(piece, ast.expr):
        return [ast.Expr(copy.deepcopy(piece))]
    return ast.parse(textwrap.dedent(piece)).body


def _code(node: ast.AST) -> str:
    return ast.unparse(ast.fix_missing_locations(node))


def literal(value: Any) -> str:
    """Source text of a plain-data ``value`` (str, int, finite float, bool, None, and lists,
    tuples and dicts of those), written as constants: the only way other text enters a program.

    >>> literal(["layers", 'x"; import os', 2, None])
    '[\\'layers\\', \\'x"; import os\\', 2, None]'
    >>> literal({"a": (1, 2.5)})
    "{'a': (1, 2.5)}"
    >>> literal(float("nan"))
    Traceback (most recent call last):
    ...
    nnx_lint.base.program_text.UnsafeFact: the value nan is not plain data
    """
    check_plain(value, 0)
    return _code(_constant(value))


def _constant(value: Any) -> ast.expr:
    if isinstance(value, (list, tuple)):
        elements = [_constant(item) for item in value]
        return ast.List(elements, ast.Load()) if isinstance(value, list) else ast.Tuple(elements, ast.Load())
    if isinstance(value, dict):
        return ast.Dict([_constant(key) for key in value], [_constant(item) for item in value.values()])
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        return ast.UnaryOp(ast.USub(), ast.Constant(-value))
    return ast.Constant(value)


def attribute(owner: Piece, *names: str) -> str:
    """``owner.name...``, each name checked by :func:`identifier`.

    >>> attribute("model", "encoder", "kernel")
    'model.encoder.kernel'
    """
    node = _expression(owner)
    for part in names:
        node = ast.Attribute(node, identifier(part, "the attribute"), ast.Load())
    return _code(node)


def access(base: Piece, parts: Iterable[str | int]) -> str:
    """Source text reaching ``parts`` from ``base``: ``.name`` for safe names, ``[i]`` for
    indices, ``['key']`` (a string constant) for any other string.

    >>> access("model", ["blocks", 0, "stream"])
    'model.blocks[0].stream'
    >>> access("model", ["x = 0; y", "lambda"])
    "model['x = 0; y']['lambda']"
    """
    node = _expression(base)
    for part in parts:
        if isinstance(part, int) and not isinstance(part, bool):
            node = ast.Subscript(node, ast.Constant(bounded_index(part, "the path index")), ast.Load())
        elif is_identifier(part):
            node = ast.Attribute(node, part, ast.Load())
        elif isinstance(part, str):
            node = ast.Subscript(node, ast.Constant(part), ast.Load())
        else:
            raise UnsafeFact("the path part %s is neither a name nor an index" % shown(part))
    return _code(node)


def _keywords(keywords: dict[str, Piece]) -> list[ast.keyword]:
    """Keyword arguments: safe names as ``name=value``, any other name inside one ``**{'name': value}``."""
    plain = [ast.keyword(key, _expression(value)) for key, value in keywords.items() if is_identifier(key)]
    other = [(key, value) for key, value in keywords.items() if not is_identifier(key)]
    if other:
        if not all(isinstance(key, str) for key, _ in other):
            raise UnsafeFact("a keyword argument name is not text")
        plain.append(ast.keyword(None, ast.Dict([ast.Constant(key) for key, _ in other],
                                                [_expression(value) for _, value in other])))
    return plain


def call(function: Piece, /, *arguments: Piece, **keywords: Piece) -> str:
    """``function(arguments..., keywords...)``; a keyword that is not a safe name is passed
    in ``**{'name': value}`` (a string constant).

    >>> call("nnx.Rngs", params="0")
    'nnx.Rngs(params=0)'
    >>> call("Box", "x", **{"b c": "y"})
    "Box(x, **{'b c': y})"
    """
    return _code(ast.Call(_expression(function), [_expression(argument) for argument in arguments],
                          _keywords(keywords)))


def subscript(owner: Piece, index: Piece | int) -> str:
    """``owner[index]``; an ``int`` index is checked by :func:`bounded_index`.

    >>> subscript(call("nnx.split", "model"), 1)
    'nnx.split(model)[1]'
    """
    if isinstance(index, int) and not isinstance(index, bool):
        node = ast.Constant(bounded_index(index, "the index"))
    else:
        node = _expression(index)
    return _code(ast.Subscript(_expression(owner), node, ast.Load()))


def items(*elements: Piece, kind: str = "tuple") -> str:
    """A ``tuple`` (default) or ``list`` display of ``elements``.

    >>> items("a", "1"), items("a", kind="tuple"), items("x", "y", kind="list")
    ('(a, 1)', '(a,)', '[x, y]')
    """
    nodes = [_expression(element) for element in elements]
    return _code(ast.List(nodes, ast.Load()) if kind == "list" else ast.Tuple(nodes, ast.Load()))


def assign(target: Piece, value: Piece) -> str:
    """The statement ``target = value`` (``target`` a name, attribute path or tuple).

    >>> assign("model.w", call("nnx.Param", "jnp.ones(2)"))
    'model.w = nnx.Param(jnp.ones(2))'
    """
    target_node = _expression(target)
    for node in ast.walk(target_node):
        if hasattr(node, "ctx"):
            node.ctx = ast.Store()
    return _code(ast.Assign([target_node], _expression(value)))


def set_attribute(owner: Piece, attribute_name: Any, value: Piece) -> str:
    """A statement storing ``value`` as attribute ``attribute_name`` (a fact) of ``owner``:
    ``owner.name = value``, or ``setattr(owner, 'name', value)`` when it is not a safe name.

    >>> set_attribute("self", "encoder", "shared")
    'self.encoder = shared'
    >>> set_attribute("self", "['x']; import os", "shared")
    'setattr(self, "[\\'x\\']; import os", shared)'
    """
    if is_identifier(attribute_name):
        return assign(attribute(owner, attribute_name), value)
    return call("setattr", owner, literal(attribute_name), value)


def sum_of(*terms: Piece) -> str:
    """``terms[0] + terms[1] + ...`` (left to right).

    >>> sum_of("jnp.sum(m(x))", call("jnp.sum", "a1"), "a2")
    'jnp.sum(m(x)) + jnp.sum(a1) + a2'
    """
    nodes = [_expression(term) for term in terms]
    total = nodes[0]
    for node in nodes[1:]:
        total = ast.BinOp(total, ast.Add(), node)
    return _code(total)


def returning(value: Piece) -> str:
    """The statement ``return value``.

    >>> returning(items("jnp.sum(x)", "aux"))
    'return (jnp.sum(x), aux)'
    """
    return _code(ast.Return(_expression(value)))


def _parameters(parameters: Iterable[str]) -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[ast.arg(identifier(parameter, "the parameter"))
                                               for parameter in parameters],
                         kwonlyargs=[], kw_defaults=[], defaults=[])


def lambda_function(parameters: Iterable[str], body: Piece) -> str:
    """``lambda parameters: body`` (parameter names checked).

    >>> lambda_function(["model", "x"], items(call("f", "model", "x"), "x")) + "  # a lambda"
    'lambda model, x: (f(model, x), x)  # a lambda'
    """
    return _code(ast.Lambda(_parameters(parameters), _expression(body)))


def function(function_name: str, parameters: Iterable[str], body: Piece | Iterable[Piece],
             decorators: Iterable[Piece] = ()) -> str:
    """``def function_name(parameters): body`` (names checked; ``body`` statements, or an
    expression it returns when given one string that parses as an expression).

    >>> print(function("f", ["p0", "x"], "return p0"))
    def f(p0, x):
        return p0
    """
    statements = [statement for piece in ([body] if isinstance(body, (str, ast.AST)) else body)
                  for statement in _statements(piece)]
    definition = ast.FunctionDef(identifier(function_name, "the function name"), _parameters(parameters),
                                 statements or [ast.Pass()], [_expression(decorator) for decorator in decorators], None, lineno=1)
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
        definition.type_params = []
    return _code(definition)


def lines(*pieces: Piece | None) -> str:
    """Statements, one after another, ending in a newline (``None`` and empty pieces are skipped).

    >>> print(lines("x = 1", None, assign("y", call("f", "x"))), end="")
    x = 1
    y = f(x)
    """
    statements = [statement for piece in pieces if piece for statement in _statements(piece)]
    return _code(ast.Module(statements, [])) + "\n"


def filled(template: str, names: dict[str, str] | None = None, expressions: dict[str, Piece] | None = None,
           statements: dict[str, Piece] | None = None) -> str:
    """``template`` (code the builder wrote, with placeholder names) with its placeholders
    replaced on the syntax tree (:mod:`ast`), then written back with :func:`ast.unparse`.

    Placeholders are whole names, never substrings, so no other identifier is touched
    (``self.OBJECTS`` stays ``self.OBJECTS`` when ``OBJ`` is renamed):

    * ``names``: placeholder -> a name (checked by :func:`identifier`), wherever the placeholder is
      a name: a variable, an attribute (``m.ATTR``), a parameter, a keyword argument, a defined
      function or class, or a string constant that is exactly the placeholder (``hasattr(m, 'ATTR')``);
    * ``expressions``: placeholder -> an expression (a piece), for the placeholder used as a
      variable (``G`` in ``isinstance(G, nnx.State)``);
    * ``statements``: placeholder -> statements (a piece), for a statement that is the placeholder alone.

    Comments do not survive :func:`ast.unparse`: a builder writes its comments around the pieces.

    >>> print(filled("OBJ.ATTR += 1", names={"OBJ": "m", "ATTR": "OBJECTS"}), end="")
    m.OBJECTS += 1
    >>> print(filled("isinstance(G, nnx.State)", expressions={"G": "nnx.state(grads, nnx.Param)"}), end="")
    isinstance(nnx.state(grads, nnx.Param), nnx.State)
    >>> filled("m.ATTR", names={"ATTR": "x; import os"})
    Traceback (most recent call last):
    ...
    nnx_lint.base.program_text.UnsafeFact: the name 'x; import os' is not a plain Python identifier
    """
    tree = _Filled(
        {key: identifier(value, "the name") for key, value in (names or {}).items()},
        {key: _expression(value) for key, value in (expressions or {}).items()},
        {key: _statements(value) if value else [] for key, value in (statements or {}).items()},
    ).visit(ast.parse(textwrap.dedent(template)))
    return _code(tree) + "\n"


class _Filled(ast.NodeTransformer):
    """The placeholder replacements of :func:`filled`, node by node."""

    def __init__(self, names: dict[str, str], expressions: dict[str, ast.expr],
                 statements: dict[str, list[ast.stmt]]) -> None:
        self.names, self.expressions, self.statements = names, expressions, statements

    def _name(self, name: str | None) -> str | None:
        return self.names.get(name, name) if name is not None else None

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.expressions:
            return copy.deepcopy(self.expressions[node.id])
        node.id = self._name(node.id)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.Attribute:
        self.generic_visit(node)
        node.attr = self._name(node.attr)
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        if isinstance(node.value, str) and node.value in self.names:
            node.value = self.names[node.value]
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        self.generic_visit(node)
        node.arg = self._name(node.arg)
        return node

    def visit_keyword(self, node: ast.keyword) -> ast.keyword:
        self.generic_visit(node)
        node.arg = self._name(node.arg)
        return node

    def _defined(self, node: ast.FunctionDef | ast.ClassDef) -> ast.stmt:
        self.generic_visit(node)
        node.name = self._name(node.name)
        return node

    visit_FunctionDef = visit_ClassDef = _defined

    def visit_Expr(self, node: ast.Expr) -> ast.stmt | list[ast.stmt]:
        if isinstance(node.value, ast.Name) and node.value.id in self.statements:
            return copy.deepcopy(self.statements[node.value.id])
        self.generic_visit(node)
        return node
