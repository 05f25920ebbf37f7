"""How the shared references rules word their findings: the kinds, paths, sources and transform
applications their messages and facts name."""
from __future__ import annotations

from astroid import nodes

from nnx_lint.api import Application, join_path, programs


DUPLICATE = "Duplicate"


KIND_WORDS = {"module": "Module", "variable": "Variable", "rngs": "Rngs", "state": "State",
               "ref": "mutable array ref"}


def self_text(path: tuple[str, ...]) -> str:
    """``self.a.b[0]`` for the attribute path ``("a", "b", "[0]")``."""
    return join_path(("self",) + tuple(path))


def short_source(node: nodes.NodeNG, limit: int = 60) -> str:
    """The source of ``node``, cut to ``limit`` characters, for a message."""
    return programs.clipped(node.as_string(), limit)


def function_label(function: nodes.NodeNG | None) -> str:
    """The name of a transformed function (``<lambda>`` when it has none), for a message."""
    if isinstance(function, (nodes.FunctionDef, nodes.ClassDef, nodes.Name)):
        return function.name
    if isinstance(function, nodes.Attribute):  # a bound method: `nnx.jit(self.train_step)`
        return function.attrname
    return "<lambda>"


def describe_use(use: Application) -> dict:
    """The facts naming a transform application: transform, function and form (``direct`` or ``applied``)."""
    function = use.functions[0] if use.functions else None
    return {
        "transform": use.name,
        "function": function_label(function),
        "form": "direct" if use.call is use.transform.node else "applied",
    }


def has_aux(use: Application) -> bool:
    """Whether the application's transform passes a literal ``has_aux=True`` (as the resolver decodes it)."""
    return use.decoded.has_aux is True
