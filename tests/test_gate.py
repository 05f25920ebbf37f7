"""``nnx-lint gate``: results, attribution, baseline, reports and exit statuses.

The end-to-end runs here use tiny pytest projects that never import flax: their tests read
``NNX_GRAPH_MODE`` themselves to behave like Tree Mode breaks, so each run costs about a
second. The run on a real flax fixture project is in ``test_gate_flax.py``.
"""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from nnx_lint.cli import main
from nnx_lint.base.confined_writes import WriteScope
from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.base.escaping import markdown_cell
from nnx_lint.gate import command as gate_command
from nnx_lint.gate.attribution import Attributor, project_frames
from nnx_lint.gate.baseline import BaselineError, read_baseline, write_baseline
from nnx_lint.gate.classify import Verdict, classify_full_runs, verdict_from_reruns
from nnx_lint.gate.command import EXIT_BREAKS, EXIT_CLEAN, EXIT_ERROR, exit_status, split_test_command
from nnx_lint.gate.modes import GRAPH, TREE
from nnx_lint.gate.report import render
from nnx_lint.gate.results import Failure, Frame, TestResult, read_junit, read_plugin_report
from nnx_lint.gate.runner import is_pytest_command, rerun_command

REPO = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------- modes


def test_modes_set_both_flax_variables_explicitly():
    assert GRAPH.environment == {"NNX_GRAPH_MODE": "true", "NNX_GRAPH_UPDATES": "true"}
    assert TREE.environment == {"NNX_GRAPH_MODE": "false", "NNX_GRAPH_UPDATES": "false"}


@pytest.mark.slow
def test_flax_reads_exactly_these_variables():
    """flax 0.12.8 reads the variables at import: the config seen by a fresh process follows them."""
    pytest.importorskip("flax")
    program = "from flax import config; print(config.nnx_graph_mode, config.nnx_graph_updates)"
    for mode, expected in ((GRAPH, "True True"), (TREE, "False False")):
        environment = {**os.environ, **mode.environment}
        done = subprocess.run([sys.executable, "-c", program], env=environment, capture_output=True, text=True,
                              timeout=300)
        assert done.stdout.split() == expected.split(), done.stderr


# ---------------------------------------------------------------- results


def _plugin_lines(tmp_path: Path, records: list[dict]) -> Path:
    path = tmp_path / "report.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records) + '{"event": "report", "nodei')
    return path


def test_plugin_report_phases_make_one_outcome_and_torn_lines_are_ignored(tmp_path):
    frames = [{"file": "/p/t.py", "line": 3, "function": "test_a"}]
    path = _plugin_lines(tmp_path, [
        {"event": "session", "flax": "0.12.8", "rootdir": "/p"},
        {"event": "collected", "count": 3},
        {"event": "report", "nodeid": "t.py::test_a", "phase": "setup", "outcome": "passed", "duration": 0.1},
        {"event": "report", "nodeid": "t.py::test_a", "phase": "call", "outcome": "failed", "duration": 0.2,
         "exception": {"type": "builtins.ValueError", "message": "boom", "category": "aliasing", "frames": frames}},
        {"event": "report", "nodeid": "t.py::test_a", "phase": "teardown", "outcome": "passed", "duration": 0.1},
        {"event": "report", "nodeid": "t.py::test_b", "phase": "setup", "outcome": "failed", "duration": 0.1,
         "message": "fixture broke"},
        {"event": "report", "nodeid": "t.py::test_c", "phase": "setup", "outcome": "skipped", "duration": 0.0},
    ])
    results = read_plugin_report(path)
    assert results.flax_version == "0.12.8" and results.collected == 3 and results.rootdir == "/p"
    assert not results.finished  # no "finished" line: the run did not reach its end
    a, b, c = (results.tests[f"t.py::test_{x}"] for x in "abc")
    assert (a.outcome, b.outcome, c.outcome) == ("failed", "error", "skipped")
    assert a.failure.category == "aliasing" and a.failure.frames == [Frame("/p/t.py", 3, "test_a")]
    assert a.duration == pytest.approx(0.4)
    assert b.failure.message == "fixture broke" and b.failure.phase == "setup"


def test_junit_results_with_frames_and_category(tmp_path):
    xml = tmp_path / "junit.xml"
    xml.write_text(textwrap.dedent("""\
        <testsuites><testsuite>
          <testcase classname="t" name="test_ok" file="t.py" time="0.1"/>
          <testcase classname="t" name="test_bad" file="t.py" time="0.2">
            <failure type="ValueError" message="nnx.jit with graph_updates=False does not support Variable aliasing">
        t.py:7: in test_bad
            run()
        models.py:41: ValueError</failure>
          </testcase>
          <testcase classname="t" name="test_skip" file="t.py"><skipped message="no"/></testcase>
        </testsuite></testsuites>"""))
    results = read_junit(xml, tmp_path)
    assert results.finished
    assert results.tests["t.py::test_ok"].outcome == "passed"
    assert results.tests["t.py::test_skip"].outcome == "skipped"
    bad = results.tests["t.py::test_bad"]
    assert bad.outcome == "failed"
    assert [(Path(f.file).name, f.line) for f in bad.failure.frames] == [("t.py", 7), ("models.py", 41)]
    assert bad.failure.category == "aliasing"


