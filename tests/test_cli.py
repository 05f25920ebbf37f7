"""The nnx-lint command: selection, formats, exit codes, configuration, cache, jobs."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nnx_lint.cli import main

STATE_AXES = "from flax import nnx\nf = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"
METADATA = "from flax import nnx\nf = nnx.vmap(g, transform_metadata={nnx.PARTITION_NAME: 'l'})\n"
COMPAT = "from flax import nnx\nf = nnx.compat.jit(g)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A small project: two findings, one clean file, one file that never mentions flax."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "axes.py").write_text(STATE_AXES)
    (tmp_path / "pkg" / "meta.py").write_text(METADATA)
    (tmp_path / "pkg" / "compat_user.py").write_text(COMPAT)
    (tmp_path / "pkg" / "plain.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *args: str) -> tuple[int, str]:
    code = main(["check", *args])
    return code, capsys.readouterr().out


def test_text_output_and_exit_code(project, capsys):
    code, out = run(capsys, "--no-cache")
    assert code == 1
    assert "pkg/axes.py:2:26: NNX201 " in out
    assert "pkg/meta.py:2:17: NNX601 " in out
    assert "NNX901" not in out, "advisories are off by default"
    assert out.strip().splitlines()[-2].startswith("Found 2 diagnostics in 2 files (1 raises in Tree Mode, 1 silently changes meaning;")
    assert out.strip().splitlines()[-1] == "[*] 2 fixable with the `--fix` option."


def test_clean_run_exits_zero(project, capsys):
    code, out = run(capsys, "pkg/plain.py", "--no-cache")
    assert code == 0 and "All checks passed" in out


def test_exit_zero(project, capsys):
    assert run(capsys, "--no-cache", "--exit-zero")[0] == 0


@pytest.mark.parametrize(
    ("args", "codes"),
    [
        (["--select", "NNX2"], {"NNX201"}),
        (["--select", "NNX601"], {"NNX601"}),
        (["--ignore", "NNX6"], {"NNX201"}),
        (["--select", "NNX", "--ignore", "NNX2,NNX9"], {"NNX601"}),
        (["--extend-select", "NNX9"], {"NNX201", "NNX601", "NNX901"}),
        (["--select", "NNX"], {"NNX201", "NNX601", "NNX901"}),
        (["--select", "NNX201", "--ignore", "NNX2"], {"NNX201"}),
    ],
)
def test_selection(project, capsys, args, codes):
    _, out = run(capsys, "--no-cache", "--output-format", "json", *args)
    assert {d["code"] for d in json.loads(out)} == codes


def test_unknown_selector_is_a_usage_error(project, capsys):
    assert main(["check", "--select", "NNX8"]) == 2
    assert "unknown rule selector" in capsys.readouterr().err


def test_missing_path_is_a_usage_error(project, capsys):
    assert main(["check", "nowhere"]) == 2


def test_json_has_ruffs_keys_plus_ours(project, capsys):
    _, out = run(capsys, "--no-cache", "--output-format", "json", "pkg/axes.py")
    (item,) = json.loads(out)
    assert {"code", "message", "filename", "location", "end_location", "url", "symbol", "kind", "facts"} <= set(item)
    assert item["location"] == {"row": 2, "column": 26}
    assert item["facts"]["transform"] == "vmap" and item["facts"]["argument"] == "in_axes"


def test_github_format(project, capsys):
    _, out = run(capsys, "--no-cache", "--output-format", "github", "pkg/axes.py")
    assert out.startswith("::error title=NNX201 state-axes-prefix,file=pkg/axes.py,line=2,col=26,endLine=2,endColumn=49::")


def test_pyproject_configuration(project, capsys):
    (project / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.nnx-lint]
        extend-select = ["NNX9"]
        exclude = ["pkg/meta.py"]
        per-file-ignores = { "pkg/axes.py" = ["NNX201"] }
    """))
    _, out = run(capsys, "--no-cache", "--output-format", "json")
    assert {(Path(d["filename"]).name, d["code"]) for d in json.loads(out)} == {("compat_user.py", "NNX901")}
    # CLI flags override the file.
    _, out = run(capsys, "--no-cache", "--output-format", "json", "--select", "NNX6")
    assert json.loads(out) == []


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("[tool.nnx-lint]\nselekt = ['NNX2']\n", "unknown key"),
        ("[tool.nnx-lint]\nselect = 'NNX2\n", "invalid TOML"),
        ("[tool.nnx-lint]\nselect = [2]\n", "must be a list of strings"),
        ("[tool.nnx-lint]\nignore = ['XYZ']\n", "unknown rule selector"),
    ],
)
def test_invalid_configuration_exits_2(project, capsys, config, message):
    (project / "pyproject.toml").write_text(config)
    assert main(["check", "--no-cache"]) == 2
    assert message in capsys.readouterr().err


