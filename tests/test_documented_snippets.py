"""Every documented console snippet runs as written (issue 27, "Done when").

For README.md, CONTRIBUTING.md and docs/*.md, each ```console block whose lines start with ``$ `` is run
in a fresh temporary directory, its commands one after another in one shell (so ``echo $?``
sees the previous command), stdout and stderr merged as a terminal shows them, and the
transcript is compared with the block. HTML comments on the lines right before a block:

* ``<!-- not-run: REASON -->``: not run (installs, the gate, a corpus the test cannot have);
* ``<!-- setup NAME -->``: a setup from :data:`SETUPS` first (``example``: docs/example as
  ``docs/example``; ``project``: docs/example's files at the top);
* ``<!-- file PATH -->`` (before any code block): that block is written to PATH before the
  next console block's commands;
* ``<!-- requires MODULE -->``: skipped, with the reason, when MODULE cannot be imported.

A console block with commands and no marker is an error: every snippet is run or says why
not. So is a command in any other shell-like block (no language, ``sh``, ``bash``, ``shell``): a
command is written as a ``$ `` line of a console block, so that the rule above covers it (a usage
synopsis or an output is a ``text`` block). Only the temporary directory's path is normalised (to ``/tmp/project``).
``NNX_LINT_UPDATE_SNIPPETS=1`` rewrites the blocks' outputs from real runs.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCUMENTS = ["README.md", "CONTRIBUTING.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^( *)```(\w*)\s*$")
MARKER = re.compile(r"^\s*<!-- (not-run: .+|setup [\w-]+|file \S+|requires [\w.]+) -->\s*$")
SHOWN_TMP = "/tmp/project"


def _example(directory: Path) -> None:
    shutil.copytree(REPO / "docs" / "example", directory / "docs" / "example")


def _project(directory: Path) -> None:
    shutil.copytree(REPO / "docs" / "example", directory, dirs_exist_ok=True)


def _ruff_config(directory: Path) -> None:
    _project(directory)
    (directory / "ruff.toml").write_text("line-length = 100\n")


def _bad_config(directory: Path) -> None:
    _project(directory)
    (directory / "pyproject.toml").write_text('[tool.nnx-lint]\nextend_select = ["NNX9"]\n')  # a typo of the key


def _empty(directory: Path) -> None:
    """Nothing: the block's ``<!-- file PATH -->`` blocks are the whole project."""


def _baseline_story(directory: Path) -> None:
    """The README's baseline story: docs/example's baseline written, then one finding fixed
    (``model.steps += 1`` removed); the new finding comes from the README's ``file`` block."""
    _example(directory)
    subprocess.run([sys.executable, "-m", "nnx_lint.cli", "check", "docs/example", "--no-cache", "--write-baseline",
                    "nnx-lint-baseline.json"], cwd=directory, check=True, capture_output=True)
    train = directory / "docs" / "example" / "train.py"
    train.write_text(train.read_text().replace("    model.steps += 1\n", "", 1))


def _ruff_layout(directory: Path) -> None:
    """docs/ruff-conventions.md's layout: docs/example at the top, ``generated/`` in ``.gitignore`` with a
    copy of ``train.py`` in it, and ``extend-exclude = ["legacy"]``, ``extend-ignore = ["NNX6"]``."""
    _project(directory)
    (directory / ".gitignore").write_text("generated/\n")
    (directory / "generated").mkdir()
    shutil.copy(directory / "train.py", directory / "generated" / "train_copy.py")
    (directory / "pyproject.toml").write_text('[tool.nnx-lint]\nextend-exclude = ["legacy"]\nextend-ignore = ["NNX6"]\n')


def _ruff_layout_noqa_notebook(directory: Path) -> None:
    """:func:`_ruff_layout`, then ``# nnx-lint: noqa: NNX101, NNX201`` as the first line of ``train.py``
    and a notebook ``explore.ipynb`` whose one code cell holds ``train.py`` as it was."""
    _ruff_layout(directory)
    train = directory / "train.py"
    source = train.read_text()
    train.write_text("# nnx-lint: noqa: NNX101, NNX201\n" + source)
    cell = {"cell_type": "code", "execution_count": None, "id": "explore", "metadata": {}, "outputs": [],
            "source": source.splitlines(keepends=True)}
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (directory / "explore.ipynb").write_text(json.dumps(notebook, indent=1) + "\n")


