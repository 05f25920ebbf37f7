"""Remove the explicit graph-mode opt-ins from test code: a source-to-source transform (libcst).

Used by ``bench/flax_tests_recall.py`` to turn flax's own ``tests/nnx`` into "code written for
graph mode that does not say so", which is what users' code looks like when the defaults flip.
Each construct and the decision taken for it:

- ``graph=True`` / ``graph_updates=True`` keyword arguments in a call: **dropped** (the call then
  follows the default mode, i.e. the environment).
- ``graph=NAME`` / ``graph_updates=NAME`` where ``NAME`` is a parameter of an enclosing function
  (absltest's ``@parameterized.parameters(True, False)`` over the mode): **dropped**. Each
  parameterized instance then runs in the environment's mode; branches on the parameter
  (``if graph: ...``) are kept, so the ``True`` instance keeps its graph-mode expectations.
- ``graph=False`` / ``graph_updates=False`` (explicit Tree Mode, an opt-out): **kept**; in Tree
  Mode it changes nothing.
- ``nnx.compat.X`` (graph-mode versions of the API): **rewritten to ``nnx.X``** when ``nnx`` has
  ``X`` (names given by the caller, read from the installed flax); otherwise kept and counted.
- ``with <...>set_graph_mode(V):`` / ``with <...>set_graph_updates(V):`` with a single item and
  ``V`` the literal ``True`` or a mode parameter: **unwrapped** (the body stays, one level out).
  This covers ``nnx.set_graph_updates(graph_updates)`` and module_test.py's local
  ``set_graph_mode(graph_mode)`` helper (which calls ``flax.config.update``).
- ``@<...>set_graph_mode(True)`` / ``@<...>set_graph_updates(True)`` decorators: **removed**.
  With ``False`` (an opt-out) they are kept.

Everything else is left byte for byte (libcst round-trips untouched code exactly).
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import libcst as cst

MODE_KEYWORDS = ("graph", "graph_updates")
MODE_SWITCHES = ("set_graph_mode", "set_graph_updates")


def _callee_name(node: cst.BaseExpression) -> str | None:
    """The last name of a callee: ``set_graph_mode`` for ``nnx.set_graph_mode`` or ``set_graph_mode``."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


class OptInRemover(cst.CSTTransformer):
    """The transform described in the module docstring; ``counts`` says what it did, per construct."""

    def __init__(self, nnx_names: frozenset[str]):
        super().__init__()
        self.nnx_names = nnx_names
        self.counts: Counter[str] = Counter()
        self._parameters: list[frozenset[str]] = []

    # --- which names are mode parameters here ---------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        params = node.params
        names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
        self._parameters.append(frozenset(names))

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        self._parameters.pop()
        decorators = [d for d in updated.decorators if not self._is_opt_in_switch(d.decorator, "decorator")]
        return updated.with_changes(decorators=decorators) if len(decorators) != len(updated.decorators) else updated

    def _mode_value(self, value: cst.BaseExpression) -> str | None:
        """``literal`` for ``True``, ``parameter`` for a parameter of an enclosing function, else None."""
        if isinstance(value, cst.Name):
            if value.value == "True":
                return "literal"
            if any(value.value in names for names in self._parameters):
                return "parameter"
        return None

    def _is_opt_in_switch(self, node: cst.BaseExpression, where: str) -> bool:
        if not (isinstance(node, cst.Call) and _callee_name(node.func) in MODE_SWITCHES and len(node.args) == 1):
            return False
        kind = self._mode_value(node.args[0].value)
        if kind is None:
            return False
        self.counts[f"{where} {_callee_name(node.func)}({kind}) removed"] += 1
        return True

    # --- graph=True / graph_updates=True ----------------------------------------------------
    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        kept: list[cst.Arg] = []
        for argument in updated.args:
            keyword = argument.keyword.value if argument.keyword is not None else None
            kind = self._mode_value(argument.value) if keyword in MODE_KEYWORDS else None
            if kind is not None:
                self.counts[f"{keyword}=<{'True' if kind == 'literal' else 'mode parameter'}> dropped"] += 1
                continue
            kept.append(argument)
        if len(kept) == len(updated.args):
            return updated
        if kept and kept[-1] is not updated.args[-1]:
            # The last argument went: the new last one takes its comma (or its absence) and the
            # whitespace before the closing parenthesis, so the call keeps its lines.
            removed = updated.args[-1]
            kept[-1] = kept[-1].with_changes(comma=removed.comma, whitespace_after_arg=removed.whitespace_after_arg)
        return updated.with_changes(args=kept)

    # --- nnx.compat.X -> nnx.X ----------------------------------------------------------------
    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        inner = updated.value
        if (isinstance(inner, cst.Attribute) and inner.attr.value == "compat" and isinstance(inner.value, cst.Name)
                and inner.value.value == "nnx"):
            name = updated.attr.value
            if name in self.nnx_names:
                self.counts["nnx.compat.X -> nnx.X"] += 1
                return updated.with_changes(value=inner.value)
            self.counts[f"nnx.compat.{name} kept (no nnx.{name})"] += 1
        return updated

    # --- with set_graph_mode(True): ... -------------------------------------------------------
    def leave_With(self, original: cst.With, updated: cst.With):
        if len(updated.items) != 1 or not self._is_opt_in_switch(updated.items[0].item, "with"):
            return updated
        body = updated.body
        if not isinstance(body, cst.IndentedBlock):
            return updated
        statements = list(body.body)
        if statements:
            # The with's own leading comments and blank lines stay in front of the unwrapped body.
            statements[0] = statements[0].with_changes(
                leading_lines=[*updated.leading_lines, *statements[0].leading_lines])
        return cst.FlattenSentinel(statements)


def remove_opt_ins(source: str, nnx_names: frozenset[str]) -> tuple[str, Counter[str]]:
    """``source`` with its explicit opt-ins removed, and the count of each change."""
    module = cst.parse_module(source)
    remover = OptInRemover(nnx_names)
    return module.visit(remover).code, remover.counts


def remove_opt_ins_in_tree(root: Path, nnx_names: frozenset[str]) -> dict[str, Counter[str]]:
    """Rewrite every ``.py`` file under ``root`` in place; the counts per changed file (relative path)."""
    changed: dict[str, Counter[str]] = {}
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        try:
            new_source, counts = remove_opt_ins(source, nnx_names)
        except cst.ParserSyntaxError:
            continue
        if new_source != source:
            path.write_text(new_source, encoding="utf-8")
            changed[str(path.relative_to(root))] = counts
    return changed