# ---------------------------------------------------------------- classification


def _result(nodeid: str, outcome: str) -> TestResult:
    return TestResult(nodeid, outcome=outcome)


def test_full_runs_separate_both_graph_only_and_candidates():
    graph = {"a": _result("a", "passed"), "b": _result("b", "failed"), "c": _result("c", "failed"),
             "d": _result("d", "skipped"), "e": _result("e", "passed")}
    tree = {"a": _result("a", "failed"), "b": _result("b", "error"), "c": _result("c", "passed"),
            "d": _result("d", "failed"), "e": _result("e", "passed")}
    verdicts, candidates = classify_full_runs(graph, tree)
    assert {(v.nodeid, v.kind) for v in verdicts} == {("b", "both"), ("c", "graph-only")}
    assert candidates == ["a", "d"]


@pytest.mark.parametrize(("alone_tree", "alone_graph", "kind"), [
    ("failed", "passed", "tree-break"),
    ("passed", None, "order-dependent"),
    ("failed", "failed", "both"),
    (None, None, "not-isolated"),
    ("failed", None, "not-isolated"),
])
def test_verdict_from_isolated_reruns(alone_tree, alone_graph, kind):
    verdict = verdict_from_reruns("t", _result("t", "passed"), _result("t", "failed"),
                                  alone_tree and _result("t", alone_tree), alone_graph and _result("t", alone_graph))
    assert verdict.kind == kind


def test_rerun_command_drops_the_selection_and_xdist_but_keeps_options(tmp_path):
    (tmp_path / "tests").mkdir()
    command = ["python", "-m", "pytest", "tests", "-k", "tests", "-n", "2", "-x", "t.py::test_a", "--ignore", "tests"]
    assert rerun_command(command, tmp_path) == ["python", "-m", "pytest", "-k", "tests", "-x", "--ignore", "tests"]
    assert is_pytest_command(["pytest"]) and is_pytest_command(["/v/bin/python", "-m", "pytest"])
    assert not is_pytest_command(["tox", "-e", "pytest"])


# ---------------------------------------------------------------- attribution


def _diagnostic(path: Path, line: int, code: str = "NNX201", end_line: int | None = None) -> Diagnostic:
    return Diagnostic(code=code, symbol="s", message="m", path=str(path), line=line, column=1,
                      end_line=end_line or line, end_column=2, kind="raises")


def _verdict_failing_at(*frames: Frame) -> Verdict:
    failure = Failure(type="builtins.ValueError", message="boom", category="prefix-filter", frames=list(frames))
    return Verdict("t.py::test_x", "tree-break", tree=TestResult("t.py::test_x", "failed", failure=failure))


@pytest.fixture
def project(tmp_path):
    (tmp_path / "models.py").write_text(textwrap.dedent("""\
        def build(x):
            axes = make_axes()          # line 2
            a = 1
            b = 2
            c = 3
            d = 4
            return run(axes, x)         # line 7


        def other():
            return 0                    # line 11
        """))
    (tmp_path / "t.py").write_text("def test_x():\n    build(1)\n")
    return tmp_path


def test_attribution_at_near_same_function_and_unexplained(project):
    models, test = str(project / "models.py"), str(project / "t.py")
    installed = "/venv/lib/python3.11/site-packages/flax/nnx/transforms.py"
    failing = _verdict_failing_at(Frame(test, 2, "test_x"), Frame(models, 7, "build"), Frame(installed, 10, "vmap"))

    def summary(*diagnostics):
        return Attributor(list(diagnostics), project, cwd=project).attribute(failing).summary(project)

    assert summary(_diagnostic(project / "models.py", 7)).startswith(
        "explained by NNX201 at models.py:7 (at the failing")
    assert "(near the failing frame" in summary(_diagnostic(project / "models.py", 5))
    assert "(in the same function as the failing frame" in summary(_diagnostic(project / "models.py", 2))
    assert summary(_diagnostic(project / "models.py", 11)) == "unexplained"
    # A frame of the call chain (the test) explains it when the deepest frame has nothing.
    assert "NNX105 at t.py:2 (at a frame of the call chain" in summary(_diagnostic(project / "t.py", 2, "NNX105"))
    # The deepest frame wins over a closer match further up the chain.
    assert summary(_diagnostic(project / "t.py", 2, "NNX105"), _diagnostic(project / "models.py", 5)).startswith(
        "explained by NNX201 at models.py:5")
    attribution = Attributor([], project, cwd=project).attribute(failing)
    assert attribution.deepest == Frame(models, 7, "build") and not attribution.explained