def _example_git(directory: Path) -> None:
    """docs/example as ``docs/example`` in a git repository with its files added (for ``git ls-files``)."""
    _example(directory)
    git = ["git", "-c", "user.name=snippets", "-c", "user.email=snippets@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=directory, check=True)
    subprocess.run([*git, "add", "."], cwd=directory, check=True)


#: Named setups a ``<!-- setup NAME -->`` marker asks for.
SETUPS = {"example": _example, "project": _project, "ruff-config": _ruff_config, "bad-config": _bad_config,
          "empty": _empty, "baseline-story": _baseline_story, "ruff-layout": _ruff_layout,
          "ruff-layout-noqa-notebook": _ruff_layout_noqa_notebook, "example-git": _example_git}


@dataclass
class Block:
    """One console block: where it is, its markers, the files written before it, its lines."""

    document: str
    start: int  # index of the first line inside the fence
    end: int  # index of the closing fence
    indent: str
    lines: list[str]
    markers: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.document}:{self.start}"

    @property
    def commands(self) -> list[str]:
        return [line[2:] for line in self.lines if line.startswith("$ ")]


def _markers_before(lines: list[str], fence: int) -> list[str]:
    """The markers on the lines right above the fence (a run of marker lines, no gap)."""
    found, i = [], fence - 1
    while i >= 0 and (match := MARKER.match(lines[i])):
        found.append(match.group(1))
        i -= 1
    return found


def blocks(document: str) -> list[Block]:
    """The console blocks of a document with commands, with their markers and files."""
    lines = (REPO / document).read_text().split("\n")
    found: list[Block] = []
    files: dict[str, str] = {}
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match or not match.group(2):
            i += 1
            continue
        indent, language = match.group(1), match.group(2)
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        body = [line[len(indent):] for line in lines[i + 1:end]]
        markers = _markers_before(lines, i)
        file_marker = next((m for m in markers if m.startswith("file ")), None)
        if file_marker is not None:
            files[file_marker[5:]] = "\n".join(body) + "\n"
        elif language == "console" and any(line.startswith("$ ") for line in body):
            found.append(Block(document, i + 1, end, indent, body, markers, files))
            files = {}
        i = end + 1
    return found


ALL = [block for document in DOCUMENTS for block in blocks(document)]


def transcript(block: Block, directory: Path) -> str:
    """The block's commands run in ``directory``: each ``$ command`` line, then its output."""
    script = ["exec 2>&1"]
    for command in block.commands:
        # The shown prompt must not become the `$?` that `echo $?` reads: keep the command's status.
        script.append("__snippet_status=$?")
        script.append(f"printf '%s\\n' {_quote('$ ' + command)}")
        script.append("(exit $__snippet_status)")
        script.append(command)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("NNX_GRAPH_MODE", None)
    env.pop("NNX_GRAPH_UPDATES", None)
    result = subprocess.run(["bash", "-c", "\n".join(script)], cwd=directory, capture_output=True, text=True,
                            env=env, timeout=300)
    text = result.stdout.replace(str(directory.resolve()), SHOWN_TMP).replace(str(directory), SHOWN_TMP)
    return "\n".join(line.rstrip() for line in text.rstrip("\n").split("\n"))


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def test_every_console_block_is_run_or_says_why_not():
    unmarked = [block.id for block in ALL
                if not any(m.startswith(("not-run: ", "setup ")) for m in block.markers)]
    assert not unmarked, f"console blocks with neither `<!-- setup NAME -->` nor `<!-- not-run: REASON -->`: {unmarked}"
    unknown = [block.id for block in ALL for m in block.markers if m.startswith("setup ") and m[6:] not in SETUPS]
    assert not unknown


#: The first word of a line that is a command someone would type.
COMMAND_WORDS = {"nnx-lint", "python", "python3", "pip", "pytest", "flake8", "pylint", "pre-commit", "git", "cd",
                 "export", "uv", "ruff", "twine"}


