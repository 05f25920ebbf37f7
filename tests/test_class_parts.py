"""The class model is a façade over parts, not a class made of mixins: each part owns its
state, is given the parts it asks, and never reads another part's private attributes."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from nnx_lint.analysis import parsing
from nnx_lint.analysis.aliases import AliasQueries
from nnx_lint.analysis.class_hierarchy import ClassHierarchy
from nnx_lint.analysis.class_kinds import ClassKinds
from nnx_lint.analysis.classes import ClassModel
from nnx_lint.analysis.construction import ConstructionReplay
from nnx_lint.analysis.context import FileContext
from nnx_lint.analysis.expression_classes import ExpressionClasses
from nnx_lint.analysis.factories import FactoryReturns
from nnx_lint.analysis.project import Project
from nnx_lint.analysis.refs import RefQueries

PARTS = (ClassHierarchy, ExpressionClasses, FactoryReturns, RefQueries, ClassKinds, ConstructionReplay, AliasQueries)
#: The modules of the class model: the façade and its parts.
MODULES = sorted({inspect.getmodule(part).__file__ for part in (ClassModel, *PARTS)})


def test_the_class_model_has_no_mixins():
    assert ClassModel.__mro__ == (ClassModel, object)
    for part in PARTS:
        assert part.__mro__ == (part, object), part


def _private_reads(path: str) -> list[str]:
    """``x._name`` in ``path`` where ``x`` is not the object's own ``self`` / ``cls``: a read of
    another object's private state (``self.hierarchy._infos``, ``model._local_class``)."""
    found = []
    for node in ast.walk(ast.parse(Path(path).read_text())):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                found.append(f"{Path(path).name}:{node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: Path(p).name)
def test_no_part_reads_another_parts_private_state(path):
    assert _private_reads(path) == []


def test_the_private_read_check_sees_one(tmp_path):
    path = tmp_path / "part.py"
    path.write_text("class A:\n    def f(self):\n"
                    "        return self.hierarchy._infos, model._local_class(x), self._own\n")
    assert _private_reads(str(path)) == ["part.py:3: self.hierarchy._infos", "part.py:3: model._local_class"]


def test_each_part_is_given_only_parts():
    """A part's constructor takes the parts it asks (and the project or the module), never the
    file's whole context or the façade."""
    for part in PARTS:
        parameters = list(inspect.signature(part.__init__).parameters)[1:]
        assert "context" not in parameters and "model" not in parameters, (part, parameters)


def test_the_facade_wires_each_part_once():
    module = parsing.build("x = 1\n", "m.py", "m", lambda name: False)
    classes = FileContext(module, "m.py", Project()).classes
    assert classes.expressions.factories is classes.factories
    assert classes.kinds.refs is classes.refs
    assert classes.refs.kinds is classes.kinds and classes.aliases.replay is classes.replay
    assert classes.factories.hierarchy is classes.hierarchy is classes.expressions.hierarchy
