"""Code written to raise: a Tree Mode error there is what its author asserts.

Tests check that a pattern raises (``with pytest.raises(ValueError):``,
``with self.assertRaises(ValueError):``). If graph mode raises there today, a Tree Mode
error at the same place breaks nothing: the test passes in both modes. An assertion that
also matches the message (``assertRaisesRegex``, ``pytest.raises(..., match=...)``) is not
excused: Tree Mode's message differs, and the test breaks. Rules whose finding is "Tree Mode raises" stay silent on such
code (:meth:`nnx_lint.analysis.context.FileContext.report`); rules about silent changes still
report, because a silent change inside an expected-error block is still a change.

Only these explicit assertion forms count. A ``try``/``except`` around code is not an
assertion that it raises (training loops catch and retry), so it is never excused.
"""
from __future__ import annotations

from astroid import nodes

#: Context managers / calls that assert an exception type (the attribute or function name).
#: ``assertRaisesRegex`` and ``pytest.raises(..., match=...)`` also assert the message, which
#: Tree Mode usually changes ("Inconsistent aliasing" becomes "Duplicate Param"): measured on
#: flax's own tests, such tests break, so those forms do not excuse a finding.
_ASSERTING = frozenset({"raises", "assertRaises"})


def expects_error(node: nodes.NodeNG) -> bool:
    """Whether ``node`` runs where its author asserts an exception."""
    child, parent = node, node.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.ClassDef, nodes.Module)):
        if isinstance(parent, nodes.With) and child in parent.body:
            if any(_asserting(item) for item, _alias in parent.items):
                return True
        child, parent = parent, parent.parent
    return False


def _asserting(expression: nodes.NodeNG) -> bool:
    """``pytest.raises(E)`` / ``self.assertRaises(E)``: the type only, no message to match."""
    if not isinstance(expression, nodes.Call):
        return False
    func = expression.func
    name = func.attrname if isinstance(func, nodes.Attribute) else getattr(func, "name", None)
    return name in _ASSERTING and not any(k.arg == "match" for k in expression.keywords or [])

