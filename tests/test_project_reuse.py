"""A file that an earlier file's analysis built as a project module is linted from that tree.

The second build is spared only when it would give the same tree: same text, module name and
file root, and no ``import *``. The diagnostics are those of a run that builds the file again.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from nnx_lint.analysis import parsing
from nnx_lint.engine.walk import lint_bytes
from nnx_lint.analysis.project import Project, module_name_for
from nnx_lint.engine.registry import all_rules

FIXTURE = Path(__file__).parent / "fixtures" / "shared_references" / "NNX101_tied_variable_into_jit.py"
MAIN = """\
import jax.numpy as jnp
from flax import nnx
from models import Tied


def main():
    model = Tied()
    return nnx.jit(lambda m, x: m(x))(model, jnp.ones((1, 2)))
"""


@pytest.fixture
def files(tmp_path):
    (tmp_path / "models.py").write_text(FIXTURE.read_text())
    (tmp_path / "main.py").write_text(MAIN)
    return tmp_path


def _lint(project: Project, file: Path, text: str | None = None):
    module_name, package_root = module_name_for(file)
    project.start_file(str(file), package_root)
    data = file.read_bytes() if text is None else text.encode()
    return lint_bytes(data, file.name, all_rules(), project=project, module_name=module_name)


def _counting_builds(monkeypatch) -> list[str]:
    built: list[str] = []
    original = parsing.build

    def build(text, path, module_name, is_project_module=None):
        built.append(module_name)
        return original(text, path, module_name, is_project_module)

    monkeypatch.setattr(parsing, "build", build)
    return built


def test_an_imported_file_is_linted_from_the_tree_built_for_its_importer(files, monkeypatch):
    expected = _lint(Project([files]), files / "models.py")
    assert "NNX101" in [d.code for d in expected]
    built = _counting_builds(monkeypatch)
    project = Project([files])
    _lint(project, files / "main.py")
    assert built == ["main", "models"]  # main.py's analysis reads models.py
    found = _lint(project, files / "models.py")
    assert built == ["main", "models"], "models.py is not built a second time"
    assert [d.to_dict() for d in found] == [d.to_dict() for d in expected]


@pytest.mark.parametrize("change", ["text", "module-name", "file-root", "wildcard-import"])
def test_the_tree_is_built_again_when_a_build_could_differ(files, change):
    project = Project([files])
    _lint(project, files / "main.py")
    models = files / "models.py"
    text = models.read_text()
    name, root = module_name_for(models)
    if change == "text":
        text += "\nEXTRA = 1\n"
    elif change == "module-name":
        name = "pkg.models"
    elif change == "file-root":
        root = files / "elsewhere"
    project.start_file(str(models), root)
    if change == "wildcard-import":
        (files / "helpers.py").write_text("from flax import nnx\nSIZE = 2\n")
        models.write_text("from helpers import *\n" + text)
        project = Project([files])
        _lint(project, files / "main.py")
        project.start_file(str(models), root)
        text = models.read_text()
        assert "models" in [m.name for m in project._modules.values() if m is not None]
    assert project.tree_of_current_file(text, name) is None
    if change == "wildcard-import":
        return
    project.start_file(str(models), module_name_for(models)[1])
    assert project.tree_of_current_file(models.read_text(), "models") is not None  # the unchanged control
