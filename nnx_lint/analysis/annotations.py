"""The one annotation reader: what an annotation says a value is.

Every part of the analysis that reads a type annotation reads it here, so that each form is
understood the same way everywhere:

- :func:`annotation_expression`: the annotation as an expression; a string annotation
  (``"nnx.Rngs"``, a forward reference) is parsed, never evaluated;
- :func:`annotation_head`: the one class it names, past the wrappers that do not change
  it: ``Optional[X]``, ``X | None`` / ``None | X``, ``Union[X, None]``, ``Annotated[X, ...]``
  (each also spelled ``typing.`` / ``t.`` / ``typing_extensions.``...), and strings;
- :func:`annotation_outer` / :func:`annotation_name`: the outer class of that head, past a
  generic's subscript, and its short name (``InitVar`` for ``dataclasses.InitVar[nnx.Rngs]``,
  ``ClassVar`` for ``typing.ClassVar[int]``);
- :func:`parameter_annotation` / :func:`binding_annotation`: the annotation of a function's
  parameter, or of the name a binding binds (a parameter, or ``x: Cls = ...``).

A string annotation is analysed text: it is parsed with :func:`ast.parse` in ``eval`` mode
(bounded in length, and only names, attributes, subscripts, constants and ``|`` are
accepted), then rebuilt as astroid nodes whose parent is the annotation's parent, so that
the names in it resolve in the scope where it is written. The rebuilt node is kept on the
string's node, so it lives and dies with its tree (a name resolver memoises by node identity:
one string is one node), and nothing of it is ever executed.

>>> import astroid
>>> function = astroid.extract_node("def f(a: 'Optional[Model]', b: Annotated[int, 'x'] | None): ...")
>>> annotation_head(parameter_annotation(function, "a")).as_string()
'Model'
>>> annotation_head(parameter_annotation(function, "b")).as_string()
'int'
"""
from __future__ import annotations

import ast

from astroid import nodes
from astroid.manager import AstroidManager
from astroid.rebuilder import TreeRebuilder

#: The longest string annotation parsed (longer ones are left unread: unknown).
MAX_STRING_ANNOTATION = 300
#: How many wrappers (``Optional[Annotated["X", ...]]``) are looked through.
_MAX_WRAPPERS = 8
#: The only syntax a string annotation may hold to be read.
_ANNOTATION_SYNTAX = (ast.Expression, ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.Tuple,
                      ast.List, ast.BinOp, ast.BitOr, ast.Load)
_OPTIONAL = frozenset({"Optional"})
_UNION = frozenset({"Union"})
_ANNOTATED = frozenset({"Annotated"})

#: The attribute of a string annotation's node that keeps the expression parsed from it.
_PARSED_ATTRIBUTE = "_nnx_lint_parsed_annotation"


def annotation_expression(annotation: nodes.NodeNG | None) -> nodes.NodeNG | None:
    """``annotation`` as an expression: itself, or for a string annotation the expression
    the string holds (None when it is not a readable annotation)."""
    if isinstance(annotation, nodes.Const) and isinstance(annotation.value, str):
        if _PARSED_ATTRIBUTE not in annotation.__dict__:
            annotation.__dict__[_PARSED_ATTRIBUTE] = _parsed(annotation)
        return annotation.__dict__[_PARSED_ATTRIBUTE]
    return annotation


def annotation_head(annotation: nodes.NodeNG | None) -> nodes.NodeNG | None:
    """The expression naming the one class ``annotation`` says a value has (a name, an
    attribute, or a subscript such as ``list[Model]``), past ``Optional``, ``| None``,
    ``Union[..., None]``, ``Annotated`` and string annotations; None when there is no one
    class (``A | B``, an unreadable string)."""
    if isinstance(annotation, (nodes.Name, nodes.Attribute)) or annotation is None:
        return annotation  # the common case: a class named as it is
    for _ in range(_MAX_WRAPPERS):
        annotation = annotation_expression(annotation)
        if isinstance(annotation, nodes.BinOp) and annotation.op == "|":
            annotation = _one_not_none([annotation.left, annotation.right])
        elif isinstance(annotation, nodes.Subscript) and _outer_name(annotation.value) in _OPTIONAL:
            annotation = annotation.slice
        elif isinstance(annotation, nodes.Subscript) and _outer_name(annotation.value) in _UNION:
            members = annotation.slice.elts if isinstance(annotation.slice, nodes.Tuple) else [annotation.slice]
            annotation = _one_not_none(members)
        elif isinstance(annotation, nodes.Subscript) and _outer_name(annotation.value) in _ANNOTATED:
            annotation = annotation.slice.elts[0] if isinstance(annotation.slice, nodes.Tuple) \
                and annotation.slice.elts else annotation.slice
        else:
            return annotation
    return None


