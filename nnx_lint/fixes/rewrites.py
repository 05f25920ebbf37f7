"""Tree-native rewrites: change the code to what Tree Mode means, where that is mechanical.

Each rewrite takes the file's :class:`SourceIndex` and one diagnostic and returns a
:class:`Fix` or None (the pattern is not the mechanical case: another fix of the rule
applies, or none). Rewrites are ``unsafe``: they change what the code does in graph mode
(that is their point); the tests run each on flax in Tree Mode. Where a rewrite needs
judgement, the fix is ``display-only``: a ``# TODO(nnx-lint)`` comment above the line,
shown and never applied (as bump-pydantic does).
"""
from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.fixes.model import DISPLAY_ONLY, UNSAFE, Fix
from nnx_lint.fixes.source import SourceIndex
from nnx_lint.engine.registry import facts_of, pin_sites


def keep_split_rngs_result(index: SourceIndex, diagnostic: Diagnostic) -> Fix | None:
    """NNX702: ``nnx.split_rngs(rngs, ...)`` as a statement becomes ``rngs = nnx.split_rngs(rngs, ...)``.

    Only when the first argument is a name or attribute chain (``rngs``, ``self.rngs``), so
    assigning to it is the same expression.
    """
    call = index.node_at(diagnostic.line, diagnostic.column, diagnostic.end_line, diagnostic.end_column)
    if not isinstance(call, cst.Call) or not isinstance(index.parent(call), cst.Expr) or not call.args:
        return None
    first = call.args[0]
    if first.keyword is not None or first.star or not _is_name_chain(first.value) or call.lpar:
        return None
    target = index.code(first.value)
    start = index.start_offset(call)
    edit = index.edit(start, start, f"{target} = ")
    if edit is None:
        return None
    api = facts_of(diagnostic).api
    return Fix(UNSAFE, f"Keep the result: `{target} = nnx.{api}({target}, ...)`", (edit,))


def _is_name_chain(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Name):
        return not node.lpar
    return isinstance(node, cst.Attribute) and not node.lpar and _is_name_chain(node.value)


def transform_metadata_layer(index: SourceIndex, diagnostic: Diagnostic) -> Fix | None:
    """NNX601: ``@nnx.vmap(..., transform_metadata={nnx.PARTITION_NAME: 'p'})`` becomes
    ``@nnx.vmap(...)`` over ``@nnx.transform_metadata(in_axes=..., out_axes=..., partition='p')``.

    Only the decorator form of ``vmap`` spelled ``<module>.vmap`` with a one-entry dict
    literal naming the partition with a string; anything else is display-only.
    """
    facts = facts_of(diagnostic)
    sites = pin_sites(facts)
    call = index.node_at(sites[0]["line"], sites[0]["column"], sites[0]["end_line"], sites[0]["end_column"]) if sites else None
    if not isinstance(call, cst.Call):
        return _todo(index, diagnostic, _METADATA_TODO)
    decorator = index.parent(call)
    func = call.func
    keyword = {arg.keyword.value: arg for arg in call.args if arg.keyword is not None}
    metadata = keyword.get("transform_metadata")
    partition = _partition(metadata.value, func) if metadata is not None else None
    mechanical = (
        isinstance(decorator, cst.Decorator) and decorator.decorator is call
        and facts.transform == "vmap"
        and isinstance(func, cst.Attribute) and func.attr.value == "vmap" and _is_name_chain(func.value)
        and partition is not None
        and all(arg.keyword is not None for arg in call.args)
    )
    if not mechanical:
        return _todo(index, diagnostic, _METADATA_TODO)
    args = [arg for arg in call.args if arg is not metadata]
    if args and call.args[-1] is metadata:
        args[-1] = args[-1].with_changes(comma=metadata.comma)
    in_axes = index.code(keyword["in_axes"].value) if "in_axes" in keyword else "0"
    out_axes = index.code(keyword["out_axes"].value) if "out_axes" in keyword else "0"
    layer = f"{index.code(func.value)}.transform_metadata(in_axes={in_axes}, out_axes={out_axes}, partition={partition})"
    function = index.parent(decorator)
    if not isinstance(function, (cst.FunctionDef, cst.ClassDef)):
        return None
    decorators = list(function.decorators)
    position = next(i for i, d in enumerate(decorators) if d is decorator)
    decorators[position] = decorator.with_changes(decorator=call.with_changes(args=args))
    decorators.insert(position + 1, cst.Decorator(decorator=cst.parse_expression(layer)))
    edit = index.replacement(function, function.with_changes(decorators=decorators))
    if edit is None:
        return None
    return Fix(UNSAFE, f"Stack `@{layer}` under the transform instead of `transform_metadata=`", (edit,))


def _partition(value: cst.BaseExpression, func: cst.BaseExpression) -> str | None:
    """The partition's string literal code if ``value`` is ``{nnx.PARTITION_NAME: '...'}``."""
    if not isinstance(value, cst.Dict) or len(value.elements) != 1:
        return None
    element = value.elements[0]
    if not isinstance(element, cst.DictElement) or not isinstance(element.value, cst.SimpleString):
        return None
    key = element.key
    names_partition = (
        isinstance(key, cst.Attribute) and key.attr.value == "PARTITION_NAME"
        and isinstance(func, cst.Attribute) and key.value.deep_equals(func.value)
    ) or (isinstance(key, cst.SimpleString) and key.evaluated_value == "partition_name")
    return element.value.value if names_partition else None


_METADATA_TODO = ("stack `@nnx.transform_metadata(in_axes=..., out_axes=..., partition=...)` under the transform "
                  "(the axes of the stacked dimension) and drop `transform_metadata=`")


def fork_shared_rngs(index: SourceIndex, diagnostic: Diagnostic) -> Fix | None:
    """NNX105: give each module its own stream (``rngs.fork()``); which modules may share
    keys is the author's call, so the fix is display-only."""
    return _todo(index, diagnostic, "pass `rngs.fork()` (an independent copy) to all but one of the modules "
                                    "that store this `Rngs`, or store it once at the top")


def new_custom_vjp_backward(index: SourceIndex, diagnostic: Diagnostic) -> Fix | None:
    """NNX501: the Tree Mode backward receives only the output cotangent; how the body
    used the input updates decides the rewrite, so the fix is display-only."""
    cotangent = facts_of(diagnostic).cotangent
    return _todo(index, diagnostic, f"`{cotangent}` is the output cotangent only in Tree Mode: use it directly "
                                    "and return tangents of the inputs' own types")


def _todo(index: SourceIndex, diagnostic: Diagnostic, advice: str) -> Fix | None:
    """A display-only fix: a TODO comment above the diagnostic's line, with the advice."""
    if diagnostic.line < 1 or diagnostic.line > len(index.lines):
        return None
    line_text = index.lines[diagnostic.line - 1]
    indent = line_text[: len(line_text) - len(line_text.lstrip())]
    comment = f"{indent}# TODO(nnx-lint {diagnostic.code}): {advice}\n"
    edit = index.edit(index.offsets[diagnostic.line - 1], index.offsets[diagnostic.line - 1], comment)
    return Fix(DISPLAY_ONLY, advice[0].upper() + advice[1:], (edit,) if edit else ())


#: Rewrite name (as in ``Rule.fixes``) -> builder.
REWRITES: dict[str, Callable[[SourceIndex, Diagnostic], Fix | None]] = {
    "keep-split-rngs-result": keep_split_rngs_result,
    "transform-metadata-layer": transform_metadata_layer,
    "fork-shared-rngs": fork_shared_rngs,
    "new-custom-vjp-backward": new_custom_vjp_backward,
}
