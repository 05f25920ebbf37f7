"""Fixes follow the project's flax: which flax a project runs on, and the pins that flax takes."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from nnx_lint.cli import main
from nnx_lint.engine.config import ConfigError, load_settings
from nnx_lint.fixes import flax_target
from nnx_lint.fixes.flax_target import ProjectFlax, declared_flax, locked_flax, project_flax, requirement_lower_bound
from nnx_lint.flax_table.nnx_api import (GRAPH_APIS, TRANSFORMS, keyword_since, pin_flags, pin_missing, pin_needs,
                                          version_key)


@pytest.mark.parametrize("requirement,bound", [
    ("flax>=0.12.5", (">=", "0.12.5")),
    ("flax >= 0.12.0, < 0.13.0", (">=", "0.12.0")),
    ("Flax[all]~=0.12.6; python_version >= '3.11'", ("~=", "0.12.6")),
    ("flax==0.12.3", ("==", "0.12.3")),
    ("flax (>=0.11,<0.13)", (">=", "0.11")),
    ("flax>=0.12.6rc1", (">=", "0.12.6rc1")),
    ("flax>=0.11,>=0.12.6", (">=", "0.12.6")),  # every clause holds: the highest lower bound counts
    ("flax>0.12.5", (">", "0.12.5")),
    ("flax", None), ("flax<0.13", None), ("flax!=0.12.5", None),
    ("flax @ git+https://github.com/google/flax.git", None),
    ("flax>=latest", None),
    ("flaxformer>=0.12.6", None), ("jax>=0.12.6", None),
])
def test_a_requirement_gives_its_lower_bound_on_flax(requirement, bound):
    assert requirement_lower_bound(requirement) == bound


@pytest.mark.parametrize("constraint,bound", [
    ("^0.12.5", ("^", "0.12.5")), ("~0.12.6", ("~", "0.12.6")), ("0.12.5", ("==", "0.12.5")),
    (">= 0.12, < 0.13", (">=", "0.12")), ("^0.12.6 || ^0.11", ("^", "0.11")), ("*", None),
])
def test_poetry_constraints(constraint, bound):
    assert requirement_lower_bound(constraint, poetry=True) == bound


def test_versions_order_like_releases():
    # Only the release and the phase count: every pre-release of 0.12.6 is "before 0.12.6".
    assert version_key("0.12.6.dev1") == version_key("0.12.6rc2") < version_key("0.12.6") < version_key("0.12.6.1")
    assert version_key("0.12.6") < version_key("0.12.6.post1") < version_key("0.12.7") < version_key("0.13")
    assert version_key("0.12.6+cuda") == version_key("0.12.6") and version_key("main") is None


def test_the_pin_table_covers_every_pinnable_api():
    for api in TRANSFORMS | GRAPH_APIS:
        if pin_flags(api) is not None:
            assert pin_needs(api) is not None, api
    assert [pin_needs(api) for api in ("jit", "vmap", "split", "map", "prefix", "split_rngs")] == [
        "0.12.6", "0.12.6", "0.12.5", "0.12.6", "0.12.7", "0.12.7"]
    assert pin_missing("split", "0.12.4") == [("graph", "0.12.5")]
    assert pin_missing("jit", "0.12.4") == [("graph_updates", "0.12.6")]
    assert pin_missing("jit", "0.11.2") == [("graph", "0.12.4"), ("graph_updates", "0.12.6")]
    assert pin_missing("jit", "0.12.6rc1") == [("graph_updates", "0.12.6")]  # a pre-release comes before it
    assert keyword_since("split", "graph_updates") is None  # graph APIs take only graph=


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_declared_requirements_give_the_lowest_lower_bound(tmp_path):
    _write(tmp_path, {
        "pyproject.toml": """
[project]
name = "demo"
dependencies = ["numpy", "flax>=0.12.7"]
[project.optional-dependencies]
tpu = ["flax>=0.12.8"]
[dependency-groups]
legacy = ["flax>=0.12.6", {include-group = "tpu"}]
""",
    })
    found = declared_flax(tmp_path)
    assert found == ProjectFlax("0.12.6", "`flax>=0.12.6` in pyproject.toml [dependency-groups] legacy")


def test_poetry_requirement_files_and_hatch_hook(tmp_path):
    _write(tmp_path, {
        "pyproject.toml": """
[tool.poetry.dependencies]
python = "^3.11"
flax = {version = "^0.12.7", extras = ["all"]}
[tool.poetry.group.old.dependencies]
Flax = "~0.12.6"
""",
    })
    assert declared_flax(tmp_path) == ProjectFlax("0.12.6", "`flax~0.12.6` in pyproject.toml [tool.poetry.group.old.dependencies]")
    _write(tmp_path, {"requirements/base.txt": "# pinned\n-r other.txt\nflax==0.12.5 \\\n    --hash=sha256:00\n"})
    assert declared_flax(tmp_path) == ProjectFlax("0.12.5", "`flax==0.12.5` in requirements/base.txt")
    _write(tmp_path, {
        "pyproject.toml": """
