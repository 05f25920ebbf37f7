"""The join of ``bench/flax_tests_recall.py``: a diagnostic in a test's body is found from any working directory.

The bench lints a copy of flax's tests that lies elsewhere (a temporary directory) from the
process' own working directory; the diagnostics' paths are relative to that directory. A join
that resolved them against the copy found nothing and read recall 0 without an error.
"""
from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("libcst")

_PATH = Path(__file__).resolve().parent.parent / "bench" / "flax_tests_recall.py"
_SPEC = importlib.util.spec_from_file_location("flax_tests_recall", _PATH)
flax_tests_recall = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(flax_tests_recall)

_TEST_FILE = """
from flax import nnx


class SplitTest:
    def test_node_types(self):
        graphdef, state = nnx.split(nnx.Param(1))
        return graphdef.nodes[0]

    def test_clean(self):
        return nnx.Param(1)
"""


@pytest.fixture
def copy(tmp_path):
    tests = tmp_path / "copy" / "tests" / "nnx"
    tests.mkdir(parents=True)
    (tests / "split_test.py").write_text(textwrap.dedent(_TEST_FILE), encoding="utf-8")
    return tmp_path / "copy"


@pytest.mark.parametrize("where", ["elsewhere", "copy"])
def test_a_diagnostic_in_the_body_is_joined_whatever_the_working_directory(copy, tmp_path, monkeypatch, where):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere if where == "elsewhere" else copy)
    diagnostics = flax_tests_recall.lint_project(copy / "tests" / "nnx", None)
    assert [d.code for d in diagnostics] == ["NNX712"]
    attributor = flax_tests_recall.attributor_for(diagnostics, copy)
    found = attributor.diagnostics_in_test("tests/nnx/split_test.py::SplitTest::test_node_types", copy)
    assert [d.code for d in found] == ["NNX712"]
    assert attributor.diagnostics_in_test("tests/nnx/split_test.py::SplitTest::test_clean", copy) == []


def test_diagnostics_of_another_directory_are_an_error(copy, tmp_path, monkeypatch):
    monkeypatch.chdir(copy)
    diagnostics = flax_tests_recall.lint_project(copy / "tests" / "nnx", None)
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.chdir(other)  # the paths no longer lead to the files
    with pytest.raises(ValueError, match="name no file"):
        flax_tests_recall.attributor_for(diagnostics, copy)
