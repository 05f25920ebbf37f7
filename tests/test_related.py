"""Related locations (issue 12, capability 11): the data, the rule API, and every output.

A test-only rule (defined here, so the registry, which collects ``checkers.*`` rules only,
never sees it) reports each ``probe(...)`` call with the other lines it involves: every
function defined in the module, each string argument (its value is the location's
message, so tests can make it hostile), and class ``Base`` of the project module ``base``.
"""
from __future__ import annotations

from dataclasses import dataclass

import json
import os
import pickle
import re
from pathlib import Path

import pytest
from astroid import nodes

from nnx_lint.base import related as related_module
from nnx_lint.frontends.baseline import entries_for
from nnx_lint.base.diagnostic import Diagnostic, Related
from nnx_lint.engine.walk import lint_bytes, lint_source
from nnx_lint.analysis.project import Project
from nnx_lint.engine.registry import all_rules
from nnx_lint.reporting.reporters import render_github, render_json, render_sarif, render_text
from nnx_lint.base.facts import Facts
from nnx_lint.analysis.rule import Rule
from nnx_lint.engine.runner import RunResult


@dataclass(frozen=True)
class ProbeFacts(Facts):
    """The probe reports no facts."""


class RelatedProbe(Rule):
    """Test-only: ``probe(...)`` with its related lines (not in checkers/, never discovered)."""

    code = "NNX998"
    facts_type = ProbeFacts
    symbol = "related-probe"
    message = "probe called"
    kind = "advisory"

    def visit_call(self, node: nodes.Call) -> None:
        if not (isinstance(node.func, nodes.Name) and node.func.name == "probe"):
            return
        found: list = [(d, f"defined here: {d.name}") for d in node.root().body if isinstance(d, nodes.FunctionDef)]
        found += [(a, a.value) for a in node.args if isinstance(a, nodes.Const) and isinstance(a.value, str)]
        base = self.context.project.load("base")
        if base is not None:
            found.append((base.locals["Base"][0], "base class here"))
        found.append((node, "the call itself is not repeated"))
        self.report(node, related=found)


HOSTILE = "evil\x1b[2J\n::error::x|`y` <b>@you"
MODULE = 'from flax import nnx\n\n\ndef site():\n    pass\n\n\nprobe("argument here")\n'
BASE = "class Base:\n    pass\n"


def _two_related() -> Diagnostic:
    """A finding with a related location in another file and one in a notebook cell."""
    return Diagnostic(
        "NNX998", "related-probe", "probe called", "nb.ipynb", 3, 1, 3, 9, "advisory", {"cell": 4}, "",
        (Related("pkg/base.py", 1, 1, 2, 9, "base class here"),
         Related("nb.ipynb", 2, 5, 2, 11, HOSTILE, cell=2, ipynb=(17, 10, 17, 16))),
    )


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.py").write_text(MODULE)
    (root / "base.py").write_text(BASE)
    return root


def _lint_file(path: Path, display: str) -> list[Diagnostic]:
    project = Project()
    project.start_file(str(path))
    return lint_bytes(path.read_bytes(), display, [RelatedProbe], project=project, module_name=path.stem)


# -- the data ---------------------------------------------------------------------------------------


def test_the_probe_rule_is_not_discovered():
    assert RelatedProbe not in all_rules() and "NNX998" not in {r.code for r in all_rules()}


def test_related_round_trips_through_dicts_json_and_the_worker_pipe():
    finding = _two_related()
    data = finding.to_dict()
    assert data["related"][1] == {"path": "nb.ipynb", "line": 2, "column": 5, "end_line": 2, "end_column": 11,
                                  "message": HOSTILE, "cell": 2, "ipynb": (17, 10, 17, 16)}
    for again in (Diagnostic.from_dict(json.loads(json.dumps(data))), Diagnostic.from_dict(pickle.loads(pickle.dumps(data))),
                  Diagnostic(**data)):
        assert again.related == finding.related
        assert all(isinstance(r, Related) for r in again.related)
        assert isinstance(again.related[1].ipynb, tuple)


def test_related_takes_no_part_in_equality():
    finding = _two_related()
    bare = Diagnostic(*[getattr(finding, name) for name in
                        ("code", "symbol", "message", "path", "line", "column", "end_line", "end_column", "kind")])
    assert finding == bare and hash(finding) == hash(bare)
    assert bare.related == ()


def test_with_path_moves_this_files_locations_and_rebases_the_others():
    moved = _two_related().with_path("/work/p/nb.ipynb")
    assert moved.path == "/work/p/nb.ipynb"
    assert [r.path for r in moved.related] == ["/work/p/pkg/base.py", "/work/p/nb.ipynb"]
    assert moved.related[1].cell == 2 and moved.related[1].message == HOSTILE


