"""Hostile repositories, round two (issue 29): writes, false all-clears, reads, output, config.

Each test builds the attack as a committed repository would carry it and runs the real
``nnx-lint`` console script (and flake8 / pylint where they are affected) as a user would,
in a subprocess. Every test also checks that the run still did its job on the honest part
of the repository, so none of them passes by doing nothing.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "docs" / "example" / "train.py"  # a script with safe fixes
FINDING = "from flax import nnx\nx = nnx.StateAxes({nnx.Param: 0})\nf = nnx.vmap(lambda m: m, in_axes=(x,))\n"
SCRIPTS = Path(sys.executable).parent

pytestmark = pytest.mark.skipif(os.name != "posix", reason="symlinks and /dev/zero: POSIX")


def run(tool: str, *args: str, cwd: Path, stdin: bytes | None = None, env: dict | None = None):
    """The installed console script ``tool`` (nnx-lint, flake8, pylint), as a user runs it."""
    environment = {**os.environ, **(env or {})}
    return subprocess.run([str(SCRIPTS / tool), *args], cwd=cwd, capture_output=True, input=stdin,
                          env=environment, timeout=300)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def repo(tmp_path):
    """``tmp_path/repo`` with an empty [tool.nnx-lint] table, and ``tmp_path/outside``."""
    (tmp_path / "repo").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "repo" / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    return tmp_path / "repo"


# --- writes never leave the project root, never go through a symlink -------------------------

@pytest.mark.parametrize("options", [["--fix"], ["--fix", "--unsafe-fixes"], ["--add-noqa"]])
@pytest.mark.slow
def test_edits_do_not_follow_a_committed_symlink_to_a_file_outside(repo, options):
    victim = repo.parent / "outside" / "victim.py"
    shutil.copy(EXAMPLE, victim)
    (repo / "link.py").symlink_to("../outside/victim.py")
    shutil.copy(EXAMPLE, repo / "own.py")
    before, own_before = digest(victim), digest(repo / "own.py")
    result = run("nnx-lint", "check", ".", "--no-cache", "-j1", *options, cwd=repo)
    assert digest(victim) == before, "a file outside the repository was rewritten"
    assert (repo / "link.py").is_symlink()
    assert digest(repo / "own.py") != own_before, "the repository's own file was not edited"
    assert b"link.py" in result.stderr and b"symlink" in result.stderr


@pytest.mark.slow
def test_a_symlinked_directory_named_on_the_command_line_is_not_fixed(repo):
    outside = repo.parent / "outside"
    shutil.copy(EXAMPLE, outside / "victim.py")
    (repo / "pkg").symlink_to("../outside", target_is_directory=True)
    before = digest(outside / "victim.py")
    result = run("nnx-lint", "check", "pkg", "--no-cache", "-j1", "--fix", cwd=repo)
    assert digest(outside / "victim.py") == before
    assert b"resolves outside the project root" in result.stderr


@pytest.mark.slow
def test_a_directory_named_explicitly_outside_the_root_is_fixed(repo):
    outside = repo.parent / "outside"
    shutil.copy(EXAMPLE, outside / "train.py")
    before = digest(outside / "train.py")
    run("nnx-lint", "check", "../outside", "--no-cache", "-j1", "--fix", cwd=repo)
    assert digest(outside / "train.py") != before  # the user asked for it by an outside path


@pytest.mark.slow
def test_write_baseline_does_not_follow_a_symlink_and_file_names_stay_data(repo):
    home = repo.parent / "home"
    home.mkdir()
    (home / ".bashrc").write_text("# my bashrc\n")
    (repo / "x$(cd;touch${IFS}PWNED_BASHRC).py").write_text(FINDING)
    (repo / "nnx-lint-baseline.json").symlink_to(home / ".bashrc")
    result = run("nnx-lint", "check", "--write-baseline", "nnx-lint-baseline.json", "--no-cache", "-j1", cwd=repo)
    assert result.returncode == 2
    assert b"is a symlink: not written" in result.stderr
    assert (home / ".bashrc").read_text() == "# my bashrc\n"
    # The same command on a real file writes it, atomically and with the file's own mode kept.
    (repo / "nnx-lint-baseline.json").unlink()
    (repo / "real.json").write_text("{}")
    os.chmod(repo / "real.json", 0o640)
    result = run("nnx-lint", "check", "--write-baseline", "real.json", "--no-cache", "-j1", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert json.loads((repo / "real.json").read_text())["findings"]
    assert (repo / "real.json").stat().st_mode & 0o777 == 0o640
    assert not [p for p in repo.iterdir() if p.name.endswith(".tmp")]


def test_gate_baseline_write_refuses_a_symlink(repo):
    from nnx_lint.base.confined_writes import WriteScope
    from nnx_lint.gate.baseline import BaselineError, write_baseline

    target = repo.parent / "outside" / "rc"
    target.write_text("keep")
    (repo / "gate-baseline.json").symlink_to(target)
    with pytest.raises(BaselineError, match="symlink"):
        write_baseline(repo / "gate-baseline.json", {"t::x"}, WriteScope.of(repo))
    assert target.read_text() == "keep"


# --- bounded reads ---------------------------------------------------------------------------

def test_a_baseline_linked_to_an_endless_device_is_refused(repo):
    (repo / "m.py").write_text(FINDING)
    (repo / "bl.json").symlink_to("/dev/zero")
    result = run("nnx-lint", "check", ".", "--no-cache", "--baseline", "bl.json", cwd=repo)
    assert result.returncode == 2
    assert b"not a regular file" in result.stderr


def test_stdin_is_read_bounded(monkeypatch):
    import io

    from nnx_lint.base import bounds
    from nnx_lint.frontends.single_file import read_stdin

    monkeypatch.setattr(bounds, "LIMITS", bounds.Limits(source_bytes=10, notebook_bytes=20))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x" * 1000)))
    assert len(read_stdin()) == 21  # one byte over the limit: the engine reports NNX004


def test_a_src_symlink_to_the_root_of_the_file_system_is_no_source_root(repo):
    from nnx_lint.analysis.package_roots import source_roots

    (repo / "src").symlink_to("/", target_is_directory=True)
    (repo / "lib").mkdir()
    assert source_roots(repo, None, {}) == [repo.resolve()]
    assert source_roots(repo, ["lib", "/", "../outside"], {}) == [(repo / "lib").resolve()]


# --- no false all-clear from the pre-filter ------------------------------------------------

EVASIONS = {
    "fullwidth.py": "from flax import nn\uff58 as F\nstate_axes = F.StateAxes({F.Param: None})\n"
                    "f = F.vmap(lambda m, x: m(x), in_axes=(state_axes, 0))\n".encode(),
    "uesc.py": b"# coding: unicode_escape\nfrom flax import \\x6e\\x6ex\n"
               b"state_axes = \\x6e\\x6ex.StateAxes({\\x6e\\x6ex.Param: None})\n"
               b"f = \\x6e\\x6ex.vmap(lambda m, x: m(x), in_axes=(state_axes, 0))\n",
    "utf7.py": b"# coding: utf-7\nfrom flax import +AG4-nx\nstate_axes = +AG4-nx.StateAxes({+AG4-nx.Param: None})\n"
               b"f = +AG4-nx.vmap(lambda m, x: m(x), in_axes=(state_axes, 0))\n",
}


@pytest.fixture
def evasions(repo):
    for name, data in EVASIONS.items():
        (repo / name).write_bytes(data)
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": ["from flax import \\u006enx\n", "a = nnx.StateAxes({nnx.Param: 0})\n",
                       "f = nnx.vmap(lambda m: m, in_axes=(a,))\n"]}
    notebook = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    # The JSON text spells `nnx` only as \\u006e escapes.
    (repo / "escaped.ipynb").write_text(notebook.replace("\\\\u006enx", "\\u006enx").replace("nnx", "\\u006enx"))
    assert b"nnx" not in (repo / "escaped.ipynb").read_bytes()
    return repo


@pytest.mark.slow
def test_the_cli_flags_every_evasion(evasions):
    result = run("nnx-lint", "check", ".", "--no-cache", "-j1", "--output-format", "json", cwd=evasions)
    flagged = {d["filename"] for d in json.loads(result.stdout)}
    assert flagged == {*EVASIONS, "escaped.ipynb"}, result.stderr


@pytest.mark.slow
def test_flake8_and_pylint_flag_every_evasion(evasions):
    names = sorted(EVASIONS)
    flake8 = run("flake8", "--select", "NNX", *names, cwd=evasions)
    assert {line.split(":")[0] for line in flake8.stdout.decode().splitlines()} == set(names), flake8.stderr
    pylint = run("pylint", "--disable=all", "--enable=nnx", "--load-plugins=nnx_lint.pylint",
                 "--output-format=parseable", *names, cwd=evasions)
    assert {line.split(":")[0] for line in pylint.stdout.decode().splitlines() if ": [E9201" in line} == set(names)


def test_files_no_rule_can_match_are_still_skipped(repo):
    (repo / "plain.py").write_text("import os\nprint(os.sep)\n")
    (repo / "binary.py").write_bytes(b"\xff\xfe\x00garbage")
    result = run("nnx-lint", "check", ".", "--no-cache", "-j1", "--output-format", "json", cwd=repo)
    # The rules skip both; the binary file is still diagnosed, as if it named nnx (issue 45).
    assert [(d["filename"], d["code"]) for d in json.loads(result.stdout)] == [("binary.py", "NNX001")]


# --- the cache: a module looked for and not found is a dependency -------------------------

MODELS = ("from flax import nnx\nclass Noisy(nnx.Module):\n    def __init__(self, rngs):\n"
          "        self.rngs = rngs\n        self.linear = nnx.Linear(2, 2, rngs=rngs)\n")
MAIN = ("from flax import nnx\nfrom models import Noisy\nmodel = Noisy(nnx.Rngs(0))\n"
        "grads = nnx.grad(lambda m: 0.0)(model)\n")


@pytest.mark.slow
def test_a_module_that_reappears_makes_the_cached_result_stale(repo, tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    (repo / "main.py").write_text(MAIN)
    first = run("nnx-lint", "check", "main.py", "-j1", cwd=repo, env=env)
    assert first.returncode == 0, first.stdout  # models.py is missing: nothing to say
    (repo / "models.py").write_text(MODELS)  # restored, as on checking out main again
    cached = run("nnx-lint", "check", "main.py", "-j1", cwd=repo, env=env)
    fresh = run("nnx-lint", "check", "main.py", "-j1", "--no-cache", cwd=repo, env=env)
    assert fresh.returncode == 1
    assert cached.stdout == fresh.stdout


@pytest.mark.slow
def test_a_re_export_added_to_an_imported_module_makes_the_cached_result_stale(repo, tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    (repo / "common.py").write_text("VALUE = 1\n")
    (repo / "main.py").write_text("from flax import nnx\nfrom common import Axes\n"
                                  "f = nnx.vmap(lambda m: m, in_axes=(Axes({nnx.Param: 0}),))\n")
    assert run("nnx-lint", "check", "main.py", "-j1", cwd=repo, env=env).returncode == 0
    (repo / "common.py").write_text("from flax.nnx import StateAxes as Axes\n")
    cached = run("nnx-lint", "check", "main.py", "-j1", cwd=repo, env=env)
    assert cached.returncode == 1 and b"NNX201" in cached.stdout


# --- output: nothing from the repository drives the terminal or the CI log ----------------

@pytest.mark.slow
def test_baseline_messages_and_file_names_cannot_forge_workflow_commands(repo):
    (repo / "m.py").write_text(FINDING)
    (repo / "::stop-commands::tok.py").write_text(FINDING)
    forged = {"version": 1, "findings": [{"file": "m.py", "code": "NNX201", "fingerprint": "0", "occurrence": 0,
                                          "message": "ok\n::error file=pyproject.toml,line=1::FORGED\n\x1b[2J"}]}
    (repo / "bl.json").write_text(json.dumps(forged))
    result = run("nnx-lint", "check", ".", "--no-cache", "-j1", "--baseline", "bl.json", "-v",
                 "--output-format", "github", cwd=repo)
    lines = (result.stdout + result.stderr).decode().splitlines()
    assert any("FORGED" in line for line in lines)  # the message is shown, escaped
    assert not [line for line in lines if line.startswith("::error file=pyproject") or "\x1b" in line]
    text = run("nnx-lint", "check", ".", "--no-cache", "-j1", cwd=repo).stdout.decode().splitlines()
    assert "./::stop-commands::tok.py:3:36: NNX201" in "\n".join(text)
    assert not [line for line in text if line.startswith("::")]


# --- the command line's selection wins over the repository's configuration ---------------

@pytest.mark.slow
def test_command_line_selection_overrides_a_silencing_config(repo):
    (repo / "m.py").write_text(FINDING)
    (repo / "pyproject.toml").write_text('[tool.nnx-lint]\nignore = ["NNX"]\n')
    assert run("nnx-lint", "check", ".", "--no-cache", cwd=repo).returncode == 0  # the config's choice
    assert run("nnx-lint", "check", ".", "--no-cache", "--select", "NNX", cwd=repo).returncode == 1


@pytest.mark.slow
def test_isolated_ignores_every_configuration_file(repo):
    (repo / "m.py").write_text(FINDING)
    (repo / "pyproject.toml").write_text('[tool.nnx-lint]\nexclude = ["*"]\nper-file-ignores = {"**" = ["NNX"]}\n')
    assert run("nnx-lint", "check", ".", "--no-cache", cwd=repo).returncode == 0
    assert run("nnx-lint", "check", ".", "--no-cache", "--isolated", cwd=repo).returncode == 1
    assert run("nnx-lint", "check", ".", "--isolated", "--config", "pyproject.toml", cwd=repo).returncode == 2
    flake8 = run("flake8", "--isolated", "--select", "NNX", "m.py", cwd=repo)
    assert b"NNX201" in flake8.stdout


@pytest.mark.slow
def test_the_documented_plugin_commands_run_no_repository_code(repo):
    """flake8's local plugins and pylint's init-hook run code named by the repository; the
    commands docs/security.md gives for untrusted code read none of it, and still lint."""
    marker = repo.parent / "PWNED"
    (repo / "m.py").write_text(FINDING)
    (repo / "evil_plugin.py").write_text(f"open({str(marker)!r}, 'w').close()\nclass P:\n    name = 'p'\n"
                                         "    version = '1'\n    def __init__(self, tree): pass\n"
                                         "    def run(self): return iter(())\n")
    (repo / "setup.cfg").write_text("[flake8:local-plugins]\nextension =\n    X100 = evil_plugin:P\npaths = .\n")
    (repo / ".pylintrc").write_text(f"[MAIN]\ninit-hook=open({str(marker)!r}, 'w').close()\n")
    flake8 = run("flake8", "--isolated", "--select", "NNX", "m.py", cwd=repo)
    pylint = run("pylint", "--rcfile=/dev/null", "--disable=all", "--enable=nnx", "--load-plugins=nnx_lint.pylint",
                 "m.py", cwd=repo)
    assert not marker.exists()
    assert b"NNX201" in flake8.stdout and b"NNX201" in pylint.stdout
    # Without the protection, both run the repository's code (the reason for the advice).
    run("flake8", "--select", "NNX", "m.py", cwd=repo)
    assert marker.exists()