[tool.hatch.metadata.hooks.requirements_txt]
files = ["deps/core.txt", "../outside.txt"]
optional-dependencies = { gpu = ["deps/gpu.txt"] }
""",
        "deps/core.txt": "flax>=0.12.8\n", "deps/gpu.txt": "flax>=0.12.7  # cuda\n",
        "../outside.txt": "flax==0.10.0\n",
        "requirements/base.txt": "flax\n",
    })
    # A file listed outside the project root is never read.
    assert declared_flax(tmp_path) == ProjectFlax("0.12.7", "`flax>=0.12.7` in deps/gpu.txt")


def test_a_symlinked_requirement_file_is_not_read(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("flax==0.10.0\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "requirements.txt").symlink_to(outside)
    assert declared_flax(project) is None


def test_lock_files(tmp_path):
    _write(tmp_path, {
        "uv.lock": 'version = 1\n[[package]]\nname = "flax"\nversion = "0.12.7"\n[[package]]\nname = "jax"\nversion = "0.7.0"\n',
        "poetry.lock": '[[package]]\nname = "flax"\nversion = "0.12.6"\n',
        "pdm.lock": "not toml [",
    })
    assert locked_flax(tmp_path) == ProjectFlax("0.12.6", "locked in poetry.lock")
    (tmp_path / "poetry.lock").unlink()
    (tmp_path / "uv.lock").unlink()
    (tmp_path / "Pipfile.lock").write_text(json.dumps({"default": {"flax": {"version": "==0.12.5"}}}))
    assert locked_flax(tmp_path) == ProjectFlax("0.12.5", "locked in Pipfile.lock")


def test_precedence_setting_then_declared_then_locked_then_installed(tmp_path, monkeypatch):
    monkeypatch.setattr(flax_target, "installed_flax", lambda root: ProjectFlax("0.12.8", "the installed flax"))
    assert project_flax(tmp_path) == ProjectFlax("0.12.8", "the installed flax")
    _write(tmp_path, {"uv.lock": '[[package]]\nname = "flax"\nversion = "0.12.7"\n'})
    assert project_flax(tmp_path).source == "locked in uv.lock"
    _write(tmp_path, {"pyproject.toml": '[project]\ndependencies = ["flax>=0.12.5"]\n'})
    assert project_flax(tmp_path).version == "0.12.5"  # what the project admits, not one lock's pick
    assert project_flax(tmp_path, "0.12.8") == ProjectFlax("0.12.8", "`flax-version` under `[tool.nnx-lint]`")
    monkeypatch.setattr(flax_target, "installed_flax", lambda root: None)
    assert project_flax(tmp_path / "empty") == flax_target.UNKNOWN


def test_a_flax_distribution_inside_the_project_is_not_the_installed_flax(tmp_path, monkeypatch):
    fake = tmp_path / "flax-99.0.dist-info"
    fake.mkdir()
    (fake / "METADATA").write_text("Metadata-Version: 2.1\nName: flax\nVersion: 99.0\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), "", *sys.path])
    monkeypatch.chdir(tmp_path)
    found = flax_target.installed_flax(tmp_path)
    assert found is None or found.version != "99.0"


def test_flax_version_setting(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.nnx-lint]\nflax-version = "0.12.6"\n')
    assert load_settings(tmp_path).flax_version == "0.12.6"
    for bad in ('"latest"', "12", '["0.12.6"]'):
        (tmp_path / "pyproject.toml").write_text(f"[tool.nnx-lint]\nflax-version = {bad}\n")
        with pytest.raises(ConfigError, match="`flax-version` must be a flax release"):
            load_settings(tmp_path)


# -- the fixes ------------------------------------------------------------------------------------

pytest.importorskip("libcst")

SOURCE = """\
import jax.numpy as jnp
from flax import nnx


class Tied(nnx.Module):
    def __init__(self):
        self.a = nnx.Param(jnp.ones(2))
        self.b = self.a


@nnx.jit
def bump(c):
    c.n += 1