def test_path_doctests():
    import doctest

    from nnx_lint.base import diagnostic

    failures, tried = doctest.testmod(related_module)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner()
    for test in finder.find(diagnostic.rebase, "rebase", globs={"rebase": diagnostic.rebase}):
        runner.run(test)
    assert tried + runner.tries >= 4 and not failures and not runner.failures


# -- the rule API -------------------------------------------------------------------------------------


def test_report_turns_nodes_into_locations_in_this_file_and_in_another(tmp_path, monkeypatch):
    root = _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    (finding,) = _lint_file(root / "a.py", "proj/a.py")
    assert (finding.line, finding.column) == (8, 1)
    assert [(r.path, r.line, r.column, r.end_line, r.end_column, r.message) for r in finding.related] == [
        ("proj/a.py", 4, 1, 5, 9, "defined here: site"),
        ("proj/a.py", 8, 7, 8, 22, "argument here"),
        # Written as the linted file is written (relative to the same directory), not as read.
        ("proj/base.py", 1, 1, 2, 9, "base class here"),
    ], "the finding's own location is not repeated"


def test_another_files_path_follows_an_absolute_display(tmp_path):
    root = _project(tmp_path)
    (finding,) = _lint_file(root / "a.py", str(root / "a.py"))
    assert finding.related[-1].path == str((root / "base.py").resolve())


def test_a_location_is_listed_once():
    module = nodes.Module("m")
    spec = Related("m.py", 3, 1, 3, 4, "")
    found = related_module.locations([(spec, "first"), (spec, "again"), (Related("m.py", 1, 1, 1, 2, ""), "main")],
                                     module, "m.py", None, (1, 1))
    assert [(r.line, r.message) for r in found] == [(3, "first")]


def test_noqa_on_the_main_line_suppresses_and_on_a_related_line_does_not(tmp_path):
    source = MODULE.replace('probe("argument here")', 'probe("argument here")  # noqa: NNX998')
    assert lint_source(source, "m.py", [RelatedProbe]) == []
    source = MODULE.replace("def site():", "def site():  # noqa: NNX998")
    (finding,) = lint_source(source, "m.py", [RelatedProbe])
    assert finding.related[0].line == 4


def test_notebook_related_locations_are_mapped_to_their_cells(tmp_path):
    notebook = {
        "cells": [
            {"cell_type": "markdown", "source": ["# title\n"]},
            {"cell_type": "code", "source": ["from flax import nnx\n", "def site():\n", "    pass\n"]},
            {"cell_type": "code", "source": ['probe("argument here")\n']},
        ],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }
    text = json.dumps(notebook, indent=1)
    (finding,) = lint_bytes(text.encode(), "nb.ipynb", [RelatedProbe])
    assert (finding.facts["cell"], finding.line) == (3, 1)
    site, argument = finding.related
    assert (site.path, site.cell, site.line, site.column) == ("nb.ipynb", 2, 2, 1)
    assert (argument.cell, argument.line, argument.column, argument.end_column) == (3, 1, 7, 22)
    # GitHub and SARIF point into the .ipynb JSON text, as for the finding itself.
    lines = text.splitlines()
    line, column, _, _ = site.ipynb
    assert lines[line - 1][column - 1:].startswith("def site():")
    line, column, _, _ = argument.ipynb
    assert lines[line - 1][column - 1:].startswith('\\"argument here\\"')


# -- runner: cache and workers ------------------------------------------------------------------------


def test_cached_findings_keep_their_related_locations_under_another_name(tmp_path, monkeypatch):
    from nnx_lint.engine.config import load_settings
    from nnx_lint.engine.runner import analyse_file, run

    monkeypatch.setattr("nnx_lint.engine.runner.rules_for_selectors", lambda selectors: [RelatedProbe])
    root = _project(tmp_path)
    cache = tmp_path / "cache"
    monkeypatch.chdir(root)
    first = run([Path(".")], load_settings(Path(".")), jobs=1, cache_dir=cache)
    assert first.files_analysed == 1 and first.files_from_cache == 0, "base.py never mentions nnx"
    (finding,) = first.diagnostics
    assert [r.path for r in finding.related] == ["a.py", "a.py", "base.py"]
    # What a worker hands back is plain data.
    dicts, dependencies = analyse_file(str(root / "a.py"), "a.py", (), [str(root)])
    assert Diagnostic.from_dict(pickle.loads(pickle.dumps(dicts))[0]).related == finding.related
    assert str((root / "base.py").resolve()) in dependencies

    # The same file named another way (the cache is keyed by the absolute path).
    named = Path("..", "proj")
    again = run([named], load_settings(named), jobs=1, cache_dir=cache)
    assert again.files_from_cache == 1 and again.files_analysed == 0, "the cache answered"
    (cached,) = again.diagnostics
    a, base = os.path.join("..", "proj", "a.py"), os.path.join("..", "proj", "base.py")
    assert cached.path == a
    assert [r.path for r in cached.related] == [a, a, base]


