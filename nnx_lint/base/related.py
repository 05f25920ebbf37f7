"""Related locations: the other lines a finding involves, as rules name them and as reports show them.

A rule reports a finding where the fix goes and names the other lines with
``self.report(node, ..., related=[(other_node, "stored here"), ...])``. The engine turns
each node into a :class:`~nnx_lint.base.diagnostic.Related` here: a node of the linted module
gets the linted path (the name the user gave, ``-`` for stdin, the ``.ipynb`` of a
notebook); a node of another project module (a base class's ``__init__`` in another file)
gets that file's path, written the way the linted file's path is written (relative to
the same directory, or absolute if it is absolute), so both can be followed from the same
place. Notebook cells are mapped afterwards with the diagnostic (:mod:`nnx_lint.base.notebooks`).
"""
from __future__ import annotations

import os
from collections.abc import Iterable

from nnx_lint.base.diagnostic import Related

# Type checkers take TYPE_CHECKING as true; a run never imports typing for annotations (start-up).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from astroid import nodes

#: What a rule passes for each related location: a node (or an already built location) and
#: what happens there.
RelatedSpec = tuple["nodes.NodeNG | Related", str]


def locations(
    specs: Iterable[RelatedSpec] | None,
    module: nodes.Module,
    path: str,
    linted_file: str | None,
    main: tuple[int, int],
) -> tuple[Related, ...]:
    """The related locations of one finding, in the rule's order.

    ``module``/``path``: the linted module and its displayed path; ``linted_file``: the file
    it was read from (resolved), against which other files' paths are written; ``main``:
    the finding's own ``(line, column)``, which is not repeated, nor is any location twice.
    """
    if not specs:
        return ()
    found: list[Related] = []
    seen = {(path, *main)}
    for target, message in specs or ():
        location = target if isinstance(target, Related) else _of_node(target, module, path, linted_file)
        location = Related(location.path, location.line, location.column, location.end_line, location.end_column,
                           str(message), location.cell, location.ipynb)
        key = (location.path, location.line, location.column)
        if key not in seen:
            seen.add(key)
            found.append(location)
    return tuple(found)


def _of_node(node: nodes.NodeNG, module: nodes.Module, path: str, linted_file: str | None) -> Related:
    root = node.root()
    if root is module or not getattr(root, "file", None):
        where = path
    else:
        where = display_other(root.file, path, linted_file)
    line = node.lineno or 1
    column = (node.col_offset or 0) + 1
    end_line = node.end_lineno or line
    end_column = (node.end_col_offset or node.col_offset or 0) + 1
    return Related(where, line, column, end_line, end_column, "")


def display_other(other: str, display: str, linted_file: str | None) -> str:
    """``other`` (a file path as read) named as ``display`` names ``linted_file``: the
    same directory prefix, relative or absolute alike.

    >>> display_other("/p/src/pkg/base.py", "src/pkg/model.py", "/p/src/pkg/model.py")
    'src/pkg/base.py'
    >>> display_other("/p/src/base.py", "/p/src/pkg/model.py", "/p/src/pkg/model.py")
    '/p/src/base.py'
    """
    if linted_file is None:
        return os.path.normpath(other) if os.path.isabs(display) else _relative_to_cwd(other)
    try:
        relative = os.path.relpath(other, os.path.dirname(linted_file))
    except ValueError:  # another drive (Windows): no relative form exists
        return other
    return os.path.normpath(os.path.join(os.path.dirname(display), relative))


def _relative_to_cwd(path: str) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return path


#: How the anchored finding names the line it was found on, in the other file.
FOUND_THERE = "found here, in another file"


def anchored(
    node: nodes.NodeNG, specs: Iterable[RelatedSpec] | None, module: nodes.Module,
) -> tuple[nodes.NodeNG | None, list[RelatedSpec]]:
    """Where a finding at ``node`` is reported in ``module``, and its related locations then.

    A finding stays in the file being linted: a rule that followed a value into another
    project module (a helper returning a model, a base class's ``__init__``) may find it
    there, but the user acts on this file's line. A node of ``module`` is its own anchor. A
    node of another module is anchored at the first related location in ``module`` (the
    call or transform that led there), and the node itself becomes the first related
    location (:data:`FOUND_THERE`, unless the rule named it already). ``(None, specs)``
    when nothing in ``module`` can carry the finding.

    >>> import astroid
    >>> here, there = astroid.parse("f(1)\\n", "here"), astroid.parse("x = 1\\n", "there")
    >>> anchor, specs = anchored(there.body[0], [(here.body[0], "called here")], here)
    >>> anchor is here.body[0], [message for _node, message in specs]
    (True, ['found here, in another file', 'called here'])
    """
    specs = list(specs or ())
    if node.root() is module:
        return node, specs
    anchor = next((target for target, _message in specs
                   if not isinstance(target, Related) and target.root() is module), None)
    if anchor is None:
        return None, specs
    if not any(target is node for target, _message in specs):
        specs.insert(0, (node, FOUND_THERE))
    return anchor, specs


def position(related: Related) -> str:
    """``path:line:column`` (``path:cell N:line:column`` in a notebook), unescaped."""
    cell = f"cell {related.cell}:" if related.cell is not None else ""
    return f"{related.path}:{cell}{related.line}:{related.column}"
