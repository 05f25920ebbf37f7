"""The two code-injection attacks on reproductions (issue 10), end to end through the CLI.

A ``setattr(self, "<text>", ...)`` path and an ``rngs["<text>"]`` stream key used to be pasted
into program templates, so ``nnx-lint check --confirm`` ran the analysed file's text. Here
the text writes a marker file: it must never appear, under either oracle, and both findings
must still be reported (with a safe reproduction or none). ``--show-repro`` must print the
text only inside string literals.
"""
from __future__ import annotations

import ast
import json

import pytest
from _support import outside_string_literals

pytest.importorskip("jax")

from nnx_lint.cli import main  # noqa: E402


def _hostile_project(tmp_path):
    """A project with both attacks; each payload creates its own marker file when run."""
    project = tmp_path / "project"
    project.mkdir()
    tied_marker, rngs_marker = tmp_path / "pwned-setattr.txt", tmp_path / "pwned-rngs.txt"
    (project / "tied.py").write_text(
        "from flax import nnx\n"
        "class Tied(nnx.Module):\n"
        "    def __init__(self, rngs: nnx.Rngs):\n"
        "        self.a = nnx.Linear(2, 2, rngs=rngs)\n"
        f"        setattr(self, \"['x = 0; open(\\\"{tied_marker}\\\", \\\"w\\\").close(); y']\", self.a)\n"
    )
    (project / "streams.py").write_text(
        "from flax import nnx\n"
        "class Noise(nnx.Module):\n"
        "    def __init__(self, rngs):\n"
        "        self.rngs = rngs\n"
        "class Model(nnx.Module):\n"
        "    def __init__(self, rngs: nnx.Rngs):\n"
        "        self.rngs = rngs\n"
        f"        self.noise = Noise(rngs[\"['a=0, b=open(\\\"{rngs_marker}\\\", \\\"w\\\").close() or 0, c']\"])\n"
    )
    return project, [tied_marker, rngs_marker]


def _payload_lines(project) -> list[str]:
    return [line for path in project.iterdir() for line in path.read_text().splitlines() if "open(" in line]


@pytest.mark.parametrize("oracle", ["tree_runtime", "flax"])
def test_hostile_paths_and_stream_keys_never_run(tmp_path, monkeypatch, capsys, oracle):
    if oracle == "flax":
        pytest.importorskip("flax")
    project, markers = _hostile_project(tmp_path)
    monkeypatch.chdir(project)
    assert main(["check", ".", "--no-cache", "--confirm-with", oracle, "--output-format", "json"]) == 1
    items = json.loads(capsys.readouterr().out)
    assert not [m for m in markers if m.exists()], "the analysed file's text ran"
    assert sorted(item["code"] for item in items) == ["NNX101", "NNX105"]
    for item in items:  # reported, with a safe reproduction or none; never a crash of the builder
        assert item["confirmation"]["status"] in ("confirmed", "pattern-confirmed", "unavailable"), item["confirmation"]
    assert len(_payload_lines(project)) == 2


def test_show_repro_prints_the_text_only_inside_string_literals(tmp_path, monkeypatch, capsys):
    project, markers = _hostile_project(tmp_path)
    monkeypatch.chdir(project)
    assert main(["check", ".", "--no-cache", "--show-repro"]) == 1
    output = capsys.readouterr().out
    assert not [m for m in markers if m.exists()]
    programs, current = [], None  # each program is printed verbatim between two marker lines
    for line in output.splitlines():
        if line.startswith("--- reproduction for "):
            current = []
        elif line == "--- end of reproduction ---":
            programs.append("\n".join(current or []))
            current = None
        elif current is not None:
            current.append(line)
    assert programs, "the safe reproduction of the setattr path is shown"
    for program in programs:
        tree = ast.parse(program)
        for marker in markers:
            assert not outside_string_literals(program, marker.name, tree), program
        assert not {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)} & {"open", "__import__"}
        assert "open" not in {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
