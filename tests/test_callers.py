"""Parameter classes from callers in other files: the reverse index, its limits, and the cache."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nnx_lint.analysis.callers import CallerIndex, dependency_key, dependency_value, top_directories
from nnx_lint.engine.config import load_settings
from nnx_lint.engine.walk import lint_bytes
from nnx_lint.analysis.project import Project, module_name_for
from nnx_lint.engine.registry import rule_by_code
from nnx_lint.engine.runner import run

MODELS = """\
from flax import nnx


class Policy(nnx.Module):
    def __init__(self, rngs):
        self.fc = nnx.Linear(3, 2, rngs=rngs)
        self.drop = nnx.Dropout(0.1, rngs=rngs)

    def __call__(self, x):
        return self.drop(self.fc(x))


class Plain(nnx.Module):
    def __init__(self, rngs):
        self.fc = nnx.Linear(3, 2, rngs=rngs)

    def __call__(self, x):
        return self.fc(x)
"""
TRAIN = """\
from flax import nnx


def update(policy, x):
    return nnx.grad(lambda p: p(x).mean())(policy)
"""


def _caller(model_class: str, imports: str = "from train import update", call: str = "update") -> str:
    return textwrap.dedent(f"""\
        import jax.numpy as jnp
        from flax import nnx
        from models import {model_class}
        {imports}


        def main():
            return {call}({model_class}(nnx.Rngs(0)), jnp.ones((4, 3)))
        """)


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    (tmp_path / "models.py").write_text(MODELS)
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "main.py").write_text(_caller("Policy"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _nnx401(result) -> list[str]:
    return [d.message for d in result.diagnostics if d.code == "NNX401" and d.path == "train.py"]


def test_a_caller_in_another_file_gives_the_class_and_is_named(project):
    result = run([Path(".")], load_settings(Path(".")), jobs=1)
    found = [d for d in result.diagnostics if d.code == "NNX401"]
    assert [(d.path, d.line) for d in found] == [("train.py", 5)]
    assert "called with `Policy` (call site main.py:8)" in found[0].message
    assert [(r.path, r.line, r.message) for r in found[0].related] == [("main.py", 8, "`Policy` is passed here")]


def test_the_cache_follows_edits_of_callers(project, tmp_path_factory):
    """train.py's result depends on main.py: editing, adding and removing callers re-analyses it."""
    cache = tmp_path_factory.mktemp("cache")

    def lint():
        return run([Path(".")], load_settings(Path(".")), jobs=1, cache_dir=cache)

    assert len(_nnx401(lint())) == 1
    again = lint()
    assert again.files_from_cache == 3 and again.files_analysed == 0 and len(_nnx401(again)) == 1
    (project / "main.py").write_text(_caller("Plain"))  # the caller now passes a class that does not break
    edited = lint()
    assert _nnx401(edited) == [] and edited.files_analysed == 2, "main.py and train.py analysed again"
    (project / "later.py").write_text(_caller("Policy", "import train", "train.update"))  # a new caller
    added = lint()
    assert len(_nnx401(added)) == 1 and "later.py:8" in _nnx401(added)[0]
    (project / "later.py").unlink()
    assert _nnx401(lint()) == []
    assert lint().files_from_cache == 3


def test_several_callers_flag_only_the_class_that_breaks(project):
    (project / "main.py").write_text(_caller("Plain"))
    assert _nnx401(run([Path(".")], load_settings(Path(".")), jobs=1)) == []
    (project / "other.py").write_text(_caller("Policy", "from train import update as step", "step"))
    messages = _nnx401(run([Path(".")], load_settings(Path(".")), jobs=1))
    assert len(messages) == 1 and "`Policy` (call site other.py:8)" in messages[0]


def _lint_train(train: Path, roots: list[Path]):
    project = Project(roots)
    module_name, package_root = module_name_for(train)
    project.start_file(str(train), package_root)
    return lint_bytes(train.read_bytes(), str(train), [rule_by_code("NNX401")], project=project,
                      module_name=module_name), project


def test_callers_outside_the_roots_are_not_read(tmp_path):
    inside, outside = tmp_path / "project", tmp_path / "scripts"
    inside.mkdir(), outside.mkdir()
    (inside / "models.py").write_text(MODELS)
    (inside / "train.py").write_text(TRAIN)
    (outside / "main.py").write_text(_caller("Policy"))
    found, project = _lint_train(inside / "train.py", [inside])
    assert found == []
    assert not any("scripts" in path for path in project.dependencies)
    # The same caller under a root is followed (its import of `train` finds this file).
    found, _ = _lint_train(inside / "train.py", [inside, outside])
    assert [d.code for d in found] == ["NNX401"]


