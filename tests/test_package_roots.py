"""Package roots: classes under ``src/`` (or any declared package directory) are known to
files outside it, so cross-file rules fire from tests and scripts."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from nnx_lint.cli import main
from nnx_lint.analysis.package_roots import source_roots

MODEL = """\
from flax import nnx


class Policy(nnx.Module):
    def __init__(self, rngs):
        self.fc = nnx.Linear(3, 2, rngs=rngs)
        self.drop = nnx.Dropout(0.1, rngs=rngs)

    def __call__(self, x):
        return self.drop(self.fc(x))
"""

USE = """\
import jax.numpy as jnp
from flax import nnx

from pkg.models import Policy


def test_grad():
    model = Policy(nnx.Rngs(0))
    nnx.grad(lambda m: m(jnp.ones((4, 3))).mean())(model)
"""


def _project(tmp_path: Path, package_dir: str, pyproject: str = "", setup_cfg: str = "") -> Path:
    package = tmp_path / package_dir / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text(MODEL)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_models.py").write_text(USE)
    (tmp_path / "pyproject.toml").write_text(pyproject or '[project]\nname = "pkg"\nversion = "0"\n')
    if setup_cfg:
        (tmp_path / "setup.cfg").write_text(setup_cfg)
    return tmp_path


def _codes(project: Path, capsys, monkeypatch) -> list[tuple[str, str]]:
    monkeypatch.chdir(project / "tests")  # the cwd is not the package root: only configuration finds it
    main(["check", str(project), "--no-cache", "--output-format", "json", "-j", "1", "--select", "NNX4"])
    return sorted((Path(d["filename"]).name, d["code"]) for d in json.loads(capsys.readouterr().out))


FIRES = [("test_models.py", "NNX401")]


@pytest.mark.parametrize(
    ("package_dir", "pyproject", "setup_cfg"),
    [
        pytest.param("src", "", "", id="src-layout-by-default"),
        pytest.param("lib", '[tool.nnx-lint]\nsrc = ["lib"]\n', "", id="nnx-lint-src-setting"),
        pytest.param("lib", '[tool.setuptools]\npackage-dir = {"" = "lib"}\n', "", id="setuptools-package-dir"),
        pytest.param("code", '[tool.setuptools.packages.find]\nwhere = ["code"]\n', "", id="setuptools-find-where"),
        pytest.param("lib", '[tool.poetry]\npackages = [{include = "pkg", from = "lib"}]\n', "", id="poetry-from"),
        pytest.param(
            "lib", '[tool.hatch.build.targets.wheel]\npackages = ["lib/pkg"]\n', "", id="hatch-wheel-packages"
        ),
        pytest.param("lib", "", "[options]\npackage_dir =\n    =lib\n", id="setup-cfg-package-dir"),
    ],
)
@pytest.mark.slow
def test_declared_package_roots_make_cross_file_classes_known(tmp_path, capsys, monkeypatch, package_dir, pyproject,
                                                              setup_cfg):
    project = _project(tmp_path, package_dir, pyproject, setup_cfg)
    assert _codes(project, capsys, monkeypatch) == FIRES


def test_undeclared_package_directory_stays_unknown(tmp_path, capsys, monkeypatch):
    """The negative: a package directory nothing declares is not guessed (no finding, no crash)."""
    project = _project(tmp_path, "lib")
    assert _codes(project, capsys, monkeypatch) == []


def test_configured_src_replaces_the_default(tmp_path, capsys, monkeypatch):
    """As Ruff's `src`: once configured, `src/` is no longer searched by default."""
    project = _project(tmp_path, "src", '[tool.nnx-lint]\nsrc = ["."]\n')
    assert _codes(project, capsys, monkeypatch) == []


def test_changing_the_roots_invalidates_cached_results(tmp_path, capsys, monkeypatch):
    project = _project(tmp_path, "lib")
    cache = tmp_path / "cache"
    monkeypatch.chdir(project / "tests")
    arguments = ["check", str(project), "--cache-dir", str(cache), "--output-format", "json", "-j", "1"]
    main(arguments)
    assert json.loads(capsys.readouterr().out) == []
    (project / "pyproject.toml").write_text('[tool.nnx-lint]\nsrc = ["lib"]\n')
    main(arguments)
    assert [d["code"] for d in json.loads(capsys.readouterr().out)] == ["NNX401"]


def test_roots_are_existing_directories_without_duplicates(tmp_path):
    (tmp_path / "src").mkdir()
    roots = source_roots(tmp_path, None, {"tool": {"setuptools": {"package-dir": {"": "src"}}}})
    assert roots == [tmp_path.resolve(), (tmp_path / "src").resolve()]
    assert source_roots(tmp_path, ["missing"], {}) == []


def test_a_package_installed_from_inside_the_project_is_a_root(tmp_path, capsys, monkeypatch):
    """A monorepo's library with its own build file (`libs/pkgproj/pyproject.toml`, `src/` layout)."""
    project = _project(tmp_path, "libs/pkgproj/src")
    assert _codes(project, capsys, monkeypatch) == []  # not yet a package: a plain directory
    (project / "libs" / "pkgproj" / "pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "0"\n')
    assert _codes(project, capsys, monkeypatch) == FIRES


def test_nested_package_roots_come_after_the_projects_own(tmp_path):
    core = tmp_path / "libs" / "core"
    (core / "src").mkdir(parents=True)
    (core / "setup.py").write_text("")
    (tmp_path / "deep" / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "deep" / "a" / "b" / "c" / "pyproject.toml").write_text("")  # four levels down: not searched
    (tmp_path / "node_modules" / "x").mkdir(parents=True)
    (tmp_path / "node_modules" / "x" / "setup.py").write_text("")
    assert source_roots(tmp_path, None, {}) == [tmp_path.resolve(), core.resolve(), (core / "src").resolve()]
    assert source_roots(tmp_path, ["."], {}) == [tmp_path.resolve()]  # a configured `src` is the whole answer


BASE = """\
from flax import nnx


class Base(nnx.Module):
    def __init__(self, *, rngs):
        self.rngs = rngs
"""

SUBCLASS = """\
import jax.numpy as jnp
from flax import nnx

from core.base import Base


class Child(nnx.Module):
    def __init__(self, rngs):
        self.rngs = rngs
        self.lin = nnx.Linear(2, 2, rngs=rngs)


class Model(Base):
    def __init__(self, rngs):
        super().__init__(rngs=rngs)
        self.child = Child(rngs)


def run():
    model = Model(nnx.Rngs(0))
    return nnx.jit(lambda m, x: m.child.lin(x))(model, jnp.ones((1, 2)))
"""


def test_a_base_class_in_another_package_of_the_project_is_followed(tmp_path, capsys, monkeypatch):
    """`Base` (in `libs/core`, installed from the project) stores `self.rngs`; the subclass hands the
    same Rngs to a child that stores it: Tree Mode raises Duplicate RngCount (flax 0.12.8)."""
    package = tmp_path / "libs" / "core" / "src" / "core"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text(BASE)
    (tmp_path / "libs" / "core" / "pyproject.toml").write_text('[project]\nname = "core"\nversion = "0"\n')
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "model.py").write_text(SUBCLASS)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "app"\nversion = "0"\n')
    monkeypatch.chdir(tmp_path / "app")
    main(["check", str(tmp_path), "--no-cache", "--output-format", "json", "-j", "1", "--select", "NNX105"])
    found = sorted((Path(d["filename"]).name, d["code"]) for d in json.loads(capsys.readouterr().out))
    assert found == [("model.py", "NNX105")]
