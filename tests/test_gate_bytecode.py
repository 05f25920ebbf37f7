"""What the gate's runs compile and import once instead of in every process (issue 27: the gate's
overhead on a small suite is at most 2x the two plain runs; ``bench/bench_gate.py`` measures it).

- ``nnx_lint.gate.bytecode``: the first full run reads the installation's bytecode; the later
  runs use a private prefix seeded with links to it, which Python uses as it is and replaces
  (never writes through) when stale.
- ``nnx_lint.gate.warm``: the warm servers import what pytest's start imported in the first run
  (an auto-loaded plugin's dependencies), but not the plugins pytest rewrites, not nnx-lint's own
  modules and not the project's.
"""
from __future__ import annotations

import json
import os
import py_compile
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from nnx_lint.gate import bytecode
from nnx_lint.gate.bytecode import installation_has_bytecode, private_cache, seed_private_cache
from nnx_lint.gate.warm import write_preload

TAG = sys.implementation.cache_tag


def _package(root: Path, name: str = "witness", *, compiled: bool = True) -> Path:
    package = root / name
    package.mkdir(parents=True)
    source = package / "__init__.py"
    source.write_text("VALUE = 1\n")
    if compiled:
        py_compile.compile(str(source), cfile=str(package / "__pycache__" / f"__init__.{TAG}.pyc"), doraise=True)
    return source


def test_installation_bytecode_is_read_from_the_header_without_importing(tmp_path):
    source = _package(tmp_path)
    assert installation_has_bytecode(("witness",), [str(tmp_path)])
    assert "witness" not in sys.modules
    assert not installation_has_bytecode(("witness", "not_installed_anywhere"), [str(tmp_path)])
    source.write_text("VALUE = 22\n")  # the size no longer matches: stale
    assert not installation_has_bytecode(("witness",), [str(tmp_path)])
    _package(tmp_path / "other", compiled=False)
    assert not installation_has_bytecode(("witness",), [str(tmp_path / "other")])


def _run_with_prefix(prefix: Path, search: Path, code: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPYCACHEPREFIX": str(prefix), "PYTHONPATH": str(search)}
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    return subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=60)


def test_a_seeded_link_is_used_as_is_and_a_stale_one_is_replaced_not_written_through(tmp_path, monkeypatch):
    installation = tmp_path / "site"
    fresh, stale = _package(installation, "fresh"), _package(installation, "stale")
    stale_target = stale.parent / "__pycache__" / f"__init__.{TAG}.pyc"
    time.sleep(0.01)
    stale.write_text("VALUE = 333\n")  # compiled before this edit
    before = stale_target.read_bytes()
    project = tmp_path / "project"
    project_module = _package(project, "local")
    monkeypatch.setattr(bytecode, "_installed_roots", lambda: [str(installation) + os.sep])
    workdir = tmp_path / "gate"
    workdir.mkdir()
    unplain = str(installation / "fresh" / ".." / "stale" / "__init__.py")
    made = seed_private_cache(workdir, [str(fresh), str(stale), str(project_module), unplain, "relative.py"], TAG)
    cache = private_cache(workdir)
    link = cache / str(fresh.parent).lstrip(os.sep) / f"__init__.{TAG}.pyc"
    stale_link = cache / str(stale.parent).lstrip(os.sep) / f"__init__.{TAG}.pyc"
    assert made == 2 and link.is_symlink() and stale_link.is_symlink()
    assert not (cache / str(project_module.parent).lstrip(os.sep)).exists(), "the project's modules are not linked"

    done = _run_with_prefix(cache, installation, "import fresh, stale; print(fresh.VALUE, stale.VALUE)")
    assert done.stdout.split() == ["1", "333"], done.stderr
    assert link.is_symlink(), "an up-to-date link is loaded, not compiled again"
    assert not stale_link.is_symlink() and stale_link.is_file(), "a stale link is replaced by the compiled file"
    assert stale_target.read_bytes() == before, "the installation's bytecode is never written through a link"