def test_a_related_location_at_the_frame_explains_the_failure(project):
    """A finding reported where the fix goes (a return in another file) whose related location is the
    failing line (the call of the transformed function) explains the failure, before a mere "near"."""
    from nnx_lint.base.diagnostic import Related

    models, test = str(project / "models.py"), str(project / "t.py")
    failing = _verdict_failing_at(Frame(test, 2, "test_x"), Frame(models, 7, "build"))
    returned = dataclasses.replace(_diagnostic(project / "t.py", 1, "NNX104"),
                                   related=(Related("models.py", 7, 12, 7, 20, "called here"),))
    nearby = _diagnostic(project / "models.py", 5)
    attribution = Attributor([nearby, returned], project, cwd=project).attribute(failing)
    assert attribution.summary(project).startswith("explained by NNX104 at t.py:1 (with a related line at the failing")
    assert [m.how for m in attribution.matches] == ["related", "near"]
    elsewhere = dataclasses.replace(_diagnostic(project / "models.py", 11, "NNX104"),
                                    related=(Related("models.py", 11, 1, 11, 2, "called here"),))
    assert Attributor([elsewhere], project, cwd=project).attribute(failing).summary(project) == "unexplained"


def test_frames_in_installed_packages_are_not_project_frames(tmp_path):
    venv_file = tmp_path / ".venv" / "lib" / "site-packages" / "flax" / "x.py"
    failure = Failure("E", "m", frames=[Frame(str(tmp_path / "a.py"), 1, "f"), Frame(str(venv_file), 2, "g"),
                                        Frame("/elsewhere/b.py", 3, "h")])
    assert [frame.function for frame in project_frames(failure, tmp_path)] == ["f"]


_DEPENDENCY_MODULE = """\
from flax import nnx


def quantize(model, rngs):
    for path, module in nnx.iter_modules(model):
        module.path_name = path
        module.shared_rngs = rngs          # line 7: NNX112
    model(1)                               # line 8: where Tree Mode raises, a frame of the dependency
    return model
"""


def _project_using_a_dependency(tmp_path: Path) -> tuple[Path, Path]:
    """A project whose test calls ``deplib.quantize`` of an installed package (a venv under tmp_path)."""
    installed = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    (installed / "deplib").mkdir(parents=True)
    (installed / "deplib" / "__init__.py").write_text("")
    (installed / "deplib" / "model.py").write_text(_DEPENDENCY_MODULE)
    flax_file = installed / "flax" / "nnx" / "graphlib.py"
    flax_file.parent.mkdir(parents=True)
    flax_file.write_text("from flax import nnx\nx = nnx\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_quant.py").write_text("import deplib\n\n\ndef test_q():\n    deplib.quantize(1, 2)\n")
    return project, installed


def test_a_break_caused_in_an_installed_dependency_is_explained_by_linting_its_frames(tmp_path):
    """No project frame is at the cause (google/tunix's LoRA tests break inside google/qwix): the gate
    lints the files of the dependency frames (not flax's) and matches them like the project's."""
    import argparse

    from nnx_lint.gate.classify import GateOutcome

    project, installed = _project_using_a_dependency(tmp_path)
    frames = [Frame(str(project / "test_quant.py"), 5, "test_q"),
              Frame(str(installed / "deplib" / "model.py"), 8, "quantize"),
              Frame(str(installed / "flax" / "nnx" / "graphlib.py"), 2, "_iter_tree")]
    verdict = _verdict_failing_at(*frames)
    outcome = GateOutcome(verdicts=[verdict], tests_total=1)
    args = argparse.Namespace(select=None, baseline=None, write_baseline=None, output_format="json")
    status, text = gate_command.finish(outcome, [], project, None, args, [])
    report = json.loads(text)
    attribution = report["tree_breaks"][0]["attribution"]
    assert status == EXIT_BREAKS and attribution["explained"], attribution
    assert attribution["summary"] == ("explained by NNX112 at deplib/model.py:7 (near a frame in the installed "
                                      "dependency deplib, deplib/model.py:8 in quantize)")
    assert attribution["matches"][0]["dependency"] == "deplib"
    assert report["summary"]["explained"] == report["summary"]["explained_in_dependencies"] == 1
    assert "(1 in dependencies)" in gate_command.finish(
        outcome, [], project, None, argparse.Namespace(**{**vars(args), "output_format": "text"}), [])[1]
    # A finding of the project's own wins: the dependency is not even linted then.
    own = _diagnostic(project / "test_quant.py", 5, "NNX101")
    report = json.loads(gate_command.finish(outcome, [own], project, None, args, [])[1])
    assert report["tree_breaks"][0]["attribution"]["matches"][0]["dependency"] is None
    assert report["summary"]["explained_in_dependencies"] == 0


