"""``--write-baseline`` / ``--baseline``: only new findings fail; fixed ones are counted."""
from __future__ import annotations

import json

import pytest

from nnx_lint.frontends.baseline import entries_for, fingerprint
from nnx_lint.cli import main

AXES = "nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))"
SOURCE = f"from flax import nnx\n\nf = {AXES}\nh = {AXES}\nh = {AXES}\n"
DIFF = "from flax import nnx\nloss = nnx.grad(fn, argnums=nnx.DiffState(0, nnx.Param))\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "axes.py").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def check(capsys, *args):
    code = main(["check", "--no-cache", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_written_baseline_is_sorted_stable_and_line_free(project, capsys):
    assert check(capsys, "--write-baseline", "base.json")[0] == 0
    first = (project / "base.json").read_text()
    document = json.loads(first)
    assert document["version"] == 2
    findings = document["findings"]
    assert [f["file"] for f in findings] == ["pkg/axes.py"] * 3
    keys = [(f["file"], f["code"], f["fingerprint"], f["occurrence"]) for f in findings]
    assert keys == sorted(keys)
    # Two identical lines: one fingerprint, occurrences 0 and 1.
    by_fingerprint = {}
    for f in findings:
        by_fingerprint.setdefault(f["fingerprint"], []).append(f["occurrence"])
    assert sorted(by_fingerprint.values()) == [[0], [0, 1]]
    assert not any("line" in f for f in findings)
    assert check(capsys, "--write-baseline", "base.json")[0] == 0
    assert (project / "base.json").read_text() == first, "stable across runs"


def test_baseline_survives_moves_and_unrelated_edits_and_fails_on_new(project, capsys):
    check(capsys, "--write-baseline", "base.json")
    moved = SOURCE.replace("\nf = ", "\n# a comment\nimport os\n\nf =     ").replace(AXES + "\nh", AXES + "  # noqa: E501\nh", 1)
    (project / "pkg" / "axes.py").write_text(moved)
    code, out, _ = check(capsys, "--baseline", "base.json")
    assert code == 0, out
    assert "All checks passed!" in out and "3 of 3 baselined findings remain." in out
    (project / "pkg" / "diff.py").write_text(DIFF)
    code, out, _ = check(capsys, "--baseline", "base.json")
    assert code == 1
    assert "pkg/diff.py:2:" in out and "pkg/axes.py" not in out
    assert "Found 1 diagnostic in 1 file" in out


def test_fixed_entries_are_counted_and_listed_with_verbose(project, capsys):
    check(capsys, "--write-baseline", "base.json")
    (project / "pkg" / "axes.py").write_text(SOURCE.replace(f"h = {AXES}\n", "", 1))
    code, out, _ = check(capsys, "--baseline", "base.json")
    assert code == 0
    assert "1 baselined finding is fixed: run --write-baseline to shrink the baseline" in out
    assert "2 of 3 baselined findings remain." in out
    assert "fixed: pkg/axes.py: NNX201" not in out
    code, out, _ = check(capsys, "--baseline", "base.json", "-v")
    assert "    fixed: pkg/axes.py: NNX201 " in out


def test_json_stays_a_list_and_progress_goes_to_stderr(project, capsys):
    check(capsys, "--write-baseline", "base.json")
    (project / "pkg" / "diff.py").write_text(DIFF)
    code, out, err = check(capsys, "--baseline", "base.json", "--output-format", "json")
    assert code == 1
    found = json.loads(out)
    assert isinstance(found, list) and [d["code"] for d in found] == ["NNX202"]
    assert "3 of 3 baselined findings remain." in err


def test_entries_outside_the_run_are_neither_fixed_nor_remaining(project, capsys):
    (project / "other").mkdir()
    (project / "other" / "diff.py").write_text(DIFF)
    check(capsys, "--write-baseline", "base.json")
    code, out, _ = check(capsys, "pkg", "--baseline", "base.json")
    assert code == 0
    assert "3 of 3 baselined findings remain (1 more not checked in this run)." in out
    code, out, _ = check(capsys, "--baseline", "base.json", "--ignore", "NNX202")
    assert "fixed" not in out, "a rule that did not run fixed nothing"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "is not valid JSON"),
        ('{"version": 7, "findings": []}', "version 7"),
        ('{"version": 1, "findings": [{"file": "a.py"}]}', "finding 0 lacks"),
        ('{"version": 1, "findings": [{"file": "a.py", "code": "NNX201", "fingerprint": "x", "occurrence": "0"}]}',
         "wrong type"),
        ('[]', "expected an nnx-lint baseline"),
    ],
)
def test_malformed_baseline_exits_2_with_one_line(project, capsys, content, message):
    (project / "base.json").write_text(content)
    code, out, err = check(capsys, "--baseline", "base.json")
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1


def test_missing_baseline_and_conflicting_options_exit_2(project, capsys):
    code, _, err = check(capsys, "--baseline", "absent.json")
    assert code == 2 and "cannot read baseline absent.json" in err
    code, _, err = check(capsys, "--baseline", "a.json", "--write-baseline", "b.json")
    assert code == 2 and "--write-baseline" in err


def test_fingerprint_names_the_code_the_flagged_text_and_the_scope_only():
    assert fingerprint("NNX301", "x", "f") != fingerprint("NNX302", "x", "f")
    assert fingerprint("NNX301", "x", "f") != fingerprint("NNX301", "y", "f")
    assert fingerprint("NNX301", "x", "f") != fingerprint("NNX301", "x", "A.f")


def test_notebook_findings_are_fingerprinted_by_their_cell_line(tmp_path):
    from nnx_lint.engine.walk import lint_bytes
    from nnx_lint.engine.registry import select_rules

    cells = [{"cell_type": "code", "source": ["from flax import nnx\n"]},
             {"cell_type": "code", "source": [f"f = {AXES}\n"]}]
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    diagnostics = lint_bytes(path.read_bytes(), str(path), select_rules())
    (entry, _), = entries_for(diagnostics, tmp_path)
    assert entry.file == "nb.ipynb"
    assert entry.fingerprint == fingerprint("NNX201", f"f = {AXES}", "")
