"""Why an answer of the object-flow model is unproven: the link the model could not see, said in
words a finding can carry (audit mode, ``--strict``)."""
from __future__ import annotations

from astroid import nodes

import nnx_lint.analysis.objects.abstract as kinds
from nnx_lint.analysis.objects.abstract import AbstractObject


def unknown_link(obj: AbstractObject, text: str) -> str | None:
    """Why ``obj``, the value of the expression ``text``, is unproven (None when it is proven):
    the parameter no analysed caller passes, the method no analysed call reaches, or the value
    the model saw no creation of."""
    if obj.proven:
        return None
    site = obj.site
    if isinstance(site, nodes.ClassDef):
        return (f"`{text}` is `self` of a `{site.name}` method that no analysed call reaches: "
                f"the object was not seen made")
    if isinstance(site, nodes.AssignName):
        function = site.scope()
        where = f" of `{function.name}`" if isinstance(function, nodes.FunctionDef) else ""
        if obj.kind == kinds.OUTSIDE and not obj.class_name:
            return (f"the class of `{text}` is unknown: it comes from the parameter `{site.name}`{where}, "
                    f"which no analysed caller passes")
        known = (obj.class_name or obj.kind).rpartition(".")[2]
        return (f"`{text}` comes from the parameter `{site.name}`{where}, annotated `{known}`, which no "
                f"analysed caller passes: its contents are not seen")
    if obj.copy_of is not None:
        return unknown_link(obj.copy_of, text)
    return f"the object of `{text}` was not seen made (a library value or a widened set)"


def first_unknown_link(objects, text: str) -> str | None:
    """The first :func:`unknown_link` among ``objects`` (None when every one is proven)."""
    for obj in sorted(objects, key=lambda o: (o.line or 0, o.describe())):
        reason = unknown_link(obj, text)
        if reason is not None:
            return reason
    return None