def test_a_finding_that_stores_a_name_of_the_failing_values_path_explains_the_failure(tmp_path):
    """JAX raises where it reads a transform's arguments and names the failing leaf's path; the finding is on
    the ``__init__`` statement that stored it (google/tunix's ``GradientAccumulator._param_dtypes``, NNX709)."""
    (tmp_path / "acc.py").write_text(textwrap.dedent("""\
        class Accumulator:
            def __init__(self, state):
                self.total = 0
                self._param_dtypes = nnx.data(      # line 4
                    jax.tree.map(lambda x: x.dtype, state))
                self.other = 1                      # line 6
        """))
    (tmp_path / "t.py").write_text("def test_x():\n    step(acc)\n")
    message = ("Error interpreting argument to SimpleJitFn(f=<bound method Trainer._train_step>) as an abstract "
               "array. The problematic value is of type <class 'ml_dtypes.bfloat16'> and was passed to the function "
               "at path grad_accumulator._param_dtypes['bias'].\nThis typically means that a jit-wrapped function...")
    failure = Failure("builtins.TypeError", message, frames=[Frame(str(tmp_path / "t.py"), 2, "test_x")])
    verdict = Verdict("t.py::test_x", "tree-break", tree=TestResult("t.py::test_x", "failed", failure=failure))
    on_store = _diagnostic(tmp_path / "acc.py", 5, "NNX709")  # the value's line, inside the statement
    unrelated = _diagnostic(tmp_path / "acc.py", 6, "NNX101")
    attribution = Attributor([on_store, unrelated], tmp_path, cwd=tmp_path).attribute(verdict)
    assert attribution.summary(tmp_path) == ("explained by NNX709 at acc.py:5 (stores `_param_dtypes`, named by the "
                                             "failing value's path grad_accumulator._param_dtypes['bias'])")
    assert [m.diagnostic.code for m in attribution.matches] == ["NNX709"]
    # A copy of the class in another module (sorted first) ranks after the module the failing test imports.
    (tmp_path / "a_copy.py").write_text((tmp_path / "acc.py").read_text())
    (tmp_path / "t.py").write_text("import acc\n\ndef test_x():\n    step(acc)\n")
    failure.frames[0] = Frame(str(tmp_path / "t.py"), 4, "test_x")
    copy = _diagnostic(tmp_path / "a_copy.py", 5, "NNX709")
    ranked = Attributor([copy, on_store], tmp_path, cwd=tmp_path).attribute(verdict).matches
    assert [Path(m.diagnostic.path).name for m in ranked] == ["acc.py", "a_copy.py"]
    # A frame match wins; and a message without a path explains nothing this way.
    at_frame = _diagnostic(tmp_path / "t.py", 4, "NNX104")
    assert Attributor([on_store, at_frame], tmp_path, cwd=tmp_path).attribute(verdict).matches[0].how == "at"
    no_path = dataclasses.replace(verdict, tree=TestResult("t.py::test_x", "failed", failure=dataclasses.replace(
        failure, message="Error interpreting argument as an abstract array.")))
    assert not Attributor([on_store], tmp_path, cwd=tmp_path).attribute(no_path).explained


#: flax 0.12.8's error for a tied weight passed to ``nnx.jit`` in Tree Mode (``Tied`` in the test below).
_TIED_ERROR = ("Duplicate Param( # 4 (16 B)\n  value=Array([[ 0.7567299 , -0.68570054],\n         [-0.5688337 , "
               "-0.8757605 ]], dtype=float32)\n)\nfound at paths:\n\n  - .args[0].a.kernel\n  - .args[0].b.kernel\n\n"
               "nnx.jit with graph_updates=False does not support Variable aliasing (duplicate inputs, duplicate "
               "outputs, or input Variables returned as outputs). Consider the following options:\n\n1. Remove the "
               "duplicate Variables.")