def _commands_outside_console_blocks(document: str) -> list[str]:
    """``document:line: text`` of each command in a fenced block that is not a console block."""
    lines = (REPO / document).read_text().split("\n")
    found, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        if match.group(2) in ("", "sh", "bash", "shell"):
            for number in range(i + 1, end):
                words = lines[number].split()
                if words and words[0].lstrip("$") in COMMAND_WORDS | {""} and not words[0].endswith(":"):
                    found.append(f"{document}:{number + 1}: {lines[number].strip()}")
        i = end + 1
    return found


def test_every_command_is_in_a_console_block():
    """Issue 45: every command in README.md, CONTRIBUTING.md and docs/ is run by this test or marked as not
    run with the reason; a command in a plain or shell block would escape both."""
    assert "CONTRIBUTING.md" in DOCUMENTS and "docs/releasing.md" in DOCUMENTS
    stray = [line for document in DOCUMENTS for line in _commands_outside_console_blocks(document)]
    assert not stray, f"commands outside ```console blocks (write them as `$ ` lines of one): {stray}"


RUN = [block for block in ALL if not any(m.startswith("not-run: ") for m in block.markers)]
#: The programs a snippet may run and stay in the quick loop (``-m "not slow"``): nnx-lint and the shell's
#: own tools. A snippet that runs another program (flake8, pylint, git, python on flax) or ``--confirm``
#: (which runs the Tree Mode programs with jax) is marked slow; the full suite runs every snippet.
QUICK_PROGRAMS = {"nnx-lint", "echo", "cat", "tail", "head"}


def _runs_other_programs(block: Block) -> bool:
    commands = [line.strip()[2:] for line in block.lines if line.strip().startswith("$ ")]
    # The program of each pipeline stage: its first word after any VARIABLE=value assignments.
    programs = [next((word for word in part.split() if "=" not in word), "")
                for command in commands for part in command.replace(";", "|").split("|")]
    return any(program and program not in QUICK_PROGRAMS for program in programs) or any(
        "--confirm" in command for command in commands)


@pytest.mark.parametrize("block", [pytest.param(block, id=block.id, marks=pytest.mark.slow)
                                   if _runs_other_programs(block) else pytest.param(block, id=block.id)
                                   for block in RUN])
def test_snippet_output_is_real(block, tmp_path):
    for marker in block.markers:
        if marker.startswith("requires ") and importlib.util.find_spec(marker[9:]) is None:
            pytest.skip(f"needs {marker[9:]}")
    directory = tmp_path / "project"
    directory.mkdir()
    for marker in block.markers:
        if marker.startswith("setup "):
            SETUPS[marker[6:]](directory)
    for path, text in block.files.items():
        (directory / path).parent.mkdir(parents=True, exist_ok=True)
        (directory / path).write_text(text)
    real = transcript(block, directory)
    written = "\n".join(line.rstrip() for line in block.lines)
    if real != written and os.environ.get("NNX_LINT_UPDATE_SNIPPETS") == "1":
        _rewrite(block, real)
        return
    assert real == written


def _rewrite(block: Block, real: str) -> None:
    path = REPO / block.document
    # An earlier rewrite in the same document may have moved this block: find it by its content.
    old = "\n".join((block.indent + line) if line else line for line in block.lines)
    new = "\n".join((block.indent + line) if line else line for line in real.split("\n"))
    path.write_text(path.read_text().replace(old, new, 1))


def test_the_github_actions_counts_are_its_own_snippets():
    """The progress line docs/github-actions.md quotes agrees with its baseline snippet (which is run
    above): `N of M baselined findings remain` with M the findings written and N + fixed = M."""
    text = (REPO / "docs" / "github-actions.md").read_text()
    remain = re.search(r"`(\d+) of (\d+) baselined findings remain\.`", text)
    fixed = re.search(r"`(\d+) baselined findings? (?:is|are) fixed", text)
    wrote = re.search(r"wrote (\d+) findings", text)
    assert remain and fixed and wrote
    assert int(remain.group(2)) == int(wrote.group(1))
    assert int(remain.group(1)) + int(fixed.group(1)) == int(remain.group(2))