def test_stdin_names_this_buffer_dash_and_other_files_from_the_working_directory(tmp_path, monkeypatch):
    from nnx_lint.engine.config import load_settings
    from nnx_lint.frontends.single_file import lint_text

    monkeypatch.setattr("nnx_lint.frontends.single_file.rules_for", lambda settings, path: [RelatedProbe])
    root = _project(tmp_path)
    monkeypatch.chdir(root)
    (finding,) = lint_text(None, MODULE.encode(), load_settings(Path(".")))
    assert [r.path for r in finding.related] == ["-", "-", "base.py"]


def test_the_baseline_fingerprint_ignores_related_locations(tmp_path):
    (tmp_path / "nb.ipynb").write_text("x\ny\nz\n")
    finding = _two_related()
    bare = Diagnostic(**{**finding.to_dict(), "related": ()})
    with_related = entries_for([finding], tmp_path, read=lambda path: b"a\nb\nc\n")
    without = entries_for([bare], tmp_path, read=lambda path: b"a\nb\nc\n")
    assert [e for e, _ in with_related] == [e for e, _ in without]
    assert with_related[0][0].fingerprint == without[0][0].fingerprint


# -- every output ---------------------------------------------------------------------------------


def test_text_lists_each_related_location_on_an_escaped_also_at_line():
    out = render_text(RunResult(diagnostics=[_two_related()], files_checked=1))
    lines = out.splitlines()
    assert lines[:3] == [
        "nb.ipynb:cell 4:3:1: NNX998 probe called",
        "    also at pkg/base.py:1:1: base class here",
        "    also at nb.ipynb:cell 2:2:5: evil\\x1b[2J\\n::error::x|`y` <b>@you",
    ]
    assert all(line.isprintable() for line in lines)


def test_json_has_a_related_list_per_finding():
    (item,) = json.loads(render_json([_two_related()]))
    assert item["related"] == [
        {"filename": "pkg/base.py", "location": {"row": 1, "column": 1}, "end_location": {"row": 2, "column": 9},
         "message": "base class here", "cell": None},
        {"filename": "nb.ipynb", "location": {"row": 2, "column": 5}, "end_location": {"row": 2, "column": 11},
         "message": HOSTILE, "cell": 2},
    ]
    bare = Diagnostic("NNX998", "related-probe", "m", "a.py", 1, 1, 1, 2, "advisory")
    assert json.loads(render_json([bare]))[0]["related"] == []


def test_sarif_related_locations_have_the_2_1_0_shape():
    finding = _two_related()
    finding = finding.with_path("my dir/nb #1.ipynb")
    document = json.loads(render_sarif([finding]))
    (result,) = document["runs"][0]["results"]
    related = result["relatedLocations"]
    assert [r["id"] for r in related] == [0, 1], "ids: non-negative integers, unique in the result"
    for location in related:
        assert set(location) == {"id", "physicalLocation", "message"}
        assert set(location["physicalLocation"]) == {"artifactLocation", "region"}
        region = location["physicalLocation"]["region"]
        assert all(isinstance(region[k], int) and region[k] >= 1
                   for k in ("startLine", "startColumn", "endLine", "endColumn"))
        assert isinstance(location["message"]["text"], str)
    uris = [r["physicalLocation"]["artifactLocation"]["uri"] for r in related]
    assert uris == ["my%20dir/pkg/base.py", "my%20dir/nb%20%231.ipynb"], "percent-encoded like the main uri"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == uris[1]
    # In the notebook: the region of the .ipynb JSON text, as for the result itself.
    assert related[1]["physicalLocation"]["region"] == {"startLine": 17, "startColumn": 10, "endLine": 17,
                                                         "endColumn": 16}
    assert related[1]["message"]["text"] == HOSTILE
    bare = Diagnostic("NNX998", "related-probe", "m", "a.py", 1, 1, 1, 2, "advisory")
    assert "relatedLocations" not in json.loads(render_sarif([bare]))["runs"][0]["results"][0]


def test_github_puts_related_locations_in_the_escaped_message():
    out = render_github([_two_related()])
    assert "\n" not in out and "\r" not in out, "one workflow command"
    match = re.fullmatch(r"::notice ([^:]*)::(.*)", out)
    assert match, out
    data = match.group(2)
    assert "::" in data and not data.startswith("::")
    unescaped = data.replace("%0A", "\n").replace("%0D", "\r").replace("%25", "%")
    assert unescaped.split("\n") == [
        "NNX998 probe called",
        "also at pkg/base.py:1:1: base class here",
        "also at nb.ipynb:cell 2:2:5: evil\\x1b[2J\\n::error::x|`y` <b>@you",
    ]