def test_an_aliasing_error_is_explained_by_the_finding_that_names_its_paths(tmp_path):
    """flax raises inside ``nnx.jit``, under the test's call, far from the ``__init__`` that tied the weights:
    the paths it names are the NNX101 finding's, and no other finding's (nor a frame match) wins over them."""
    (tmp_path / "models.py").write_text(textwrap.dedent("""\
        from flax import nnx

        class Tied(nnx.Module):
            def __init__(self, rngs):
                self.a = nnx.Linear(2, 2, rngs=rngs)
                self.b = nnx.Linear(2, 2, rngs=rngs)
                self.b.kernel = self.a.kernel

        class Other(nnx.Module):
            def __init__(self, rngs):
                self.c = nnx.Linear(2, 2, rngs=rngs)
                self.d = self.c
        """))
    (tmp_path / "t.py").write_text("def test_x():\n    step(Tied(nnx.Rngs(0)), x)\n")
    diagnostics = main_diagnostics(tmp_path)
    assert sorted(d.code for d in diagnostics) == ["NNX101", "NNX101"]
    at_frame = _diagnostic(tmp_path / "t.py", 2, "NNX304")
    failure = Failure("builtins.ValueError", _TIED_ERROR, category="aliasing",
                      frames=[Frame(str(tmp_path / "t.py"), 2, "test_x")])
    verdict = Verdict("t.py::test_x", "tree-break", tree=TestResult("t.py::test_x", "failed", failure=failure))
    attribution = Attributor(diagnostics + [at_frame], tmp_path, cwd=tmp_path).attribute(verdict)
    assert attribution.summary(tmp_path) == (
        "explained by NNX101 at models.py:7 (its paths `a.kernel`, `b.kernel` are inside the paths the error names: "
        ".args[0].a.kernel, .args[0].b.kernel)")
    assert [(m.diagnostic.line, m.how) for m in attribution.matches] == [(7, "alias-paths")]
    # Paths that differ (``c``/``d``) explain nothing; without the tie the frame match is all there is.
    other = [d for d in diagnostics if d.line != 7]
    assert Attributor(other + [at_frame], tmp_path, cwd=tmp_path).attribute(verdict).matches[0].how == "at"


def main_diagnostics(root: Path) -> list[Diagnostic]:
    """The project's diagnostics, as the gate lints it."""
    from nnx_lint.gate.attribution import lint_project
    return lint_project(root, None)


def test_every_shared_reference_rule_declares_the_facts_that_hold_its_paths():
    """The gate reads a finding's paths from the facts its rule declares (``Facts.paths``); a declared
    name that is not a fact would silently match nothing."""
    from nnx_lint.engine.registry import all_rules
    rules = [rule for rule in all_rules() if rule.code.startswith("NNX1")]
    assert len(rules) >= 12
    for rule in rules:
        declared = rule.facts_type.paths
        assert declared, rule.code
        stored = {key for key, _name in rule.facts_type.keys_and_fields()}
        assert {name for group in declared for name in group} <= stored, rule.code


def test_dependency_frames_leave_out_flax_jax_and_files_outside_installed_packages(tmp_path):
    from nnx_lint.gate.dependencies import dependency_frames, installed_location

    site = tmp_path / "lib" / "site-packages"
    failure = Failure("E", "m", frames=[
        Frame(str(tmp_path / "project" / "a.py"), 1, "f"), Frame(str(site / "qwix" / "_src" / "model.py"), 2, "g"),
        Frame(str(site / "flax" / "nnx" / "module.py"), 3, "h"), Frame(str(site / "jax" / "_src" / "api.py"), 4, "i"),
        Frame(str(site / "single_module.py"), 5, "j")])
    assert [frame.function for frame in dependency_frames(failure)] == ["g", "j"]
    assert installed_location(str(site / "qwix" / "_src" / "model.py")) == (site, "qwix")
    assert installed_location(str(site / "single_module.py")) == (site, "single_module")
    assert installed_location(str(tmp_path / "project" / "a.py")) is None


# ---------------------------------------------------------------- baseline and exit status


def test_baseline_round_trip_and_errors(tmp_path):
    path = tmp_path / "gate-baseline.json"
    write_baseline(path, {"b.py::t", "a.py::t"}, WriteScope.of(path.parent))
    assert json.loads(path.read_text())["tree_mode_breaks"] == ["a.py::t", "b.py::t"]
    assert read_baseline(path) == {"a.py::t", "b.py::t"}
    (tmp_path / "bad.json").write_text('{"tool": "something else"}')
    with pytest.raises(BaselineError, match="not an nnx-lint gate baseline"):
        read_baseline(tmp_path / "bad.json")
    with pytest.raises(BaselineError, match="cannot read"):
        read_baseline(tmp_path / "missing.json")


def test_exit_status_rules():
    assert exit_status([], set(), set()) == EXIT_CLEAN
    assert exit_status([], {"a"}, set()) == EXIT_BREAKS
    assert exit_status([], {"a"}, {"a", "gone"}) == EXIT_CLEAN
    assert exit_status(["the graph mode run crashed"], {"a"}, set()) == EXIT_ERROR


def test_split_test_command_only_for_gate():
    assert split_test_command(["gate", ".", "--", "pytest", "-x", "--", "y"]) == (
        ["gate", "."], ["pytest", "-x", "--", "y"])
    assert split_test_command(["check", "--", "-a.py"]) == (["check", "--", "-a.py"], None)


# ---------------------------------------------------------------- end to end on tiny flax-free projects

