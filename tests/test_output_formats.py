"""Issue 27, item 8 (output): Ruff's ``[*]`` marker and fixable hint, ``--show-help``,
``--show-fixes`` with Ruff's meaning, and the ``concise``, ``full``, ``junit``, ``gitlab`` and
``pylint`` formats, each escaping analysed text. Run through the installed console script."""
from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("libcst", reason="fixes need libcst (pip install -e '.[test]')")

NNX_LINT = str(Path(sys.executable).with_name("nnx-lint"))
BAD = "from flax import nnx\nf = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"
HOSTILE = "::stop-commands::x\x1b[2J.py"


def _check(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([NNX_LINT, "check", "--no-cache", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    return tmp_path


def test_fixable_marker_and_hint(project):
    out = _check(project, "bad.py").stdout.splitlines()
    assert out[0].startswith("bad.py:2:26: NNX201 [*] `nnx.StateAxes`")
    assert out[-1] == "[*] 1 fixable with the `--fix` option."


@pytest.mark.slow
def test_show_help_prints_the_help_and_show_fixes_lists_fixes_by_rule(project):
    shown = _check(project, "--show-help", "bad.py")
    assert "\n    help: Tree Mode rejects prefix filters" in shown.stdout
    listed = _check(project, "--show-fixes", "bad.py")
    assert "help:" not in listed.stdout
    assert "Would fix with `--fix`: 1 error\n    1 × NNX201 (state-axes-prefix)" in listed.stderr
    fixed = _check(project, "--fix", "--show-fixes", "bad.py")
    assert "Fixed 1 error:\n    1 × NNX201 (state-axes-prefix)" in fixed.stderr


@pytest.mark.slow
def test_concise_and_pylint(project):
    concise = _check(project, "--output-format", "concise", "bad.py").stdout.splitlines()
    assert concise[0].startswith("bad.py:2:26: NNX201 [*] `nnx.StateAxes`") and "also at" not in "".join(concise)
    assert concise[1].startswith("Found 1 diagnostic")
    pylint = _check(project, "--output-format", "pylint", "bad.py").stdout
    assert pylint.startswith("bad.py:2: [NNX201] `nnx.StateAxes` in `in_axes`")


def test_full_shows_the_source_with_carets(project):
    out = _check(project, "--output-format", "full", "bad.py").stdout
    assert "2 | f = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n" in out
    lines = out.splitlines()
    caret = next(i for i, line in enumerate(lines) if "^" in line)
    assert lines[caret].index("^") == lines[caret - 1].index("nnx.StateAxes")
    assert "  = help: Tree Mode rejects" in out and "  = rule: nnx-lint rule NNX201" in out


def test_junit_is_a_junit_report(project):
    out = _check(project, "--output-format", "junit", "bad.py").stdout
    root = ET.fromstring(out.encode())
    assert root.tag == "testsuites"
    (suite,) = root
    assert suite.tag == "testsuite" and suite.get("name") == "bad.py" and suite.get("failures") == "1"
    (case,) = suite
    assert case.get("name") == "org.nnx-lint.NNX201" and case.get("classname") == "bad"
    (failure,) = case
    assert failure.tag == "failure" and failure.text.startswith("line 2, col 26, `nnx.StateAxes`")
    clean = tmp = project / "clean.py"
    tmp.write_text("x = 1\n")
    empty = ET.fromstring(_check(project, "--output-format", "junit", clean.name).stdout.encode())
    assert [c.get("name") for c in empty.iter("testcase")] == ["No errors found"]


def test_gitlab_has_the_code_quality_fields(project):
    (issue,) = json.loads(_check(project, "--output-format", "gitlab", "bad.py").stdout)
    assert issue["description"].startswith("NNX201: `nnx.StateAxes`")
    assert issue["check_name"] == "NNX201" and issue["severity"] in {"info", "minor", "major", "critical", "blocker"}
    assert issue["location"]["path"] == "bad.py" and issue["location"]["lines"]["begin"] == 2
    again = json.loads(_check(project, "--output-format", "gitlab", "bad.py").stdout)
    assert again[0]["fingerprint"] == issue["fingerprint"]


@pytest.mark.skipif(sys.platform == "win32", reason="file names with control characters")
@pytest.mark.parametrize("output_format", ["concise", "full", "pylint", "junit", "gitlab", "text"])
@pytest.mark.slow
def test_every_new_format_escapes_analysed_text(tmp_path, output_format):
    (tmp_path / HOSTILE).write_text(BAD)
    out = _check(tmp_path, "--output-format", output_format, ".").stdout
    assert "\x1b" not in out
    assert not any(line.startswith("::") for line in out.splitlines())
    if output_format == "junit":
        ET.fromstring(out.encode())
    if output_format == "gitlab":
        assert json.loads(out)[0]["location"]["path"].endswith(".py")
