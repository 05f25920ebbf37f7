"""The HTML report (``nnx-lint check --output-format html -o DIR``) without a browser: its
counts against the JSON output, the same bytes for the same input, escaping, the history file
(validated and bounded), the gate page and the usage errors. The pages in a real browser:
tests/test_html_report_browser.py."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from _report_support import GATE_REPORT, HOSTILE, check, expected_totals, make_project, report_run
from nnx_lint.reporting.html.escape import file_page, text
from nnx_lint.reporting.html.history import MAX_RUNS, history_line, read_history, valid_line


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return make_project(tmp_path_factory.mktemp("report") / "project")


@pytest.fixture(scope="module")
def run(project, tmp_path_factory) -> tuple[Path, list[dict]]:
    """One run's report (with the gate page) and its JSON output."""
    return report_run(project, tmp_path_factory.mktemp("html") / "report")


def _pages(directory: Path) -> dict[str, bytes]:
    return {str(path.relative_to(directory)): path.read_bytes() for path in sorted(directory.rglob("*"))
            if path.is_file()}


def test_index_totals_equal_the_json_output_of_the_same_run(run):
    report, findings = run
    index = (report / "index.html").read_text()
    shown = {key: int(value) for key, value in re.findall(r'data-total="(\w+)">(\d+)<', index)}
    assert shown == expected_totals(findings)
    assert shown["raises"] > 0 and shown["silent"] > 0 and shown["fixable_safe"] > 0
    # Every file with a finding has its page, named by a digest of its path.
    for name in {f["filename"] for f in findings}:
        assert (report / file_page(name)).is_file()
        assert f'href="{file_page(name)}"' in index