# The tests read the mode from the environment, as flax does, so that "breaks in Tree Mode"
# costs no flax import. test_order is polluted by test_pollute, and only in "Tree Mode".
ENVIRONMENT_PROJECT = {
    "pytest.ini": "[pytest]\npython_files = check_*.py\n",
    "state.py": "POLLUTED = []\n",
    "check_env.py": textwrap.dedent("""\
        import os

        import state

        TREE = os.environ.get("NNX_GRAPH_MODE") == "false"


        def test_break():
            if TREE:
                raise ValueError("does not support Variable aliasing")


        def test_pass():
            pass


        def test_pollute():
            state.POLLUTED.append(1)
            if TREE:
                raise RuntimeError("broke before cleaning up")
            state.POLLUTED.clear()


        def test_order():
            assert not state.POLLUTED
        """),
}


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _gate(root: Path, *arguments: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nnx_lint.cli", "gate", *arguments], cwd=root, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.slow
def test_environment_project_verdicts_baseline_and_formats(tmp_path):
    root = _write(tmp_path, ENVIRONMENT_PROJECT)
    done = _gate(root, ".", "--output-format", "json", "--write-baseline", str(tmp_path / "base.json"))
    report = json.loads(done.stdout)
    assert [item["nodeid"] for item in report["tree_breaks"]] == [
        "check_env.py::test_break", "check_env.py::test_pollute"]
    assert [item["nodeid"] for item in report["order_dependent"]] == ["check_env.py::test_order"]
    assert report["tree_breaks"][0]["alone_tree"]["exception"]["category"] == "aliasing"
    assert report["summary"]["reruns"] == 5  # three alone in Tree Mode, two alone in graph mode
    assert report["summary"]["warm_reruns"] == 5  # forked from the per-mode server
    assert done.returncode == EXIT_CLEAN  # --write-baseline accepts what it wrote
    assert read_baseline(tmp_path / "base.json") == {"check_env.py::test_break", "check_env.py::test_pollute"}
    assert "\r" not in done.stderr  # no line rewritten in place when stderr is not a TTY (log lines instead)

    (tmp_path / "partial.json").write_text(json.dumps(
        {"tool": "nnx-lint gate", "version": 1, "tree_mode_breaks": ["check_env.py::test_break", "check_env.py::old"]}))
    # Only two tests this time, to keep it cheap: the command's own selection is honoured.
    # And the re-runs start cold (fresh processes) instead of forking from the warm server.
    done = _gate(root, ".", "--baseline", str(tmp_path / "partial.json"), "-n", "2", "--no-warm-reruns",
                 "--output-format", "json", "--", sys.executable, "-m", "pytest", "-k", "test_break or test_pass")
    cold = json.loads(done.stdout)
    assert [item["nodeid"] for item in cold["tree_breaks"]] == ["check_env.py::test_break"]
    assert cold["tree_breaks"][0]["alone_graph"]["outcome"] == "passed"
    assert cold["summary"]["reruns"] == 2 and cold["summary"]["warm_reruns"] == 0
    assert done.returncode == EXIT_CLEAN, done.stdout + done.stderr
    text = render(cold, "text")
    assert "check_env.py::test_break [baseline]" in text
    assert "test_pollute" not in text
    assert "no longer breaking (1): check_env.py::old" in text
    if not gate_command.importlib.util.find_spec("xdist"):
        assert "-n 2 ignored: pytest-xdist is not installed" in text

    markdown = render(report, "markdown")
    assert markdown.startswith("## nnx-lint gate: ")
    # The tests' text goes through the one Markdown escape (issue 44): `_`, `[`, `]` as character references.
    assert (f"| {markdown_cell('check_env.py::test_break')} (baseline) | "
            f"{markdown_cell('ValueError [aliasing]: does not support Variable aliasing')} |" in markdown)


@pytest.mark.slow
def test_junit_fallback_runs_both_modes_without_reruns(tmp_path):
    root = _write(tmp_path, ENVIRONMENT_PROJECT)
    done = _gate(root, ".", "--output-format", "json", "--", sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                 "--junitxml={junit}")
    report = json.loads(done.stdout)
    # pytest's junit XML names a test by class name (here the module) and name, not by node id.
    assert {item["nodeid"] for item in report["not_isolated"]} == {
        "check_env::test_break", "check_env::test_pollute", "check_env::test_order"}
    assert all(item["note"] == "re-runs need a pytest command" for item in report["not_isolated"])
    assert done.returncode == EXIT_BREAKS


def test_command_that_cannot_start_exits_2(tmp_path):
    done = _gate(tmp_path, ".", "--", str(tmp_path / "no-such-command"), "-x")
    assert done.returncode == EXIT_ERROR
    assert "problem: the test command could not start" in done.stdout


@pytest.mark.slow
def test_collection_error_exits_2_and_names_the_module(tmp_path):
    root = _write(tmp_path, {"pytest.ini": "[pytest]\npython_files = check_*.py\n",
                             "check_ok.py": "def test_ok():\n    pass\n",
                             "check_broken.py": "import no_such_module_anywhere\n"})
    done = _gate(root, ".", "--output-format", "json")
    report = json.loads(done.stdout)
    assert done.returncode == EXIT_ERROR
    assert any("could not be collected in graph mode: check_broken.py" in p for p in report["problems"])
    assert [item["nodeid"] for item in report["fails_in_both_modes"]] == ["check_broken.py"]
    assert report["runs"]["tree"]["tests"] == 1  # the other module still ran


@pytest.mark.slow
def test_crash_of_a_whole_run_exits_2(tmp_path):
    root = _write(tmp_path, {"pytest.ini": "[pytest]\npython_files = check_*.py\n",
                             "check_crash.py": "import os\n\ndef test_ok():\n    pass\n\n"
                                               "def test_crash():\n    os._exit(3)\n"})
    done = _gate(root, ".", "--output-format", "json")
    report = json.loads(done.stdout)
    assert done.returncode == EXIT_ERROR
    assert report["runs"]["graph"]["status"] == "crashed"
    assert any("crashed (exit status 3)" in problem for problem in report["problems"])


SLOW_PROJECT = {
    "pytest.ini": "[pytest]\npython_files = check_*.py\n",
    "check_slow.py": textwrap.dedent("""\
        import os
        import subprocess
        import sys
        import time


        def test_slow():
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
            with open(os.environ["PID_FILE"], "w") as stream:
                stream.write(str(child.pid))
            time.sleep(120)
        """),
}


def _wait_for(path: Path, seconds: float = 120) -> int:
    limit = time.monotonic() + seconds
    while time.monotonic() < limit:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.2)
    raise AssertionError(f"{path} never appeared")