def annotation_outer(annotation: nodes.NodeNG | None) -> nodes.NodeNG | None:
    """The expression naming the outer class of :func:`annotation_head`: ``nnx.Data`` for
    ``nnx.Data[int]`` (a generic's subscript left out), the head itself otherwise."""
    head = annotation_head(annotation)
    return head.value if isinstance(head, nodes.Subscript) else head


def annotation_name(annotation: nodes.NodeNG | None) -> str | None:
    """The short name of :func:`annotation_outer`: ``InitVar`` for ``InitVar[nnx.Rngs]`` or
    ``dataclasses.InitVar``, ``Model`` for ``"pkg.Model"``; None when there is none."""
    return _outer_name(annotation_outer(annotation))


def parameter_annotation(function: nodes.NodeNG | None, name: str) -> nodes.NodeNG | None:
    """The annotation of ``function``'s parameter ``name`` (positional-only, positional or
    keyword-only), as written (None: not annotated, or no such parameter)."""
    arguments = getattr(function, "args", None)
    if not isinstance(arguments, nodes.Arguments):
        return None
    for parameters, written in ((arguments.posonlyargs, arguments.posonlyargs_annotations),
                                (arguments.args, arguments.annotations),
                                (arguments.kwonlyargs, arguments.kwonlyargs_annotations)):
        for parameter, annotation in zip(parameters or [], written or []):
            if parameter.name == name:
                return annotation
    return None


def binding_annotation(binding: nodes.NodeNG) -> nodes.NodeNG | None:
    """The annotation of the name ``binding`` binds: a parameter's, or that of ``x: Cls = ...``."""
    if not isinstance(binding, nodes.AssignName):
        return None
    if isinstance(binding.parent, nodes.Arguments):
        return parameter_annotation(binding.parent.parent, binding.name)
    if isinstance(binding.parent, nodes.AnnAssign) and binding.parent.target is binding:
        return binding.parent.annotation
    return None


def _outer_name(node: nodes.NodeNG | None) -> str | None:
    """``Optional`` for ``Optional``, ``typing.Optional`` and ``t.Optional`` alike."""
    if isinstance(node, nodes.Attribute):
        return node.attrname
    if isinstance(node, nodes.Name):
        return node.name
    return None


def _is_none(node: nodes.NodeNG) -> bool:
    expression = annotation_expression(node)
    return isinstance(expression, nodes.Const) and expression.value is None


def _one_not_none(members: list[nodes.NodeNG]) -> nodes.NodeNG | None:
    """The one member of a union that is not ``None``; None when there are several."""
    kept = [member for member in members if not _is_none(member)]
    return kept[0] if len(kept) == 1 else None


def _parsed(annotation: nodes.Const) -> nodes.NodeNG | None:
    """The expression a string annotation holds, as astroid nodes placed where the string is
    (parsed only: analysed text never runs), or None when it is not a plain annotation."""
    text = annotation.value.strip()
    if not text or len(text) > MAX_STRING_ANNOTATION:
        return None
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    # Only what annotations are made of: no call, lambda, comprehension or walrus (which
    # would bind a name in the enclosing scope when rebuilt) is ever turned into a node.
    if not all(isinstance(node, _ANNOTATION_SYNTAX) for node in ast.walk(tree)):
        return None
    try:
        return TreeRebuilder(AstroidManager()).visit(tree.body, parent=annotation.parent)
    except (RecursionError, ValueError):
        return None