def test_same_input_same_bytes_apart_from_the_time_stamp(project, run, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")  # the run fixture's time stamp is the clock's
    gate = ("--gate-report", str(GATE_REPORT))
    check(project, "--output-format", "html", "-o", str(tmp_path / "b"), *gate)
    check(project, "--output-format", "html", "-o", str(tmp_path / "c"), *gate)
    stamp = re.compile(rb"<time>[^<]*</time>")
    first, second = _pages(run[0]), _pages(tmp_path / "b")
    assert first.keys() == second.keys() and len(first) > 5
    assert first != second  # the time stamps differ
    assert {name: stamp.sub(b"", data) for name, data in first.items()} == {
        name: stamp.sub(b"", data) for name, data in second.items()}
    assert second == _pages(tmp_path / "c")
    assert b"<time>2023-11-14T22:13:20Z</time>" in (tmp_path / "c" / "index.html").read_bytes()


def test_hostile_file_names_and_identifiers_are_text(run):
    pages = _pages(run[0])
    assert all(HOSTILE not in name for name in pages)
    for name, data in pages.items():
        if name.endswith(".html"):
            assert b"<img" not in data and b"onerror=alert" not in data.replace(b"onerror=alert(1)&gt;", b"")
            assert b"<script>" not in data and data.count(b"<script") == 1  # only sort.js
            assert b"script-src 'self'" in data
    hostile_page = pages[file_page(f"{HOSTILE}.py")].decode()
    assert f"<h1>{text(HOSTILE)}.py</h1>" in hostile_page
    assert f"self.{text(HOSTILE)}" in hostile_page  # the setattr name, in the NNX101 message


def test_history_appends_one_valid_line_per_run_and_the_trend_has_a_point_each(project, run, tmp_path):
    findings = run[1]
    history = tmp_path / "history.jsonl"
    # Any output format records the run; the report plots every line.
    check(project, "--history", str(history), "--output-format", "json", "-o", str(tmp_path / "out.json"))
    for _ in range(2):
        check(project, "--history", str(history), "--output-format", "html", "-o", str(tmp_path / "report"))
    lines = [json.loads(line) for line in history.read_text().splitlines()]
    assert len(lines) == 3 and all(valid_line(line) for line in lines)
    assert lines[-1]["total"] == len(findings)
    assert lines[-1]["kinds"]["raises"] == expected_totals(findings)["raises"]
    assert sum(lines[-1]["families"].values()) == len(findings)
    index = (tmp_path / "report" / "index.html").read_text()
    assert index.count('class="point k-breaks"') == 3


def test_history_from_other_runs_is_validated_and_bounded(tmp_path):
    good = history_line([], "0" * 40, "2026-01-01T00:00:00Z", None)
    history = tmp_path / "history.jsonl"
    bad = [
        {**good, "total": -1}, {**good, "commit": "<script>"}, {**good, "families": {"<b>": 1}},
        {**good, "extra": 1}, {**good, "kinds": {"raises": 1}}, {**good, "time": "yesterday"}, [1, 2], "x",
    ]
    history.write_text("\n".join([json.dumps(good), *map(json.dumps, bad), "{not json", "[" * 100000]) + "\n")
    read = read_history(history)
    assert read.runs == (good,) and read.skipped == len(bad) + 2
    history.write_text(json.dumps(good) + "\n" * (5 * 1024 * 1024))
    assert read_history(history).runs == ()  # too big to read
    history.write_text("".join(json.dumps({**good, "total": n}) + "\n" for n in range(MAX_RUNS + 5)))
    runs = read_history(history).runs
    assert len(runs) == MAX_RUNS and runs[-1]["total"] == MAX_RUNS + 4


def test_history_is_never_written_through_a_symlink(project, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    link = tmp_path / "history.jsonl"
    link.symlink_to(victim)
    assert check(project, "--history", str(link), "--output-format", "json", "-o", str(tmp_path / "o.json")) == 2
    assert victim.read_text() == "keep\n"


def test_gate_page_lists_the_breaks_linked_to_the_findings_that_explain_them(run):
    report, findings = run
    gate = (report / "gate.html").read_text()
    nnx201 = next(i for i, f in enumerate(findings) if f["code"] == "NNX201" and f["filename"] == "models.py")
    rows = {row.split("</td>", 1)[0]: row for row in gate.split('<tr class="')[1:]}
    predicted = next(row for key, row in rows.items() if "test_predicted_break" in key)
    assert predicted.startswith("explained")
    assert f'href="{file_page("models.py")}#F{nnx201}"' in predicted
    unpredicted = next(row for key, row in rows.items() if "test_unpredicted_break" in key)
    assert unpredicted.startswith("unexplained")
    assert re.search(r'data-gate="broken">3<.*data-gate="explained">2<.*data-gate="unexplained">1<', gate)
    assert '<a href="gate.html">' in (report / "index.html").read_text()


def test_usage_errors_come_before_the_run(project, tmp_path, capsys):
    assert check(project, "--output-format", "html") == 2
    assert "-o DIR" in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    assert check(project, "--output-format", "html", "-o", str(tmp_path / "file")) == 2
    (tmp_path / "not-gate.json").write_text('{"tool": "else"}')
    assert check(project, "--output-format", "html", "-o", str(tmp_path / "r"),
                 "--gate-report", str(tmp_path / "not-gate.json")) == 2
    assert "not a gate JSON report" in capsys.readouterr().err
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "linked")
    assert check(project, "--output-format", "html", "-o", str(tmp_path / "linked")) == 2
    assert check(project, "--output-format", "json", "--gate-report", str(GATE_REPORT)) == 2
    assert list((tmp_path / "elsewhere").iterdir()) == [] and not (tmp_path / "r").exists()


def test_the_documented_workflow_publishes_the_report_it_writes(tmp_path, monkeypatch):
    """docs/github-actions.yml: the report step writes the directory the artifact step uploads."""
    import shlex
    import shutil

    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (pip install -e '.[test]')")
    from _report_support import REPO
    from nnx_lint.cli import main

    steps = [step for job in yaml.safe_load((REPO / "docs" / "github-actions.yml").read_text())["jobs"].values()
             for step in job["steps"]]
    (command,) = [shlex.split(step["run"]) for step in steps if "html" in step.get("run", "")]
    upload = next(step for step in steps if step.get("uses", "").startswith("actions/upload-artifact@"))
    directory = command[command.index("-o") + 1]
    assert upload["with"]["path"].rstrip("/") == directory and "--exit-zero" in command
    shutil.copytree(REPO / "docs" / "example", tmp_path / "example")
    monkeypatch.chdir(tmp_path)
    assert main(command[1:]) == 0
    assert (tmp_path / directory / "index.html").is_file()


def test_a_notebook_page_shows_its_cells_with_each_finding_below_its_cell_line(tmp_path):
    cells = [("markdown", ["# <b>Exploring</b>\n"]),
             ("code", ["from flax import nnx\n", "x = '<i>'\n", "f = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))"]),
             ("code", ["y = 2\n", "k = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"])]
    project = tmp_path / "notebook"
    project.mkdir()
    (project / "explore.ipynb").write_text(json.dumps({
        "cells": [{"cell_type": kind, "metadata": {}, "source": source} for kind, source in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert check(project, "--output-format", "html", "-o", str(tmp_path / "report")) == 1
    page = (tmp_path / "report" / file_page("explore.ipynb")).read_text()
    for anchor in ("C2-L3", "C3-L2"):
        after = page.split(f'id="{anchor}"', 1)[1]
        next_line = after.find('class="line')
        assert after.index('class="finding raises"') < (next_line if next_line >= 0 else len(after)), anchor
    assert ">2:3</a>" in page and "&#x27;&lt;i&gt;&#x27;" in page and "<i>" not in page


def test_the_commit_comes_from_ci_or_the_git_files_never_from_running_git(tmp_path, monkeypatch):
    from nnx_lint.reporting.html.history import commit_of

    monkeypatch.delenv("GITHUB_SHA", raising=False)
    monkeypatch.delenv("CI_COMMIT_SHA", raising=False)
    assert commit_of(tmp_path) is None
    git = tmp_path / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text("a" * 40 + "\n")
    assert commit_of(tmp_path) == "a" * 40
    (git / "refs" / "heads" / "main").unlink()
    (git / "packed-refs").write_text(f"# pack-refs\n{'b' * 40} refs/heads/main\n")
    assert commit_of(tmp_path) == "b" * 40
    (git / "HEAD").write_text("ref: refs/../../etc/passwd\n")
    assert commit_of(tmp_path) is None
    (git / "HEAD").write_text("<script>\n")
    assert commit_of(tmp_path) is None
    monkeypatch.setenv("GITHUB_SHA", "C" * 40)
    assert commit_of(tmp_path) == "c" * 40


def test_totals_count_confirmed_unproven_and_fixable_findings_as_the_json_output_has_them():
    """What one run with --confirm, --strict and fixes would print (no jax run here: the objects'
    shape is the JSON output's, and the totals are counted from it)."""
    from nnx_lint.reporting.html.counts import totals

    def finding(kind, **extra):
        return {"code": "NNX101", "kind": kind, "filename": "a.py", "fix": None, **extra}

    edit = {"content": "", "location": {"row": 1, "column": 1}, "end_location": {"row": 1, "column": 1}}
    findings = [
        finding("raises", confirmation={"status": "confirmed", "evidence": "", "program": ""}),
        finding("raises", confirmation={"status": "pattern-confirmed", "evidence": "", "program": ""}),
        finding("silent", confirmation={"status": "not-confirmed", "evidence": "", "program": ""},
                fix={"applicability": "safe", "message": "", "edits": [edit]}),
        finding("raises", proof="unproven", fix={"applicability": "unsafe", "message": "", "edits": [edit]}),
        finding("silent", fix={"applicability": "display-only", "message": "", "edits": []}),
        finding("advisory"),
    ]
    counted = totals(findings)
    assert counted["total"] == 6
    assert {key: counted[key] for key in expected_totals(findings)} == expected_totals(findings) == {
        "raises": 2, "silent": 2, "confirmed": 2, "proven": 5, "unproven": 1, "fixable_safe": 1,
        "fixable_unsafe": 1, "linter": 0, "advisory": 1}


def test_the_modules_examples_hold():
    import doctest

    from nnx_lint.reporting.html import escape, highlight

    assert doctest.testmod(escape).failed == 0 and doctest.testmod(highlight).failed == 0


def test_the_history_counts_what_the_baseline_still_hides_and_the_trend_plots_it(project, run, tmp_path):
    baseline, history = tmp_path / "baseline.json", tmp_path / "history.jsonl"
    assert check(project, "--write-baseline", str(baseline)) == 0
    assert check(project, "--baseline", str(baseline), "--history", str(history), "--output-format", "html",
                 "-o", str(tmp_path / "report")) == 0
    (line,) = [json.loads(text) for text in history.read_text().splitlines()]
    assert line["baselined"] == len(run[1]) and line["total"] == 0
    assert (tmp_path / "report" / "index.html").read_text().count('class="point k-baselined"') == 1