def test_default_excludes_skip_virtualenvs_and_git(project, capsys):
    for folder in (".git", ".venv", "build"):
        (project / folder).mkdir()
        (project / folder / "x.py").write_text(STATE_AXES)
    (project / "custom_env").mkdir()
    (project / "custom_env" / "pyvenv.cfg").write_text("")
    (project / "custom_env" / "x.py").write_text(STATE_AXES)
    _, out = run(capsys, "--no-cache", "--output-format", "json")
    assert all(d["filename"].startswith("pkg") for d in json.loads(out))


def test_cache_is_used_and_invalidated(project, capsys, private_user_cache):
    from nnx_lint.engine import runner
    from nnx_lint.base.cache_store import default_cache_dir

    settings_args = ["--output-format", "json"]
    first = run(capsys, *settings_args)[1]
    cache_dir = default_cache_dir(project)
    assert (cache_dir / "results.json").exists() and cache_dir.is_relative_to(private_user_cache)
    assert not (project / ".nnx_lint_cache").exists(), "nothing is written into the project"
    result = runner.run([Path(".")], __import__("nnx_lint.engine.config", fromlist=["x"]).load_settings(Path(".")),
                        cache_dir=cache_dir)
    assert result.files_from_cache == 3 and result.files_analysed == 0
    assert json.loads(run(capsys, *settings_args)[1]) == json.loads(first)
    (project / "pkg" / "axes.py").write_text("from flax import nnx\n")
    assert {d["code"] for d in json.loads(run(capsys, *settings_args)[1])} == {"NNX601"}


def test_cross_file_dependency_invalidates_cache(tmp_path, monkeypatch, capsys):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "common.py").write_text("from flax import nnx\nAxes = nnx.StateAxes\n")
    (package / "user.py").write_text("from flax import nnx\nfrom .common import Axes\nf = nnx.vmap(g, in_axes=(Axes({...: 0}),))\n")
    monkeypatch.chdir(tmp_path)
    assert {d["code"] for d in json.loads(run(capsys, "--output-format", "json")[1])} == {"NNX201"}
    (package / "common.py").write_text("from flax import nnx\nAxes = dict\n")
    assert json.loads(run(capsys, "--output-format", "json")[1]) == []


def test_corrupt_cache_never_breaks_a_run(project, capsys):
    from nnx_lint.base.cache_store import default_cache_dir

    default_cache_dir(project).mkdir(parents=True)
    (default_cache_dir(project) / "results.json").write_bytes(b"not a cache")
    assert main(["check"]) == 1
    captured = capsys.readouterr()
    assert "NNX201" in captured.out
    assert "ignoring cache" in captured.err and len(captured.err.splitlines()) == 1
    # The next run rewrote a good cache.
    assert main(["check"]) == 1 and "ignoring" not in capsys.readouterr().err


@pytest.mark.slow
def test_parallel_jobs_match_serial(project, capsys):
    for i in range(8):
        (project / "pkg" / f"copy{i}.py").write_text(STATE_AXES)
    serial = json.loads(run(capsys, "--no-cache", "-j", "1", "--output-format", "json")[1])
    parallel = json.loads(run(capsys, "--no-cache", "-j", "2", "--output-format", "json")[1])
    assert serial == parallel and len(serial) == 10


def test_rule_and_rules_commands(capsys):
    assert main(["rule", "NNX201"]) == 0
    page = capsys.readouterr().out
    assert page.startswith("# NNX201 `state-axes-prefix`") and "## Use instead" in page
    assert main(["rule", "transform-metadata-keyword"]) == 0
    assert "NNX601" in capsys.readouterr().out
    assert main(["rule", "NNX999"]) == 2
    assert main(["rules"]) == 0
    assert "NNX901  graph-mode-opt-in" in capsys.readouterr().out


