"""Each object flow of issue 43 has a fixture, modelled on a real idiom, that its rule finds through
the object-flow model, and that really breaks (or silently changes) in Tree Mode; the look-alikes
(a fresh ``fork()``, an object inside a plain Python class, a re-store of the same value, a
flag-guarded write whose flag no caller passes) stay silent and run the same in both modes.

Every fixture is run with flax in both modes, in one interpreter per mode: graph mode (the default),
and Tree Mode (``NNX_GRAPH_MODE=false NNX_GRAPH_UPDATES=false``, and the fixture's own ``tree``
argument). A fixture that prints one line per class (``Name ok`` / ``Name ValueError ...``) must
raise in Tree Mode for exactly the classes that hold a marked line: the markers the linter is held
to are the breaks flax shows."""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys

import pytest
from _support import FIXTURES, fixture_expectations, lint_fixture

#: Runs flax in two subprocesses (see CONTRIBUTING.md): outside the quick loop.
pytestmark = pytest.mark.slow

SHARED = FIXTURES / "shared_references"
UPDATES = FIXTURES / "graph_updates"

#: flow -> fixture that shows it, found by its rule (the marked lines) in the model's answers.
FLOWS = {
    "assignment, unpacking, loads through self, setattr with a constant name":
        SHARED / "NNX105_flow_assignments_and_stores.py",
    "calls and returns: functions, methods, decorators, lambdas, partial, *args/**kwargs, defaults":
        SHARED / "NNX105_flow_calls_and_returns.py",
    "base-class __init__ and super().__init__ in another file, builders and methods of other files":
        SHARED / "flows_pkg" / "NNX105_flow_bases_and_calls_in_other_files.py",
    "both sides of conditional expressions and branches; nnx.List/Dict/Sequential, list, dict, tuple":
        SHARED / "NNX105_flow_branches_and_containers.py",
    "x or y fallback to self.rngs; a fresh fork; an Rngs in a plain Python class":
        SHARED / "NNX105_rngs_through_a_default_and_a_plain_holder.py",
    "a transform stored on an attribute and called later; ModelAndOptimizer holds its model, Optimizer not":
        SHARED / "NNX107_transform_stored_on_an_attribute.py",
    "a struct's .replace(...) of its input returned by a transform":
        SHARED / "NNX104_struct_replace_returned.py",
    "nnx.ModelAndOptimizer passed beside the model it holds": SHARED / "NNX107_model_and_optimizer_with_model.py",
    "a re-store of the same value": UPDATES / "NNX301_restore_of_the_same_value.py",
    "a flag-guarded write whose flag no caller passes": UPDATES / "NNX301_write_under_a_flag_no_caller_passes.py",
}

#: What the fixtures that print values (not one line per class) print: (graph mode, Tree Mode).
PRINTED = {
    "NNX105_rngs_through_a_default_and_a_plain_holder.py": (
        ["ok", "ok", "ok"], ["ValueError Duplicate RngCount", "ok", "ok"]),
    "NNX104_struct_replace_returned.py": (["ok"], ["raised ValueError Duplicate Param"]),
    "NNX107_model_and_optimizer_with_model.py": (["1"], ["raised ValueError Duplicate Param"]),
    "NNX301_restore_of_the_same_value.py": (["False eval"], ["False train"]),
    "NNX301_write_under_a_flag_no_caller_passes.py": (["0 1"], ["0 0"]),
}

_DRIVER = """
import contextlib, io, json, runpy, sys
results = {}
for key, module, folder in json.loads(sys.argv[1]):
    sys.argv = [key] + sys.argv[2:3]
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        try:
            if module:
                sys.path.insert(0, folder)
                runpy.run_module(module, run_name="__main__")
            else:
                runpy.run_path(key, run_name="__main__")
        except Exception as error:
            print("raised", type(error).__name__, (str(error).splitlines() or [""])[0])
    results[key] = buffer.getvalue().splitlines()
print(json.dumps(results))
"""


def _run_all(tree: bool) -> dict[str, list[str]]:
    """Each fixture's printed lines, run as a script (or as its package's module) in one interpreter."""
    specs = []
    for path in FLOWS.values():
        package = path.parent if (path.parent / "__init__.py").exists() else None
        module = f"{package.name}.{path.stem}" if package else None
        specs.append((str(path), module, str(package.parent) if package else None))
    environment = dict(os.environ)
    if tree:
        environment.update(NNX_GRAPH_MODE="false", NNX_GRAPH_UPDATES="false")
    result = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps(specs)] + (["tree"] if tree else []),
                            env=environment, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def runs():
    pytest.importorskip("flax.nnx")
    pytest.importorskip("optax")
    return {"graph": _run_all(tree=False), "tree": _run_all(tree=True)}


def _marked_classes(path) -> dict[str, bool]:
    """Module-level class -> whether one of its lines carries an expected-finding marker."""
    marked_lines = {line for line, _code in fixture_expectations(path)}
    return {node.name: any(node.lineno <= line <= node.end_lineno for line in marked_lines)
            for node in ast.parse(path.read_text()).body if isinstance(node, ast.ClassDef)}


@pytest.mark.parametrize("flow", sorted(FLOWS))
def test_the_rule_finds_the_flow(flow):
    path = FLOWS[flow]
    expected = fixture_expectations(path)
    found = {(d.line, d.code) for d in lint_fixture(path)}
    assert expected, "a flow fixture marks what it shows"
    assert found == expected


@pytest.mark.parametrize("flow", sorted(FLOWS))
def test_the_flow_breaks_in_tree_mode_exactly_where_it_is_found(flow, runs):
    path = FLOWS[flow]
    graph, tree = runs["graph"][str(path)], runs["tree"][str(path)]
    if path.name in PRINTED:
        want_graph, want_tree = PRINTED[path.name]
        assert [line.split("(")[0].strip() for line in graph] == want_graph
        assert [line.split("(")[0].strip() for line in tree] == want_tree
        return
    marked = _marked_classes(path)
    printed_graph = dict(line.split(" ", 1) for line in graph)
    printed_tree = dict(line.split(" ", 1) for line in tree)
    reported = {name for name in marked if name in printed_tree}
    assert reported and set(printed_tree) <= set(marked), (graph, tree)
    for name in reported:
        assert "ValueError" not in printed_graph[name], (name, printed_graph[name])
        breaks = re.match(r"ValueError Duplicate (RngCount|Param)", printed_tree[name]) is not None
        assert breaks == marked[name], (name, printed_tree[name])
