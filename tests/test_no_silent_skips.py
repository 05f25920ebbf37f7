"""No silent skips (issue 45): a file that cannot be read or parsed is reported, by every
documented command, whatever it mentions.

- ``nnx-lint check`` (and the pre-commit hook, which runs it on the staged files): the text
  pre-filter skips the rules for a file that never names ``nnx``, never the diagnosis of the
  file itself, so a binary ``.py``, a malformed notebook or a syntax error gets the same
  NNX001/NNX002 whether it mentions ``nnx`` or not, on a warm run too;
- flake8's documented command, ``flake8 --select NNX,E9``: flake8 parses a file before any plugin
  sees it, so a file it cannot parse is its own E999 (never also NNX002), including syntax newer
  than the Python flake8 runs on, which ``nnx-lint check`` still analyses;
- pylint's documented command reports its own ``syntax-error`` (E0001) for such a file.
"""
from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from _support import REPO

CONSOLE_SCRIPT = str(Path(sys.executable).with_name("nnx-lint"))
#: The defects, each with the code nnx-lint gives it; every one is written twice, once
#: naming ``nnx`` in a comment and once not.
DEFECTS = {
    "binary.py": (b"\x00\x01\x02\xff\xfe binary\n", "NNX001"),
    "latin.py": (b'label = "caf\xe9"\n', "NNX001"),  # not UTF-8, and no coding cookie
    "unclosed.py": (b"total = (1 +\n", "NNX002"),
    "broken.ipynb": (b'{"cells": [', "NNX001"),
    "bad_cell.ipynb": (json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "source": ["def f(:\n"],
                                              "outputs": [], "execution_count": None}],
                                   "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode(), "NNX002"),
}


def _mentioning(name: str, data: bytes) -> tuple[str, bytes]:
    stem, _, suffix = name.rpartition(".")
    if suffix == "ipynb":
        text = data.decode()
        mentioned = text.replace('"metadata": {}, "nbformat"', '"metadata": {"about": "flax nnx"}, "nbformat"')
        if mentioned == text:  # not JSON at all: the name anywhere in the bytes
            mentioned = text + " nnx"
        return f"{stem}_nnx.{suffix}", mentioned.encode()
    return f"{stem}_nnx.{suffix}", b"# from flax import nnx\n" + data


def _project(root: Path) -> Path:
    (root / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    (root / "clean.py").write_text("x = 1\n")
    for name, (data, _code) in DEFECTS.items():
        (root / name).write_bytes(data)
        mentioning, mentioned = _mentioning(name, data)
        (root / mentioning).write_bytes(mentioned)
    return root


def _codes_by_file(done: subprocess.CompletedProcess) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for diagnostic in json.loads(done.stdout):
        found.setdefault(Path(diagnostic["filename"]).name, []).append(diagnostic["code"])
    return found


def test_check_reports_an_unreadable_or_unparsable_file_whether_or_not_it_mentions_nnx(tmp_path):
    root = _project(tmp_path)
    expected = {}
    for name, (data, code) in DEFECTS.items():
        expected[name] = [code]
        expected[_mentioning(name, data)[0]] = [code]
    command = [CONSOLE_SCRIPT, "check", "--output-format", "json", "--cache-dir", str(tmp_path / "cache"), "."]
    cold = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=600)
    assert cold.returncode == 1, cold.stderr
    assert _codes_by_file(cold) == expected
    warm = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=600)
    assert _codes_by_file(warm) == expected  # the stamps keep the verdict: nothing is dropped when warm