@pytest.mark.slow
def test_console_script_end_to_end(project):
    executable = shutil.which("nnx-lint")
    command = [executable] if executable else [sys.executable, "-m", "nnx_lint.cli"]
    result = subprocess.run([*command, "check", "pkg", "--no-cache"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "NNX201" in result.stdout


def test_sarif_output(project, capsys):
    _, out = run(capsys, "--no-cache", "--output-format", "sarif")
    document = json.loads(out)
    assert document["version"] == "2.1.0"
    (sarif_run,) = document["runs"]
    assert [r["id"] for r in sarif_run["tool"]["driver"]["rules"]] == ["NNX201", "NNX601"]
    result = next(r for r in sarif_run["results"] if r["ruleId"] == "NNX201")
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (2, 26)
    assert result["level"] == "error" and result["properties"]["kind"] == "raises"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pkg/axes.py"


def _notebook(cells: list[tuple[str, str]]) -> str:
    return json.dumps({
        "cells": [{"cell_type": kind, "source": source.splitlines(keepends=True), "metadata": {}}
                  for kind, source in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    })


def test_notebooks_are_linted_cell_by_cell(project, capsys):
    (project / "explore.ipynb").write_text(_notebook([
        ("markdown", "# nnx.StateAxes({...: 0}) in prose stays silent"),
        ("code", "%pip install flax\nfrom flax import nnx"),
        ("code", "!ls\naxes = nnx.StateAxes({nnx.Param: 0, ...: None})\nf = nnx.vmap(g, in_axes=(axes, None))\n"),
        ("code", "%%time\nnnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))"),
    ]))
    code, out = run(capsys, "explore.ipynb", "--no-cache")
    assert code == 1
    assert "explore.ipynb:cell 3:3:26: NNX201 " in out, out
    assert out.count("NNX201") == 1, "a %%cell magic's body is not Python"
    _, out = run(capsys, "--no-cache", "--output-format", "json")
    notebook_items = [d for d in json.loads(out) if d["filename"].endswith(".ipynb")]
    assert [(d["cell"], d["location"]["row"]) for d in notebook_items] == [(3, 3)]


def test_an_indented_magic_keeps_its_block(project, capsys):
    """Colab notebooks install packages under `if IN_COLAB:`: the magic is the block's only
    statement, and the cell must still parse (flax's examples/mnist/mnist.ipynb)."""
    (project / "colab.ipynb").write_text(_notebook([
        ("code", "IN_COLAB = True\nif IN_COLAB:\n  !pip install flax\n  %cd /content\nhere = %pwd\nfiles, = !ls"),
        ("code", "from flax import nnx\nf = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))"),
        ("code", "%%time\nfor epoch in range(3):\n    if epoch:\n        print(epoch)"),
    ]))
    code, out = run(capsys, "colab.ipynb", "--no-cache")
    assert code == 1 and "NNX002" not in out
    assert "colab.ipynb:cell 2:2:26: NNX201 " in out, out


def test_broken_notebook_is_reported(project, capsys):
    (project / "broken.ipynb").write_text('{"cells": [nnx')
    code, out = run(capsys, "broken.ipynb", "--no-cache")
    assert code == 1 and "NNX001 cannot read notebook" in out


@pytest.mark.slow
def test_statistics(project, capsys):
    for i in range(2):
        (project / "pkg" / f"more{i}.py").write_text(STATE_AXES)
    code, out = run(capsys, "--no-cache", "--statistics")
    lines = out.strip().splitlines()
    assert code == 1
    assert lines[0] == "3  NNX201  raises   state-axes-prefix (3 files)"
    assert lines[1] == "1  NNX601  silent   transform-metadata-keyword (1 file)"
    _, out = run(capsys, "--no-cache", "--statistics", "--output-format", "json")
    assert json.loads(out)[0] == {"code": "NNX201", "count": 3, "symbol": "state-axes-prefix", "kind": "raises", "files": 3}


@pytest.mark.slow
def test_notebook_class_redefinitions_resolve_per_cell(project, capsys):
    (project / "redefine.ipynb").write_text(_notebook([
        ("code", "import jax.numpy as jnp\nfrom flax import nnx"),
        ("code", "class Foo(nnx.Module, pytree=False):\n    def __init__(self):\n        self.w = nnx.Param(jnp.ones(2))\n"
                 "foo = Foo()\nnnx.state(foo)"),
        ("code", "class Foo(nnx.Object):\n    def __init__(self):\n        self.w = nnx.Param(jnp.ones(2))\n"
                 "foo2 = Foo()\nnnx.state(foo2)"),
    ]))
    _, out = run(capsys, "redefine.ipynb", "--no-cache", "--select", "NNX704", "--output-format", "json")
    messages = {(d["cell"], d["location"]["row"]): d["message"] for d in json.loads(out)}
    assert "declared with pytree=False" in messages[(2, 5)]
    assert "nnx.Object subclass" in messages[(3, 5)]


@pytest.mark.slow
def test_json_is_the_same_bytes_cold_and_warm(project, capsys, private_user_cache):
    """A cached finding's facts come back from the signed cache in key order; the report prints them
    in key order either way, so a warm run's JSON is byte for byte the cold run's."""
    cold = run(capsys, "--output-format", "json")[1]
    warm = run(capsys, "--output-format", "json")[1]
    assert json.loads(cold) and any(len(d["facts"]) > 1 for d in json.loads(cold))
    assert warm == cold
