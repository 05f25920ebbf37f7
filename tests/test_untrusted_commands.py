"""The documented untrusted-PR commands hold against a hostile checkout (issue 44, c2).

docs/security.md gives one command per front-end for pull requests nnx-lint cannot trust, and
docs/github-actions.md the gate's.
:func:`test_each_documented_untrusted_command_reports_the_break` reads them from the page and
runs each one *as written*, in a shell, against a git checkout whose every configuration
file tries to silence it: ``exclude = ["*"]`` and ``ignore = ["NNX"]`` in ``[tool.nnx-lint]``,
flake8 and pylint settings that deselect NNX, a ``.gitignore`` of ``*.py`` and a decoy module
beside the package Python imports. Each must still report both breaks and exit non-zero.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nnx_lint.engine.config import ConfigError
from nnx_lint.engine.file_config import ISOLATED_VARIABLE, rules_for, settings_for_file

#: Runs other programs end to end (see CONTRIBUTING.md): outside the quick loop.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = Path(sys.executable).parent
STATE_AXES = "from flax import nnx\nx = nnx.StateAxes({nnx.Param: 0})\nf = nnx.vmap(lambda m: m, in_axes=(x,))\n"
BREAKING = ("from flax import nnx\nclass Noisy(nnx.Module):\n    def __init__(self, rngs):\n"
            "        self.rngs = rngs\n        self.linear = nnx.Linear(2, 2, rngs=rngs)\n")
DECOY = ("from flax import nnx\nclass Noisy(nnx.Module):\n    def __init__(self, rngs):\n"
         "        self.linear = nnx.Linear(2, 2, rngs=rngs)\n")
MAIN = "from flax import nnx\nfrom models import Noisy\nmodel = Noisy(nnx.Rngs(0))\ngrads = nnx.grad(lambda m: 0.0)(model)\n"
SILENCING_TABLE = '[tool.nnx-lint]\nexclude = ["*"]\nignore = ["NNX"]\nper-file-ignores = {"**" = ["NNX"]}\n'

#: Every configuration file a pull request can commit to silence one front-end or another.
HOSTILE_FILES = {
    "pyproject.toml": SILENCING_TABLE + '\n[tool.pylint.main]\ndisable = ["all"]\n',
    "setup.cfg": "[flake8]\nextend-ignore = NNX\nselect = E9\n\n[tool:nnx-lint]\nignore = NNX\n",
    "tox.ini": "[flake8]\nextend-ignore = NNX\n",
    ".flake8": "[flake8]\nextend-ignore = NNX\nexclude = *\n",
    ".pylintrc": "[MAIN]\ndisable=all\nignore-patterns=.*\n",
    ".gitignore": "*.py\n",
    "model.py": STATE_AXES,
    "models.py": DECOY,
    "models/__init__.py": BREAKING,
    "main.py": MAIN,
    "sub/pyproject.toml": SILENCING_TABLE,
    "sub/deep.py": STATE_AXES,
}


#: Where the documentation gives commands for untrusted pull requests: (page, section heading).
UNTRUSTED_SECTIONS = [("docs/security.md", "## How to run it on untrusted code"),
                      ("docs/github-actions.md", "## Pull requests you do not trust")]


def documented_commands() -> list[str]:
    """The ``$ `` lines of the console block in each section of :data:`UNTRUSTED_SECTIONS` (marked not-run
    for the docs test, since this test runs them)."""
    commands = []
    for page, heading in UNTRUSTED_SECTIONS:
        text = (REPO / page).read_text()
        assert heading in text, f"{page} lost its section {heading!r}"
        section = text.split(heading, 1)[1].split("\n## ", 1)[0]
        block = re.search(r"```console\n(.*?)\n *```", section, re.S)
        assert block is not None, f"{page} lost its block of untrusted-PR commands"
        commands += [line.strip()[2:] for line in block.group(1).splitlines() if line.strip().startswith("$ ")]
    return commands


def hostile_checkout(root: Path) -> Path:
    for name, text in HOSTILE_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    if shutil.which("git"):
        git = ["git", "-c", "user.email=a@b", "-c", "user.name=a"]
        subprocess.run([*git, "init", "-q", "."], cwd=root, check=True)
        subprocess.run([*git, "add", "-f", *HOSTILE_FILES], cwd=root, check=True)
        subprocess.run([*git, "commit", "-qm", "pr"], cwd=root, check=True)
    return root


def test_the_documentation_gives_one_command_per_front_end():
    commands = documented_commands()
    assert [command.split()[0] for command in commands] == ["nnx-lint", "flake8", "pylint", "nnx-lint"]
    assert all("--isolated" in command or "--nnx-isolated=y" in command for command in commands)


@pytest.mark.skipif(os.name != "posix", reason="the commands are POSIX shell lines (/dev/null)")
@pytest.mark.parametrize("command", documented_commands(), ids=lambda c: " ".join(c.split()[:3]))
def test_each_documented_untrusted_command_reports_the_break(tmp_path, command):
    checkout = hostile_checkout(tmp_path / "checkout")
    environment = {**os.environ, "PATH": f"{SCRIPTS}{os.pathsep}{os.environ.get('PATH', '')}"}
    environment.pop(ISOLATED_VARIABLE, None)
    result = subprocess.run(command, shell=True, cwd=checkout, capture_output=True, text=True, timeout=600,
                            env=environment)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    for file in ("model.py", "main.py", "deep.py"):  # the StateAxes prefix and the package's Rngs attribute
        assert any(file in line and ("NNX" in line or "E9" in line) for line in output.splitlines()), output


def run_pylint(directory: Path, *options: str, env: dict | None = None,
               files: tuple[str, ...] = ("model.py",)) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPTS / "pylint"), "--disable=all", "--enable=nnx", "--load-plugins=nnx_lint.pylint",
                           *options, *files], cwd=directory, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


#: Committed tables that silence the plugin when it reads them.
SILENCING_TABLES = [
    '[tool.nnx-lint]\nexclude = ["*"]\n',
    '[tool.nnx-lint]\nignore = ["NNX"]\n',
    '[tool.nnx-lint]\nselect = []\n',
    '[tool.nnx-lint]\nper-file-ignores = {"model.py" = ["NNX2"]}\n',
]
#: The plugin's isolated mode, as the documentation spells it.
ISOLATING_OPTIONS = (("--rcfile=/dev/null",), ("--rcfile", os.devnull), ("--nnx-isolated=y",))


@pytest.fixture(scope="module")
def silenced_folders(tmp_path_factory) -> Path:
    """A folder per table of :data:`SILENCING_TABLES` (``t0``, ``t1``, ...), each with its
    ``pyproject.toml`` and a ``model.py`` with an NNX201."""
    root = tmp_path_factory.mktemp("tables")
    for number, table in enumerate(SILENCING_TABLES):
        (root / f"t{number}").mkdir()
        (root / f"t{number}" / "model.py").write_text(STATE_AXES)
        (root / f"t{number}" / "pyproject.toml").write_text(table)
    return root


@pytest.fixture(scope="module")
def isolated_runs(silenced_folders) -> dict[tuple[str, ...], subprocess.CompletedProcess]:
    """One pylint run per isolating option over every table's ``model.py`` at once (the plugin
    resolves each file's settings on its own, so one run answers for each table, and a table
    read for one file cannot leak to the next): three runs where a run per table and option
    would be twelve."""
    files = tuple(f"t{number}/model.py" for number in range(len(SILENCING_TABLES)))
    return {options: run_pylint(silenced_folders, *options, "--msg-template={path}: {msg_id}", files=files)
            for options in ISOLATING_OPTIONS}


@pytest.mark.parametrize("number", range(len(SILENCING_TABLES)), ids=SILENCING_TABLES)
def test_the_pylint_plugin_isolated_mode_reads_no_table(silenced_folders, isolated_runs, number):
    """The round-three reproducer and its variants: the committed table silences the plugin
    only outside the isolated mode (the control shows it does silence it there)."""
    folder = silenced_folders / f"t{number}"
    assert "E9201" not in run_pylint(folder, f"--rcfile={folder / 'pyproject.toml'}").stdout
    for options, result in isolated_runs.items():
        reported = f"t{number}/model.py: E9201" in result.stdout.splitlines()
        assert reported and result.returncode != 0, (options, result.stdout, result.stderr)


def test_the_isolated_mode_refuses_a_configuration_file(tmp_path):
    (tmp_path / "model.py").write_text(STATE_AXES)
    (tmp_path / "trusted.toml").write_text("[tool.nnx-lint]\n")
    result = run_pylint(tmp_path, "--rcfile=/dev/null", "--nnx-isolated=y", "--nnx-config=trusted.toml")
    assert "nnx-config-error" in result.stdout and "isolated" in result.stdout, result.stdout
    # --rcfile=/dev/null alone isolates only while no trusted table is named: that one is read.
    (tmp_path / "trusted.toml").write_text('[tool.nnx-lint]\nignore = ["NNX201"]\n')
    assert "E9201" not in run_pylint(tmp_path, "--rcfile=/dev/null", "--nnx-config=trusted.toml").stdout
    flake8 = subprocess.run([str(SCRIPTS / "flake8"), "--isolated", "--select", "NNX", "--nnx-config=trusted.toml",
                             "model.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert flake8.returncode != 0 and "--isolated" in flake8.stdout + flake8.stderr


def test_the_environment_variable_isolates_every_front_end(tmp_path, monkeypatch):
    """``NNX_LINT_ISOLATED=1``: the CLI, flake8 and pylint (without their own flags) and the
    settings every front-end asks for, the language server's included, read no table."""
    (tmp_path / "model.py").write_text(STATE_AXES)
    (tmp_path / "pyproject.toml").write_text('[tool.nnx-lint]\nexclude = ["*"]\nignore = ["NNX"]\n')
    env = {**os.environ, ISOLATED_VARIABLE: "1"}
    commands = [[str(SCRIPTS / "nnx-lint"), "check", ".", "--no-cache", "-j1"],
                [str(SCRIPTS / "flake8"), "--select", "NNX", "model.py"],
                [str(SCRIPTS / "pylint"), "--disable=all", "--enable=nnx", "--load-plugins=nnx_lint.pylint",
                 f"--rcfile={tmp_path / 'pyproject.toml'}", "model.py"]]
    for command in commands:
        without = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                                 env={k: v for k, v in env.items() if k != ISOLATED_VARIABLE})
        isolated = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
        assert without.returncode == 0, (command, without.stdout)  # the table silences it otherwise
        assert isolated.returncode != 0 and "NNX201" in isolated.stdout, (command, isolated.stdout)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(ISOLATED_VARIABLE, "1")
    settings = settings_for_file(tmp_path / "model.py")
    assert "NNX201" in {rule.code for rule in rules_for(settings, tmp_path / "model.py")}
    with pytest.raises(ConfigError):
        settings_for_file(tmp_path / "model.py", tmp_path / "pyproject.toml")