def test_the_pre_commit_hooks_command_reports_them_on_the_staged_files(tmp_path):
    root = _project(tmp_path)
    hook, = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    entry = shlex.split(hook["entry"])
    assert entry[0] == "nnx-lint"
    staged = ["clean.py", "binary.py", "unclosed.py", "broken.ipynb"]  # pre-commit names each staged file
    done = subprocess.run([CONSOLE_SCRIPT, *entry[1:], *staged], cwd=root, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    for name, code in (("binary.py", "NNX001"), ("unclosed.py", "NNX002"), ("broken.ipynb", "NNX001")):
        assert any(line.startswith(f"{name}:") and f" {code} " in line for line in done.stdout.splitlines()), \
            done.stdout


def _documented(tool: str) -> list[str]:
    """The README's command for ``tool`` run on a directory (its first word through the options)."""
    readme = (REPO / "README.md").read_text()
    for line in readme.splitlines():
        if line.startswith(f"$ {tool} --select") and line.endswith(" docs/example"):
            return shlex.split(line[2:])[:-1]
    raise AssertionError(f"no `$ {tool} --select ... docs/example` line in README.md")


def _newer_than_running() -> str | None:
    """A line of syntax newer than the running Python (None: this Python reads every construct)."""
    if sys.version_info < (3, 12):
        return 'label = f"{"nested"}"\n'  # PEP 701 (3.12)
    if sys.version_info < (3, 14):
        return 'label = t"{1}"\n'  # PEP 750 template strings (3.14)
    return None


@pytest.mark.parametrize("mentions", [False, True], ids=["plain", "naming-nnx"])
@pytest.mark.slow
def test_the_documented_flake8_command_reports_what_flake8_cannot_parse_once(tmp_path, mentions):
    pytest.importorskip("flake8")
    prefix = "from flax import nnx\n" if mentions else ""
    (tmp_path / "pyproject.toml").write_text('[tool.nnx-lint]\ntarget-version = "py310"\n')
    (tmp_path / "unclosed.py").write_text(prefix + "total = (1 +\n")
    # except* (3.11): newer than the target (3.10). Where flake8's Python parses it, the plugin's
    # NNX002 (a file naming nnx), never E999; where it does not, E999 alone.
    (tmp_path / "except_star.py").write_text(prefix + "try:\n    pass\nexcept* ValueError:\n    pass\n")
    newer = _newer_than_running()
    if newer is not None:
        (tmp_path / "newer.py").write_text(prefix + newer)
    command = _documented("flake8")
    assert command[:2] == ["flake8", "--select"] and "E9" in command[2].split(",")
    done = subprocess.run([sys.executable, "-m", *command, "."], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    codes: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        path, _line, _column, rest = line.split(":", 3)
        codes.setdefault(Path(path).name, []).append(rest.split()[0])
    parsed = sys.version_info >= (3, 11)
    expected = {"unclosed.py": ["E999"], "except_star.py": (["NNX002"] if mentions else []) if parsed else ["E999"]}
    if newer is not None:
        expected["newer.py"] = ["E999"]  # flake8's Python cannot parse it; nnx-lint check reads it
    assert {name: codes.get(name, []) for name in expected} == expected, done.stdout + done.stderr
    if newer is not None and mentions:
        check = subprocess.run([CONSOLE_SCRIPT, "check", "--no-cache", "newer.py"], cwd=tmp_path,
                               capture_output=True, text=True, timeout=600)
        assert check.returncode == 1 and "newer.py:2:" in check.stdout and "NNX002" in check.stdout, check.stdout


def test_the_documented_pylint_command_reports_its_syntax_error(tmp_path):
    pytest.importorskip("pylint")
    readme = (REPO / "README.md").read_text()
    line = next(line for line in readme.splitlines() if line.startswith("$ git ls-files -z '*.py' | xargs -0 pylint"))
    command = shlex.split(line.partition("xargs -0 ")[2])
    (tmp_path / "unclosed.py").write_text("total = (1 +\n")
    (tmp_path / "binary.py").write_bytes(DEFECTS["binary.py"][0])
    done = subprocess.run([sys.executable, "-m", *command, "unclosed.py", "binary.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    for name in ("unclosed.py", "binary.py"):
        assert any(line.startswith(f"{name}:") and "E0001" in line for line in done.stdout.splitlines()), done.stdout
