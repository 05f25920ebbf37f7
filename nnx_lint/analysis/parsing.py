"""Reading and parsing files safely: decode errors, syntax errors, nothing executed.

astroid's builder is used with its brain transforms off and two steps that would infer
into imported packages disabled (wildcard-import expansion of external modules and the
delayed ``obj.attr = ...`` bookkeeping): both could make astroid load flax or jax.
"""
from __future__ import annotations

import io
import sys
import tokenize
import warnings

from astroid import nodes
from astroid.builder import AstroidBuilder
from astroid.exceptions import AstroidSyntaxError
from astroid.manager import AstroidManager

from nnx_lint.base import bounds
from nnx_lint.base.bounds import ParseFailure  # re-exported: the engine's callers catch parsing.ParseFailure
from nnx_lint.base.syntax.constructs import find_newer_syntax, lowered


class _SafeBuilder(AstroidBuilder):
    def __init__(self, manager: AstroidManager, is_project_module=None) -> None:
        super().__init__(manager, apply_transforms=False)
        self._is_project_module = is_project_module or (lambda name: False)

    def add_from_names_to_locals(self, node: nodes.ImportFrom, global_name) -> None:
        names = node.names
        if names and names[0][0] == "*":
            from nnx_lint.analysis.names import is_external

            if is_external(node.modname) or not self._is_project_module(node.modname):
                return  # expanding `from flax.nnx import *` would load flax
        super().add_from_names_to_locals(node, global_name)

    def delayed_assattr(self, node: nodes.AssignAttr) -> None:
        # Registering `self.x = ...` in instance_attrs infers the class's bases (to
        # check __slots__), which loads flax for every nnx.Module subclass. nnx-lint's
        # class model reads assignments from the tree itself instead.
        return


_MANAGER: AstroidManager | None = None


def manager() -> AstroidManager:
    """The process's astroid manager (astroid keeps one per process)."""
    global _MANAGER
    if _MANAGER is None:
        _MANAGER = AstroidManager()
    return _MANAGER


def decode(data: bytes) -> str:
    """Decode source bytes like Python does (PEP 263 cookie, BOM, default UTF-8)."""
    bounds.check_bytes(data, bounds.LIMITS.source_bytes)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise ParseFailure("NNX001", f"cannot decode file: {exc}") from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ParseFailure(
            "NNX001",
            f"cannot decode file as {encoding}: byte 0x{data[exc.start]:02x} at offset {exc.start} is not valid",
            line,
            column,
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


def _syntax_failure(error: SyntaxError) -> ParseFailure:
    return ParseFailure("NNX002", f"syntax error: {error.msg}", error.lineno or 1, max(error.offset or 1, 1))


def build(text: str, path: str, module_name: str, is_project_module=None) -> nodes.Module:
    """Build the astroid tree of ``text`` without executing or importing anything.

    Syntax newer than the running Python (a PEP 701 f-string on 3.11, ``type X = ...`` on 3.10)
    is read in an older spelling with the same positions (:mod:`nnx_lint.base.syntax.constructs`), so
    the tree, and every finding, is the same on every Python nnx-lint runs on.
    """
    try:
        return _build(text, path, module_name, is_project_module)
    except AstroidSyntaxError as exc:
        error = exc.error if isinstance(exc.error, SyntaxError) else None
        detail = str(exc.error)
    running = sys.version_info[:2]
    newer = find_newer_syntax(text)
    if any(construct.added_in > running for construct in newer):
        try:
            return _build(lowered(text, newer, running), path, module_name, is_project_module)
        except AstroidSyntaxError as exc:
            # The error of the older spelling is at the same place: it is the file's own.
            error = exc.error if isinstance(exc.error, SyntaxError) else None
    if error is not None:
        raise _syntax_failure(error) from None
    raise ParseFailure("NNX002", f"syntax error: {detail}") from None


def _build(text: str, path: str, module_name: str, is_project_module) -> nodes.Module:
    builder = _SafeBuilder(manager(), is_project_module)
    try:
        with warnings.catch_warnings():
            # The analysed file's own SyntaxWarnings (`"str"()`, invalid escapes) are not
            # nnx-lint's to print: they would reach the user's terminal as raw text.
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            module = builder.string_build(text, module_name, path)
    except RecursionError:
        raise ParseFailure(
            "NNX004", "file is too deeply nested to analyse (Python's recursion limit was hit)"
        ) from None
    # Drop the manager's reference: nnx-lint keeps the trees it needs itself, and a
    # cache entry keyed by module name would leak across files of a long run.
    manager().astroid_cache.pop(module_name, None)
    return module