def test_a_caller_whose_import_finds_another_file_does_not_count(tmp_path):
    """Two example folders, each with its own train.py: a caller uses its neighbour."""
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "models.py").write_text(MODELS)
        (tmp_path / folder / "train.py").write_text(TRAIN)
    (tmp_path / "b" / "main.py").write_text(_caller("Policy"))
    found, _ = _lint_train(tmp_path / "a" / "train.py", [tmp_path])
    assert found == []
    found, _ = _lint_train(tmp_path / "b" / "train.py", [tmp_path])
    assert [d.code for d in found] == ["NNX401"]


def test_the_index_keeps_only_files_whose_imports_name_the_module(tmp_path):
    files = {
        "by_name.py": "from pkg.train import update\nupdate(m)\n",
        "by_alias.py": "from pkg.train import update as step\nstep(m)\n",
        "by_module.py": "from . import train\ntrain.update(m)\n",
        "relative.py": "from .train import update\nupdate(m)\n",
        "parenthesised.py": "from pkg import (\n    other,\n    train,\n)\ntrain.update(x)\n",
        "plain_import.py": "import pkg.train as t\nt.update(1)\n",
        "word_only.py": "# train the model\ndef update(): pass\nupdate()\n",
        "import_without_call.py": "from pkg import train\nupdate = train.update\n",
        "another_train.py": "from other.train import update\nupdate(m)\n",
        "another_package.py": "from other import train\ntrain.update(m)\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "inside_venv.py").write_text("from pkg.train import update\n")
    index = CallerIndex(top_directories([tmp_path]))
    found = {Path(path).name for path, _digest in index.candidates("pkg.train", "update")}
    assert found == {"by_name.py", "by_alias.py", "by_module.py", "relative.py", "parenthesised.py", "plain_import.py"}


def test_the_dependency_value_changes_with_any_candidate(tmp_path):
    (tmp_path / "main.py").write_text("from train import update\nupdate(1)\n")
    directories = top_directories([tmp_path])
    key = dependency_key(directories, "train", "update")
    before = dependency_value(key, {})
    assert dependency_value(key, {}) == before
    (tmp_path / "main.py").write_text("from train import update\nupdate(2)\n")
    edited = dependency_value(key, {})
    (tmp_path / "new.py").write_text("import train\ntrain.update(3)\n")
    assert len({before, edited, dependency_value(key, {})}) == 3
    (tmp_path / "unrelated.py").write_text("import other\nother.update(3)\n")
    assert dependency_value(key, {}) == dependency_value(key, {CallerIndex(directories).directories: CallerIndex(directories)})
    assert dependency_value("nnx-lint:callers:not json", {}) == ""


def test_a_function_many_files_call_gets_no_class_from_them(project):
    """A library helper: more candidate files than MAX_CALLER_FILES are not parsed at all."""
    from nnx_lint.analysis.callers import MAX_CALLER_FILES

    for number in range(MAX_CALLER_FILES - 1):  # with main.py (Policy): exactly the limit
        (project / f"caller_{number}.py").write_text(_caller("Plain"))
    assert len(_nnx401(run([Path(".")], load_settings(Path(".")), jobs=1))) == 1
    (project / "one_more.py").write_text(_caller("Plain"))
    assert _nnx401(run([Path(".")], load_settings(Path(".")), jobs=1)) == []


def test_other_rules_name_the_call_that_gives_the_class(tmp_path):
    """NNX103 on a parameter whose class a caller in another file gives: the call is a related location."""
    (tmp_path / "twice.py").write_text("from flax import nnx\n\n\ndef twice(m):\n"
                                       "    return nnx.jit(lambda a, b: None)(m, m)\n")
    (tmp_path / "main.py").write_text("from flax import nnx\nfrom twice import twice\n\n"
                                      "twice(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))\n")
    project = Project([tmp_path])
    project.start_file(str(tmp_path / "twice.py"), tmp_path)
    found = lint_bytes((tmp_path / "twice.py").read_bytes(), str(tmp_path / "twice.py"), [rule_by_code("NNX103")],
                       project=project, module_name="twice")
    assert [(d.code, d.line) for d in found] == [("NNX103", 5)]
    assert [(Path(r.path).name, r.line, r.message) for r in found[0].related] == [("main.py", 4, "`Linear` is passed here")]


def test_a_graph_update_reached_through_another_file_names_every_line_involved(tmp_path):
    """NNX301 at the call that leaves the linted file: the changed line in the class's file,
    the transform, and the caller in a third file that passes the class."""
    (tmp_path / "models.py").write_text(
        "import jax.numpy as jnp\nfrom flax import nnx\n\n\nclass Counter(nnx.Module):\n"
        "    def __init__(self):\n        self.calls = 0\n        self.w = nnx.Param(jnp.ones(2))\n\n"
        "    def __call__(self, x):\n        self.calls += 1\n        return x * self.w\n")
    (tmp_path / "step.py").write_text("from flax import nnx\n\n\n@nnx.jit\ndef step(model, x):\n    return model(x)\n")
    (tmp_path / "main.py").write_text("import jax.numpy as jnp\nfrom models import Counter\nfrom step import step\n\n"
                                      "step(Counter(), jnp.ones(2))\n")
    project = Project([tmp_path])
    project.start_file(str(tmp_path / "step.py"), tmp_path)
    found = lint_bytes((tmp_path / "step.py").read_bytes(), str(tmp_path / "step.py"), [rule_by_code("NNX301")],
                       project=project, module_name="step")
    assert [(d.code, d.line) for d in found] == [("NNX301", 6)]
    assert [(Path(r.path).name, r.line, r.message) for r in found[0].related] == [
        ("models.py", 11, "the flagged code, in `Counter.__call__`"),
        ("step.py", 4, "`nnx.jit` traces `step` here"),
        ("main.py", 5, "`Counter` is passed here"),
    ]


def test_a_warm_run_reuses_the_caller_answers_until_a_file_changes(project, tmp_path_factory, monkeypatch):
    """The answers are kept in the cache directory and reused while the files under the roots are
    unchanged (no import is read again); a change of any file there makes them be recomputed."""
    import os

    from nnx_lint.analysis import callers

    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setattr(callers, "RACY_SECONDS", 0.0)  # the files were just written

    def lint():
        return run([Path(".")], load_settings(Path(".")), jobs=1, cache_dir=cache)

    lint()  # the cold run keeps the answers its analyses computed: the first warm run reads no import
    assert (cache / "callers.json").exists()
    built: list[int] = []
    original_index = callers.CallerIndex._index
    monkeypatch.setattr(callers.CallerIndex, "_index", lambda self: built.append(1) or original_index(self))
    warm = lint()
    assert built == [] and warm.files_from_cache == 3 and len(_nnx401(warm)) == 1
    # the same size, a later modification time: the answers are recomputed from the contents
    main = project / "main.py"
    main.write_text(_caller("Policy").replace("Policy", "Pol1cy"))
    stat = main.stat()
    os.utime(main, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10_000_000))
    changed = lint()
    assert built and _nnx401(changed) == []