def test_seeding_is_bounded_and_ignores_a_strange_cache_tag(tmp_path, monkeypatch):
    installation = tmp_path / "site"
    sources = [_package(installation, f"m{index}") for index in range(5)]
    monkeypatch.setattr(bytecode, "_installed_roots", lambda: [str(installation) + os.sep])
    monkeypatch.setattr(bytecode, "MAX_LINKS", 3)
    workdir = tmp_path / "gate"
    workdir.mkdir()
    assert seed_private_cache(workdir, [str(source) for source in sources], TAG) == 3
    assert seed_private_cache(workdir, [str(source) for source in sources], "../../x") == 0


def test_the_preload_list_leaves_out_the_project_nnx_lint_and_non_names(tmp_path):
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    startup = [("json", "/usr/lib/python3/json/__init__.py"), ("__main__", ""), ("nnx_lint.gate.pytest_plugin", ""),
               ("nnx_lint", ""), ("pkg.helpers", str(project / "pkg" / "helpers.py")), ("os.path; import x", ""),
               ("lsprotocol.types", "/site/lsprotocol/types.py"), ("sys", "")]
    path = write_preload(tmp_path, startup, project)
    assert json.loads(path.read_text()) == ["json", "lsprotocol.types", "sys"]


#: A plugin outside the project that imports a module pytest itself never imports: the first run
#: notes that module as imported at pytest's start, the warm servers import it, and every re-run
#: logs whether it was already there when pytest loaded the plugin (it is, when preloaded).
PLUGIN = textwrap.dedent("""\
    import os
    import sys

    PRELOADED = "colorsys" in sys.modules
    import colorsys  # noqa: E402,F401


    def pytest_runtest_call(item):
        with open(os.environ["PRELOAD_LOG"], "a") as log:
            log.write(f"{os.getpid()} {item.name} {int(PRELOADED)}\\n")
    """)
PROJECT = {
    "pytest.ini": "[pytest]\npython_files = check_*.py\n",
    "check_two.py": textwrap.dedent("""\
        import os


        def test_one():
            if os.environ["NNX_GRAPH_MODE"] == "false":
                raise ValueError("does not support Variable aliasing")


        def test_two():
            if os.environ["NNX_GRAPH_MODE"] == "false":
                raise ValueError("does not support Variable aliasing")
        """),
}


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "no-warm-reruns"])
@pytest.mark.slow
def test_warm_reruns_start_with_the_plugins_dependencies_already_imported(tmp_path, warm):
    project, plugins, log = tmp_path / "project", tmp_path / "plugins", tmp_path / "log"
    project.mkdir()
    plugins.mkdir()
    for name, text in PROJECT.items():
        (project / name).write_text(text)
    (plugins / "preload_probe.py").write_text(PLUGIN)
    # -W error: a plugin imported outside pytest would make pytest warn that it cannot rewrite it.
    command = [sys.executable, "-m", "pytest", "-p", "preload_probe", "-W", "error::pytest.PytestAssertRewriteWarning"]
    done = subprocess.run([sys.executable, "-m", "nnx_lint.cli", "gate", ".", "--output-format", "json",
                           *([] if warm else ["--no-warm-reruns"]), "--", *command],
                          cwd=project, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PRELOAD_LOG": str(log), "PYTHONPATH": str(plugins)})
    report = json.loads(done.stdout)
    assert sorted(item["nodeid"] for item in report["tree_breaks"]) == ["check_two.py::test_one",
                                                                        "check_two.py::test_two"], done.stderr
    assert report["summary"]["reruns"] == 4 and report["summary"]["warm_reruns"] == (4 if warm else 0)
    per_process: dict[str, list[str]] = {}
    for line in log.read_text().splitlines():
        pid, _name, preloaded = line.split()
        per_process.setdefault(pid, []).append(preloaded)
    reruns = [marks[0] for marks in per_process.values() if len(marks) == 1]
    full_runs = [marks[0] for marks in per_process.values() if len(marks) == 2]
    assert full_runs == ["0", "0"], "a full run starts from a fresh interpreter"
    assert reruns == (["1"] * 4 if warm else ["0"] * 4)