v = nnx.Param(jnp.ones(2))
graphdef, state = nnx.split([v, v])
"""


def _fixes(flax: ProjectFlax, source: str = SOURCE) -> dict[str, object]:
    from nnx_lint.engine.walk import lint_source
    from nnx_lint.fixes.apply import fix_for
    from nnx_lint.fixes.source import SourceIndex
    from nnx_lint.engine.registry import select_rules

    index = SourceIndex(source)
    return {d.code: fix_for(d, index, False, flax) for d in lint_source(source, "m.py", list(select_rules(None, (), ())))
            if d.facts.get("pin")}


def test_pins_the_project_flax_takes_and_why_not_the_others():
    on_0_12_5 = _fixes(ProjectFlax("0.12.5", "`flax==0.12.5` in pyproject.toml [project] dependencies"))
    assert on_0_12_5["NNX103"].applicability == "safe"
    assert [edit.content for edit in on_0_12_5["NNX103"].edits] == [", graph=True"]
    blocked = on_0_12_5["NNX301"]
    assert blocked.applicability == "display-only" and not blocked.edits
    assert blocked.message == (
        "No pin: `nnx.jit` takes `graph_updates=` only from flax 0.12.6 on, and this project's flax is 0.12.5 "
        "(`flax==0.12.5` in pyproject.toml [project] dependencies): require flax>=0.12.6 to get this fix")
    on_0_12_3 = _fixes(ProjectFlax("0.12.3", "x"))
    assert on_0_12_3["NNX103"].message.startswith("No pin: `nnx.split` takes `graph=` only from flax 0.12.5 on")
    on_0_12_6 = _fixes(ProjectFlax("0.12.6", "x"))
    assert {code: fix.applicability for code, fix in on_0_12_6.items()} == {"NNX103": "safe", "NNX301": "safe"}
    assert "needs flax" not in on_0_12_6["NNX301"].message
    unknown = _fixes(flax_target.UNKNOWN)
    assert unknown["NNX301"].message == ("Keep graph mode at `nnx.jit` (line 11) (needs flax>=0.12.6; this project's "
                                         "flax is unknown: declare it, or set `flax-version` under `[tool.nnx-lint]`)")


def test_a_class_level_pin_needs_every_use_to_take_it():
    source = SOURCE + "m = Tied()\ng, s = nnx.split(m)\ny = nnx.jit(lambda m: m)(m)\n"
    fixes = _fixes(ProjectFlax("0.12.5", "x"), source)
    assert fixes["NNX101"].applicability == "display-only"
    assert "`nnx.jit` takes `graph_updates=`" in fixes["NNX101"].message
    assert _fixes(ProjectFlax("0.12.6", "x"), source)["NNX101"].applicability == "safe"


@pytest.mark.slow
def test_cli_diff_json_and_help_follow_the_project_flax(tmp_path, monkeypatch, capsys):
    _write(tmp_path, {"pyproject.toml": '[project]\nname = "demo"\ndependencies = ["flax>=0.12.5"]\n',
                      "m.py": SOURCE})
    monkeypatch.chdir(tmp_path)
    assert main(["check", ".", "--no-cache", "--diff"]) == 1
    out = capsys.readouterr()
    assert "+graphdef, state = nnx.split([v, v], graph=True)" in out.out and "graph_updates" not in out.out
    assert "Would fix 1 diagnostic (NNX103: 1)." in out.err
    assert main(["check", ".", "--no-cache", "--show-help", "--select", "NNX301"]) == 1
    assert ("No pin fix: `nnx.jit` takes `graph_updates=` only from flax 0.12.6 on, and this project's flax is 0.12.5 "
            "(`flax>=0.12.5` in pyproject.toml [project] dependencies)") in capsys.readouterr().out
    assert main(["check", ".", "--no-cache", "--output-format", "json", "--select", "NNX301"]) == 1
    [entry] = json.loads(capsys.readouterr().out)
    assert entry["fix"]["applicability"] == "display-only" and "require flax>=0.12.6" in entry["help"]
    # The project's own setting wins over what it declares.
    (tmp_path / "pyproject.toml").write_text('[project]\ndependencies = ["flax>=0.12.5"]\n'
                                             '[tool.nnx-lint]\nflax-version = "0.12.6"\n')
    flax_target._MEMO.clear()
    assert main(["check", ".", "--no-cache", "--diff"]) == 1
    assert "+@nnx.jit(graph=True, graph_updates=True)" in capsys.readouterr().out


def test_a_rewrite_writing_a_newer_name_is_not_offered_on_an_older_flax():
    from nnx_lint.engine.walk import lint_source
    from nnx_lint.fixes.apply import fix_for
    from nnx_lint.fixes.source import SourceIndex
    from nnx_lint.engine.registry import rule_by_code

    rule = rule_by_code("NNX601")
    source = rule.INVALID[0].source
    [diagnostic] = [d for d in lint_source(source, "m.py", [rule]) if d.code == "NNX601"][:1]
    index = SourceIndex(source)
    old = fix_for(diagnostic, index, True, ProjectFlax("0.12.5", "x"))
    assert old.applicability == "display-only" and not old.edits
    assert fix_for(diagnostic, index, True, ProjectFlax("0.12.6", "x")).applicability == "unsafe"
    assert ProjectFlax("0.12.5", "x").why_no_rewrite(rule.rewrites()[0].writes).startswith(
        "`nnx.transform_metadata` exists only from flax 0.12.6 on")


def test_the_installed_flax_is_the_one_importlib_metadata_finds():
    """The direct dist-info lookup agrees with ``importlib.metadata`` on this environment."""
    metadata = pytest.importorskip("importlib.metadata")
    try:
        expected = metadata.version("flax")
    except metadata.PackageNotFoundError:
        expected = None
    found = flax_target.installed_flax(Path("/nonexistent-project-root"))
    assert (found.version if found else None) == (expected and flax_target._canonical(expected))