def test_a_namespace_portion_inside_a_package_keeps_its_dotted_name(tmp_path, monkeypatch):
    """google/tunix's layout: ``tunix/__init__.py`` but no ``tunix/sft/__init__.py``; the tests
    import ``tunix.sft.train``, the name Python gives it, so their calls reach the trainer."""
    package = tmp_path / "pkg"
    (package / "sft").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sft" / "models.py").write_text(MODELS)
    (package / "sft" / "train.py").write_text(TRAIN.replace("from models import", "from pkg.sft.models import"))
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "train_test.py").write_text(
        _caller("Policy", "from pkg.sft.train import update").replace("from models import", "from pkg.sft.models import"))
    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    monkeypatch.chdir(tmp_path)
    assert module_name_for(package / "sft" / "train.py") == ("pkg.sft.train", tmp_path.resolve())
    assert module_name_for(tmp_path / "tests" / "train_test.py") == ("train_test", (tmp_path / "tests").resolve())
    found = [d for d in run([Path(".")], load_settings(Path(".")), jobs=1).diagnostics if d.code == "NNX401"]
    assert [d.path for d in found] == ["pkg/sft/train.py"]
    # the call site, as messages name it: relative to the project's root (issue 45), not to the
    # flagged file's directory (it was ``../../tests/train_test.py``)
    assert "`Policy` (call site tests/train_test.py:8)" in found[0].message


def test_no_caller_answer_is_kept_while_a_file_just_changed(project, tmp_path_factory, monkeypatch):
    """Two edits within one timestamp tick leave the same sizes and times: answers computed while a file
    under the roots is younger than the racy window are not kept, so the next run computes them again."""
    from nnx_lint.analysis import callers

    cache = tmp_path_factory.mktemp("cache")

    def lint():
        return run([Path(".")], load_settings(Path(".")), jobs=1, cache_dir=cache)

    lint()
    built: list[int] = []
    original_index = callers.CallerIndex._index
    monkeypatch.setattr(callers.CallerIndex, "_index", lambda self: built.append(1) or original_index(self))
    warm = lint()
    assert built and warm.files_from_cache == 3 and len(_nnx401(warm)) == 1