def test_markdown_lists_related_locations_in_the_message_cell():
    from nnx_lint.reporting.markdown_report import render_markdown

    out = render_markdown([_two_related()], {}, 1, {})
    (row,) = [line for line in out.splitlines() if "nnx-lint rule NNX998" in line]
    message_cell = row.split(" | ")[3]
    assert message_cell.startswith("probe called<br>also at pkg/base.py:1:1: base class here<br>also at nb.ipynb:")
    for raw in ("|", "`", "<b>", "@you", "\x1b", "\n"):
        assert raw not in message_cell.removesuffix(" |"), raw
    assert row.count(" | ") == 3, "the table keeps its four cells"


def test_statistics_are_unaffected(tmp_path):
    from nnx_lint.reporting.reporters import render_statistics

    finding = _two_related()
    bare = Diagnostic(**{**finding.to_dict(), "related": ()})
    for form in ("text", "json", "markdown"):
        assert render_statistics(RunResult([finding], 1), form) == render_statistics(RunResult([bare], 1), form)


@pytest.mark.slow
def test_cli_end_to_end_shows_related_locations(tmp_path, monkeypatch, capsys):
    from nnx_lint.cli import main

    monkeypatch.setattr("nnx_lint.engine.runner.rules_for_selectors", lambda selectors: [RelatedProbe])
    root = _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--no-cache", "-j", "1", "proj"]) == 1
    out = capsys.readouterr().out
    a, base = os.path.join("proj", "a.py"), os.path.join("proj", "base.py")
    assert out.splitlines()[:4] == [
        f"{a}:8:1: NNX998 probe called",
        f"    also at {a}:4:1: defined here: site",
        f"    also at {a}:8:7: argument here",
        f"    also at {base}:1:1: base class here",
    ]
    assert main(["check", "--no-cache", "-j", "1", "--output-format", "json", "proj"]) == 1
    (item,) = json.loads(capsys.readouterr().out)
    assert [r["filename"] for r in item["related"]] == [a, a, base]


def test_flake8_messages_stay_one_line_without_related(tmp_path, monkeypatch):
    """Chosen behaviour: the flake8 and pylint plugins report the finding's message as before
    (their parity with the CLI compares code, line and column); related lines are CLI output."""
    from nnx_lint import flake8 as plugin_module

    root = _project(tmp_path)
    monkeypatch.setattr(plugin_module, "plugin_rules", lambda settings, path, also=(): [RelatedProbe])
    plugin = plugin_module.NNXFlake8Plugin(None, str(root / "a.py"), MODULE.splitlines(keepends=True))
    assert [(line, column, message) for line, column, message, _ in plugin.run()] == [(8, 0, "NNX998 probe called")]


# -- a finding in another file is anchored in this one (issue 26) -------------------------------------

FACTORY = """\
import dataclasses

import jax
import optax
from flax import nnx


@jax.tree_util.register_pytree_node_class
@dataclasses.dataclass(frozen=True)
class TrainingState:
    networks: object
    optimizer: object

    def tree_flatten(self):
        return (self.networks, self.optimizer), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def new_training_state(env, networks, seed):
    optimizer = nnx.Optimizer(networks, optax.adam(1e-3), wrt=nnx.Param)
    return TrainingState(networks, optimizer)
"""
FACTORY_TEST = """\
from flax import nnx

import factory


def test_jit():
    nets = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    return nnx.jit(factory.new_training_state, static_argnums=(0, 2))("env", nets, 18)
"""


def test_a_finding_found_in_another_file_is_reported_at_this_files_transform(tmp_path, monkeypatch):
    """nnx-ppo's ppo_test.py: NNX106 followed ``nnx.jit(ppo.new_training_state)`` into ppo.py and
    reported the return there, which crashed the rule (NNX003 for the whole file). Tree Mode
    raises ``Duplicate Param`` (flax 0.12.8); graph mode runs."""
    from nnx_lint.engine.config import load_settings
    from nnx_lint.engine.runner import run

    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    (tmp_path / "factory.py").write_text(FACTORY)
    (tmp_path / "factory_test.py").write_text(FACTORY_TEST)
    monkeypatch.chdir(tmp_path)
    result = run([Path("factory_test.py")], load_settings(Path(".")), jobs=1)
    assert [(d.code, d.path, d.line) for d in result.diagnostics] == [("NNX106", "factory_test.py", 8)]
    (finding,) = result.diagnostics
    assert (finding.related[0].path, finding.related[0].line, finding.related[0].message) == (
        "factory.py", 24, related_module.FOUND_THERE)


def test_a_foreign_node_with_no_anchor_here_is_still_a_rule_error():
    import astroid

    here, there = astroid.parse("x = 1\n", "here"), astroid.parse("y = 2\n", "there")
    assert related_module.anchored(there.body[0], [(there.body[0], "only there")], here) == (
        None, [(there.body[0], "only there")])
