"""Reading and parsing files safely: decode errors, syntax errors, nothing executed.

astroid's builder is used with its brain transforms off and two steps that would infer
into imported packages disabled (wildcard-import expansion of external modules and the
delayed ``obj.attr = ...`` bookkeeping): both could make astroid load flax or jax.
"""
from __future__ import annotations

import io
import re
import sys
import tokenize
import warnings

from astroid import nodes
from astroid.builder import AstroidBuilder
from astroid.exceptions import AstroidSyntaxError
from astroid.manager import AstroidManager

from nnx_lint import bounds
from nnx_lint.bounds import ParseFailure  # re-exported: the engine's callers catch parsing.ParseFailure
from nnx_lint.lines import physical_lines


class _SafeBuilder(AstroidBuilder):
    def __init__(self, manager: AstroidManager, is_project_module=None) -> None:
        super().__init__(manager, apply_transforms=False)
        self._is_project_module = is_project_module or (lambda name: False)

    def add_from_names_to_locals(self, node: nodes.ImportFrom, global_name) -> None:
        names = node.names
        if names and names[0][0] == "*":
            from nnx_lint.names import is_external

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


# Syntax newer than the running interpreter, recognised to say so plainly.
_NEWER_SYNTAX = [
    (re.compile(r"^\s*type\s+[A-Za-z_]\w*\s*(\[.*\])?\s*="), (3, 12), "`type` alias statements"),
    (re.compile(r"^\s*(async\s+)?def\s+\w+\s*\["), (3, 12), "generic function syntax `def f[T](...)`"),
    (re.compile(r"^\s*class\s+\w+\s*\["), (3, 12), "generic class syntax `class C[T]:`"),
    (re.compile(r"^\s*except\s*\*"), (3, 11), "`except*`"),
]


def _syntax_failure(error: SyntaxError, text: str) -> ParseFailure:
    line = error.lineno or 1
    column = error.offset or 1
    lines = physical_lines(text)
    source_line = lines[line - 1] if 0 < line <= len(lines) else ""
    for pattern, version, feature in _NEWER_SYNTAX:
        if sys.version_info < version and pattern.search(source_line):
            wanted = ".".join(map(str, version))
            running = ".".join(map(str, sys.version_info[:2]))
            return ParseFailure(
                "NNX002",
                f"syntax error: {feature} need Python >= {wanted}, and nnx-lint runs on Python {running}: "
                "file not analysed",
                line,
                1,
            )
    if sys.version_info < (3, 12) and (error.msg or "").startswith("f-string"):
        running = ".".join(map(str, sys.version_info[:2]))
        return ParseFailure(
            "NNX002",
            f"syntax error: {error.msg} (Python >= 3.12 f-string syntax? nnx-lint runs on Python {running})",
            line,
            max(column, 1),
        )
    return ParseFailure("NNX002", f"syntax error: {error.msg}", line, max(column, 1))


def build(text: str, path: str, module_name: str, is_project_module=None) -> nodes.Module:
    """Build the astroid tree of ``text`` without executing or importing anything."""
    builder = _SafeBuilder(manager(), is_project_module)
    try:
        with warnings.catch_warnings():
            # The analysed file's own SyntaxWarnings (`"str"()`, invalid escapes) are not
            # nnx-lint's to print: they would reach the user's terminal as raw text.
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            module = builder.string_build(text, module_name, path)
    except AstroidSyntaxError as exc:
        error = exc.error if isinstance(exc.error, SyntaxError) else None
        if error is not None:
            raise _syntax_failure(error, text) from None
        raise ParseFailure("NNX002", f"syntax error: {exc.error}") from None
    except RecursionError:
        raise ParseFailure(
            "NNX004", "file is too deeply nested to analyse (Python's recursion limit was hit)"
        ) from None
    # Drop the manager's reference: nnx-lint keeps the trees it needs itself, and a
    # cache entry keyed by module name would leak across files of a long run.
    manager().astroid_cache.pop(module_name, None)
    return module