def _gone(pid: int, seconds: float = 15) -> bool:
    limit = time.monotonic() + seconds
    while time.monotonic() < limit:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


@pytest.mark.slow
def test_time_budget_stops_the_whole_process_group(tmp_path):
    root = _write(tmp_path / "p", SLOW_PROJECT)
    environment = {**os.environ, "PID_FILE": str(tmp_path / "pid")}
    done = subprocess.run([sys.executable, "-m", "nnx_lint.cli", "gate", ".", "--timeout", "8"], cwd=root,
                          capture_output=True, text=True, timeout=300, env=environment)
    assert done.returncode == EXIT_ERROR
    assert "was stopped at the time budget" in done.stdout
    assert _gone(int((tmp_path / "pid").read_text()))  # the test's own child was killed too


def _default_sigint() -> None:
    """In the gate's process: SIGINT raises KeyboardInterrupt, however the test run was started. A job a
    non-interactive shell starts in the background (``bash .ci/run &``) ignores SIGINT, and a child inherits
    that: the gate would then never see the Ctrl-C this test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_ctrl_c_reports_and_exits_2(tmp_path):
    root = _write(tmp_path / "p", SLOW_PROJECT)
    environment = {**os.environ, "PID_FILE": str(tmp_path / "pid")}
    gate = subprocess.Popen([sys.executable, "-m", "nnx_lint.cli", "gate", "."], cwd=root, env=environment,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint)
    child = _wait_for(tmp_path / "pid")
    gate.send_signal(signal.SIGINT)
    stdout, _ = gate.communicate(timeout=60)
    assert gate.returncode == EXIT_ERROR
    assert "interrupted (Ctrl-C)" in stdout
    assert _gone(child)


def test_missing_flax_is_a_clear_usage_error(tmp_path, monkeypatch, capsys):
    real_find_spec = gate_command.importlib.util.find_spec
    monkeypatch.setattr(gate_command.importlib.util, "find_spec",
                        lambda name, *a: None if name == "flax" else real_find_spec(name, *a))
    assert main(["gate", str(tmp_path)]) == EXIT_ERROR
    assert "flax is not installed" in capsys.readouterr().err


def test_unknown_selector_and_missing_path_are_usage_errors(tmp_path, capsys):
    assert main(["gate", str(tmp_path), "--select", "NNX999"]) == EXIT_ERROR
    assert main(["gate", str(tmp_path / "nowhere")]) == EXIT_ERROR
    assert "no such file" in capsys.readouterr().err


@pytest.mark.slow
def test_main_suite_does_not_collect_the_gate_fixture_project():
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "tests/fixtures_gate"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 5, done.stdout  # 5: no tests collected


# ---------------------------------------------------------------- run checks and progress


def test_flax_missing_in_the_test_process_and_a_mode_that_did_not_take_effect_are_problems():
    from nnx_lint.gate.classify import GateOutcome, _check_runs
    from nnx_lint.gate.results import RunResults
    from nnx_lint.gate.runner import RunRecord

    outcome = GateOutcome()
    outcome.runs["graph"] = RunRecord("graph", ["pytest"], "finished",
                                      RunResults(finished=True, saw_session=True, flax_version=None))
    outcome.runs["tree"] = RunRecord("tree", ["pytest"], "finished", RunResults(
        finished=True, saw_session=True, flax_version="0.12.8",
        flax_config={"nnx_graph_mode": True, "nnx_graph_updates": True}))
    _check_runs(outcome)
    assert any(problem.startswith("flax is not installed in the test command's Python") for problem in outcome.problems)
    assert any("the Tree Mode run did not run in Tree Mode" in problem for problem in outcome.problems)


def test_progress_line_only_when_enabled(capsys):
    from nnx_lint.gate.runner import Progress

    Progress(enabled=False, log=False).show("graph mode run", 3, 10)
    assert capsys.readouterr().err == ""
    progress = Progress(enabled=True, log=False)
    progress.show("graph mode run", 3, 10)
    progress.show("Tree Mode run", 4, None)
    err = capsys.readouterr().err
    assert "\rnnx-lint gate: graph mode run 3/10 tests, 0:00 elapsed" in err
    assert "Tree Mode run 4/? tests" in err


def test_findings_inside_passing_tests_by_node_id(tmp_path):
    from nnx_lint.gate.attribution import Attributor
    from nnx_lint.gate.classify import GateOutcome
    from nnx_lint.gate.results import RunResults
    from nnx_lint.gate.runner import RunRecord

    (tmp_path / "t.py").write_text(textwrap.dedent("""\
        class TestA:
            def test_ok(self):
                x = 1          # line 3

            def test_bad(self):
                y = 2          # line 6


        def test_param():
            z = 3              # line 10
        """))
    passed = {nodeid: TestResult(nodeid) for nodeid in ("t.py::TestA::test_ok", "t.py::test_param0")}
    failed = {"t.py::TestA::test_bad": TestResult("t.py::TestA::test_bad", "failed")}
    outcome = GateOutcome()
    for mode in ("graph", "tree"):
        outcome.runs[mode] = RunRecord(mode, ["pytest"], "finished", RunResults(tests={**passed, **failed}))
    cases = ((3, "NNX304"), (6, "NNX201"), (10, "NNX601"))
    diagnostics = [_diagnostic(tmp_path / "t.py", line, code) for line, code in cases]
    found = Attributor(diagnostics, tmp_path, cwd=tmp_path).findings_in_passing_tests(outcome, tmp_path)
    assert [(item.diagnostic.code, item.nodeids) for item in found] == [
        ("NNX304", ["t.py::TestA::test_ok"]), ("NNX601", ["t.py::test_param0"])]


@pytest.mark.slow
def test_the_warm_server_is_fork_safe_after_importing_flax():
    """The premise of warm re-runs, checked in a fresh process: no thread and no JAX backend after the imports."""
    pytest.importorskip("flax")
    program = ("import pytest, flax.nnx\nfrom nnx_lint.gate.warm import fork_unsafe_reason\n"
               "import jax.numpy as jnp\nprint(fork_unsafe_reason())\njnp.ones(1)\nprint(fork_unsafe_reason())")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300)
    assert done.stdout.splitlines() == ["None", "the JAX backend is already initialised"], done.stderr


def test_diagnostics_in_test_joins_the_body_and_optionally_the_same_file_code_the_test_uses(tmp_path):
    """The body join sees only the test function; the helpers join follows names, ``self.`` methods and setUp."""
    (tmp_path / "t.py").write_text(textwrap.dedent("""\
        def build():
            return 1           # line 2

        def unused():
            return 2           # line 5

        class Model:
            def go(self):
                return build() # line 9

        class TestA:
            def setUp(self):
                self.x = 0     # line 13

            def helper(self):
                return Model() # line 16

            def other(self):
                return 3       # line 19

            def test_a(self):
                self.helper()  # line 22
        """))
    cases = ((2, "NNX101"), (5, "NNX102"), (9, "NNX103"), (13, "NNX104"), (16, "NNX105"), (19, "NNX106"),
             (22, "NNX107"))
    diagnostics = [_diagnostic(tmp_path / "t.py", line, code) for line, code in cases]
    attributor = Attributor(diagnostics, tmp_path, cwd=tmp_path)
    assert [d.code for d in attributor.diagnostics_in_test("t.py::TestA::test_a", tmp_path)] == ["NNX107"]
    # absltest's parameterized instance test_a0 is the function test_a.
    with_helpers = attributor.diagnostics_in_test("t.py::TestA::test_a0", tmp_path, helpers=True)
    assert sorted(d.code for d in with_helpers) == ["NNX101", "NNX103", "NNX104", "NNX105", "NNX107"]
    # ... and absltest's named instance test_a_graph too.
    assert [d.code for d in attributor.diagnostics_in_test("t.py::TestA::test_a_graph", tmp_path)] == ["NNX107"]
    assert attributor.diagnostics_in_test("t.py", tmp_path, helpers=True) == []
    assert attributor.diagnostics_in_test("t.py::TestA::test_missing", tmp_path) == []
