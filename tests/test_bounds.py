"""Bounded cost per file, and one bad file never costs the others (issue 10, items 6-8).

Each attack runs as a user would meet it: the CLI on a directory holding the bad input
next to a good file, which must still be linted. Memory bounds are enforced with an
address-space limit on the subprocess (the attacks that used gigabytes fail fast under
it); hangs are caught by the subprocess timeout. No test measures speed: the cost of
lookups is asserted as a count of function calls, which is deterministic.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from _support import REPO, calls_to_lint

from nnx_lint.base import bounds
from nnx_lint.engine.walk import lint_bytes, lint_source
from nnx_lint.base.lines import physical_lines
from nnx_lint.engine.registry import all_rules

STATE_AXES = "from flax import nnx\nf = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"
#: Far more than nnx-lint needs on these inputs, far less than the attacks took on the old main.
ADDRESS_SPACE = 1 << 30


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def check(directory: Path, *args: str, timeout: float = 120) -> tuple[int, list[dict], str]:
    """``nnx-lint check`` in a subprocess with bounded memory; (exit code, JSON diagnostics, stderr)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-m", "nnx_lint.cli", "check", ".", "--no-cache", "-j", "1", "--output-format", "json", *args],
        cwd=directory, capture_output=True, text=True, env=env, timeout=timeout, preexec_fn=_limit_memory,
    )
    diagnostics = json.loads(result.stdout) if result.stdout.strip().startswith("[") else []
    return result.returncode, diagnostics, result.stderr


def by_file(diagnostics: list[dict]) -> dict[str, list[tuple[str, str]]]:
    found: dict[str, list[tuple[str, str]]] = {}
    for d in diagnostics:
        found.setdefault(os.path.normpath(d["filename"]), []).append((d["code"], d["message"]))
    return found


@pytest.fixture
def tree(tmp_path):
    """A directory with one good file (one NNX201) beside the bad inputs a test adds."""
    (tmp_path / "good.py").write_text(STATE_AXES)
    return tmp_path


def assert_good_file_linted(found: dict) -> None:
    assert [code for code, _ in found.get("good.py", [])] == ["NNX201"], found


# -- non-regular files -------------------------------------------------------------------


def test_fifo_named_py_is_reported_and_never_opened(tree):
    os.mkfifo(tree / "pipe.py")
    code, diagnostics, stderr = check(tree, timeout=60)  # the old main blocked here forever
    found = by_file(diagnostics)
    assert code == 1, stderr
    ((rule, message),) = found["pipe.py"]
    assert rule == "NNX001" and "FIFO" in message
    assert_good_file_linted(found)


@pytest.mark.slow
def test_symlink_to_dev_zero_is_reported_and_never_read(tree):
    (tree / "zero.py").symlink_to("/dev/zero")
    code, diagnostics, stderr = check(tree, timeout=60)  # the old main read 1.9 GB
    found = by_file(diagnostics)
    assert code == 1, stderr
    ((rule, message),) = found["zero.py"]
    assert rule == "NNX001" and "character device" in message
    assert_good_file_linted(found)


def test_symlink_loop_is_reported_for_that_file_only(tree):
    (tree / "loop.py").symlink_to("loop.py")
    (tree / "dangling.py").symlink_to("nowhere.py")
    code, diagnostics, stderr = check(tree)  # the old main: "internal error", exit 2
    found = by_file(diagnostics)
    assert code == 1, stderr
    assert found["loop.py"] == [("NNX001", "cannot read file: Too many levels of symbolic links (a symlink loop)")]
    assert [rule for rule, _ in found["dangling.py"]] == ["NNX001"]
    assert_good_file_linted(found)


@pytest.mark.slow
def test_directory_named_like_a_module_is_searched_not_read(tree):
    (tree / "pkg.py").mkdir()
    (tree / "pkg.py" / "inner.py").write_text(STATE_AXES)
    code, diagnostics, stderr = check(tree)
    found = by_file(diagnostics)
    assert code == 1, stderr
    assert [rule for rule, _ in found[os.path.join("pkg.py", "inner.py")]] == ["NNX201"]
    assert_good_file_linted(found)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_unreadable_file_is_reported_for_that_file_only(tree):
    secret = tree / "secret.py"
    secret.write_text(STATE_AXES)
    secret.chmod(0)
    code, diagnostics, _ = check(tree)
    found = by_file(diagnostics)
    assert [rule for rule, _ in found["secret.py"]] == ["NNX001"]
    assert_good_file_linted(found)


def test_a_fifo_is_refused_by_the_reader_itself(tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    with pytest.raises(bounds.ParseFailure, match="FIFO"):
        bounds.read_bounded(tmp_path / "pipe.py")


# -- size ----------------------------------------------------------------------------------


def _sparse(path: Path, head: bytes, size: int) -> Path:
    with open(path, "wb") as handle:
        handle.write(head)
        handle.truncate(size)  # a hole: no disk used, but reading it whole costs `size` bytes
    return path


def test_reader_reads_at_most_cap_plus_one_bytes(tmp_path, monkeypatch):
    big = _sparse(tmp_path / "big.py", b"from flax import nnx\n", 64 << 20)
    read = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: read.append(n) or real_read(fd, n))
    data = bounds.read_bounded(big, 1000)
    assert len(data) == 1001 and sum(read) <= 1001
    assert data.startswith(b"from flax import nnx")


@pytest.mark.slow
def test_huge_file_costs_neither_memory_nor_the_other_files(tree):
    _sparse(tree / "huge.py", b"from flax import nnx\n", 2 << 30)  # 2 GiB > the address-space limit
    (tree / "huge_helper.py").write_text("from huge import nnx\nf = nnx.vmap(g)\n")
    code, diagnostics, stderr = check(tree)
    found = by_file(diagnostics)
    assert code == 1, stderr
    ((rule, message),) = found["huge.py"]
    assert rule == "NNX004" and "4 MiB limit" in message
    assert_good_file_linted(found)


def test_token_budget_is_checked_before_any_tree_is_built(monkeypatch):
    from nnx_lint.analysis import parsing

    def build(*args, **kwargs):
        raise AssertionError("a file over the budget must not reach astroid")

    monkeypatch.setattr(parsing, "build", build)
    monkeypatch.setattr(bounds, "LIMITS", bounds.Limits(source_units=1000))
    source = "from flax import nnx\n" + "a\n" * 1000
    (diagnostic,) = lint_source(source, "m.py", all_rules())
    assert diagnostic.code == "NNX004" and "analysis budget exceeded" in diagnostic.message


@pytest.mark.slow
def test_a_million_short_lines_are_over_the_default_budget(tree):
    (tree / "lines.py").write_text("from flax import nnx\n" + "a\n" * 1_000_000)  # 3 GB on the old main
    code, diagnostics, stderr = check(tree)
    found = by_file(diagnostics)
    assert code == 1, stderr
    ((rule, message),) = found["lines.py"]
    assert rule == "NNX004" and "analysis budget exceeded" in message
    assert_good_file_linted(found)


def test_time_budget_stops_the_walk_and_reports_it(monkeypatch):
    monkeypatch.setattr(bounds, "LIMITS", bounds.Limits(analysis_seconds=0))
    (diagnostic,) = lint_source(STATE_AXES, "m.py", all_rules())
    assert diagnostic.code == "NNX004" and "took over 0 s" in diagnostic.message


def test_budget_diagnostic_is_the_same_in_every_front_end(tmp_path, monkeypatch, capsys):
    from nnx_lint.flake8 import NNXFlake8Plugin

    monkeypatch.setattr(NNXFlake8Plugin, "selected_codes", None)
    from pylint.lint import Run

    monkeypatch.setattr(bounds, "LIMITS", bounds.Limits(source_units=100))
    path = tmp_path / "generated.py"
    path.write_text(STATE_AXES + "a\n" * 100)
    cli = lint_bytes(path.read_bytes(), str(path), all_rules())
    flake8 = _flake8_plugin_findings(path, "--select", "NNX")
    Run([str(path), "--load-plugins=nnx_lint.pylint", "--disable=all", "--enable=nnx", "--persistent=n",
         "--output-format=json", "--jobs=1"], exit=False)
    pylint = [(m["line"], m["symbol"]) for m in json.loads(capsys.readouterr().out)]
    assert [(d.line, d.code) for d in cli] == [(1, "NNX004")]
    assert flake8 == [(1, "NNX004")]
    assert pylint == [(1, "analysis-skipped")]


# -- notebooks -----------------------------------------------------------------------------


def _cell(source) -> dict:
    return {"cell_type": "code", "source": source, "metadata": {}, "outputs": []}


GOOD_NOTEBOOK = {"cells": [_cell(["from flax import nnx\n", "f = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"])],
                 "metadata": {}, "nbformat": 4, "nbformat_minor": 5}

MALFORMED_NOTEBOOKS = {
    "cells-is-a-number": json.dumps({"cells": 5, "nnx": 1}).encode(),
    "cells-is-a-table": json.dumps({"cells": {"a": "nnx"}}).encode(),
    "no-cells": json.dumps({"worksheets": [{"cells": [_cell("import nnx")]}]}).encode(),
    "top-level-list": json.dumps([_cell("from flax import nnx")]).encode(),
    "source-is-a-number": json.dumps({"cells": [_cell(5), _cell("from flax import nnx")]}).encode(),
    "source-lines-not-text": json.dumps({"cells": [_cell(["from flax import nnx\n", 3])]}).encode(),
    "source-is-a-table": json.dumps({"cells": [_cell({"nnx": 1})]}).encode(),
    "deeply-nested": b'{"nnx": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "invalid-json": b'{"cells": [nnx',
    "not-utf8": json.dumps(GOOD_NOTEBOOK).encode().replace(b"g, in_axes", b"\xff, in_axes"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED_NOTEBOOKS))
def test_malformed_notebook_is_one_nnx001(name):
    (diagnostic,) = lint_bytes(MALFORMED_NOTEBOOKS[name], f"{name}.ipynb", all_rules())
    assert diagnostic.code == "NNX001" and diagnostic.message.startswith("cannot read notebook")


def test_notebook_with_a_bom_is_linted():
    data = b"\xef\xbb\xbf" + json.dumps(GOOD_NOTEBOOK).encode()
    assert [d.code for d in lint_bytes(data, "bom.ipynb", all_rules())] == ["NNX201"]


@pytest.mark.slow
def test_malformed_notebooks_cost_only_themselves(tree):
    for name, data in MALFORMED_NOTEBOOKS.items():
        (tree / f"{name}.ipynb").write_bytes(data)
    (tree / "fine.ipynb").write_text(json.dumps(GOOD_NOTEBOOK))
    code, diagnostics, stderr = check(tree)  # the old main: "internal error", exit 2, nothing else
    found = by_file(diagnostics)
    assert code == 1 and "internal error" not in stderr, stderr
    for name in MALFORMED_NOTEBOOKS:
        assert [rule for rule, _ in found[f"{name}.ipynb"]] == ["NNX001"], name
    assert [rule for rule, _ in found["fine.ipynb"]] == ["NNX201"]
    assert_good_file_linted(found)


def test_notebook_size_caps_cover_the_file_and_its_code(monkeypatch):
    data = json.dumps(GOOD_NOTEBOOK).encode()
    monkeypatch.setattr(bounds, "LIMITS", bounds.Limits(notebook_bytes=len(data) - 1))
    (diagnostic,) = lint_bytes(data, "n.ipynb", all_rules())
    assert diagnostic.code == "NNX004" and "notebook is over" in diagnostic.message
    monkeypatch.setattr(bounds, "LIMITS", bounds.Limits(source_bytes=40))
    (diagnostic,) = lint_bytes(data, "n.ipynb", all_rules())
    assert diagnostic.code == "NNX004" and "the notebook's code has" in diagnostic.message


def test_a_failure_outside_the_rules_costs_only_its_file(tree, monkeypatch):
    from nnx_lint.base import notebooks
    from nnx_lint.engine.config import Settings
    from nnx_lint.engine.runner import run

    def explode(data):
        raise RuntimeError("boom")

    monkeypatch.setattr(notebooks, "notebook_source", explode)
    (tree / "fine.ipynb").write_text(json.dumps(GOOD_NOTEBOOK))
    result = run([tree], Settings(root=tree), jobs=1)
    found = {(Path(d.path).name, d.code) for d in result.diagnostics}
    assert found == {("fine.ipynb", "NNX003"), ("good.py", "NNX201")}
    crash = next(d for d in result.diagnostics if d.code == "NNX003")
    assert "RuntimeError: boom" in crash.facts["traceback"]


# -- configuration ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        b'tool = "x"\n',
        b"[tool]\nnnx-lint = 3\n",
        b'[tool.nnx-lint]\nselect = ["NNX\xff"]\n',
        b"[tool.nnx-lint\n",
        b"[tool.nnx-lint]\nselect = 3\n",
        b'[tool.nnx-lint]\nper-file-ignores = { "a.py" = 3 }\n',
        b"[tool.nnx-lint]\nper-file-ignores = 3\n",
        b"[tool.nnx-lint]\nunknown = 1\n",
        b'[tool.nnx-lint]\nselect = ["NOPE"]\n',
        b"[tool.nnx-lint]\nx = " + b"[" * 5000 + b"]" * 5000 + b"\n",
    ],
)
def test_configuration_errors_exit_2_with_one_line(tree, content):
    (tree / "pyproject.toml").write_bytes(content)
    code, _, stderr = check(tree)  # the old main: a traceback and exit 1 for the first and third
    assert code == 2
    assert stderr.startswith("nnx-lint: error: ") and stderr.count("\n") == 1 and "Traceback" not in stderr


def test_a_fifo_named_pyproject_is_not_read(tree):
    os.mkfifo(tree / "pyproject.toml")
    code, diagnostics, stderr = check(tree, timeout=60)
    assert code == 1, stderr
    assert_good_file_linted(by_file(diagnostics))


# -- line numbers and noqa ---------------------------------------------------------------------


def test_physical_lines_follow_pythons_tokenizer():
    assert physical_lines("a  # x\x0cy\x0bz\x1c\x85\u2028\rb\r\nc\n") == ["a  # x\x0cy\x0bz\x1c\x85\u2028", "b", "c"]


NOQA_SOURCE = (
    "from flax import nnx\n"
    "# one page\x0canother page\x0b\n"
    "a = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))  # noqa: NNX201\n"
    "b = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"
    "c = nnx.vmap(  # noqa: NNX201 (covers its own line only)\n"
    "    g, in_axes=(nnx.StateAxes({...: 0}),))\n"
    "d = '# noqa'; e = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"
    "h = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),), name=\"\"\"\n"
    "a string's last line\"\"\")  # noqa: NNX201 (covers the whole string)\n"
)


def test_noqa_follows_the_tokenizer_in_the_engine():
    on_by_default = [rule for rule in all_rules() if rule.default_enabled]
    assert [d.line for d in lint_source(NOQA_SOURCE, "m.py", on_by_default)] == [4, 6, 7]
    # NNX009 judges each comment once, on its own line, over the whole run it covers.
    assert [(d.line, d.code) for d in lint_source(NOQA_SOURCE, "m.py", all_rules()) if d.code == "NNX009"] == [
        (5, "NNX009")
    ]


@pytest.mark.slow
def test_noqa_lines_agree_in_every_front_end(tmp_path):
    (tmp_path / "paged.py").write_text(NOQA_SOURCE)
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def run(*command):
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)

    flake8 = run(sys.executable, "-m", "flake8", "--select", "NNX", "--format", "%(row)d:%(code)s", "paged.py")
    pylint = run(sys.executable, "-m", "pylint", "--load-plugins=nnx_lint.pylint", "--disable=all", "--enable=nnx",
                 "--persistent=n", "--output-format=json", "paged.py")
    cli = run(sys.executable, "-m", "nnx_lint.cli", "check", "--no-cache", "--output-format", "json", "paged.py")
    cli_lines = sorted(d["location"]["row"] for d in json.loads(cli.stdout))
    pylint_lines = sorted(m["line"] for m in json.loads(pylint.stdout))
    # flake8 also counts `# noqa` inside a string (line 7); the tokenizer does not.
    flake8_lines = sorted(int(item.split(":")[0]) for item in flake8.stdout.split())
    assert cli_lines == pylint_lines == [4, 6, 7]
    assert flake8_lines == [4, 6]


# -- flake8 selection -------------------------------------------------------------------------


def _flake8_plugin_findings(path: Path, *options: str) -> list[tuple[int, str]]:
    """Run the flake8 plugin on ``path`` as flake8 does: options parsed by flake8 first."""
    from flake8.options.parse_args import parse_args

    from nnx_lint.flake8 import NNXFlake8Plugin

    parse_args([*options, str(path)])  # flake8 hands its options to the plugin (parse_options)
    lines = path.read_text().splitlines(True)
    return [(row, message.split()[0]) for row, _col, message, _ in NNXFlake8Plugin(None, str(path), lines).run()]


@pytest.fixture
def sample(tmp_path, monkeypatch):
    from nnx_lint.flake8 import NNXFlake8Plugin

    monkeypatch.setattr(NNXFlake8Plugin, "selected_codes", None)  # restored after the test
    path = tmp_path / "sample.py"
    path.write_text(STATE_AXES)
    return path


def test_flake8_without_nnx_selected_runs_no_analysis(sample, monkeypatch):
    import nnx_lint.engine.walk
    import nnx_lint.flake8

    def no_analysis(*args, **kwargs):
        raise AssertionError("flake8 --select E9 must not run nnx-lint's analysis")

    monkeypatch.setattr(nnx_lint.engine.walk, "lint_source", no_analysis)
    monkeypatch.setattr(nnx_lint.flake8, "lint_source", no_analysis, raising=False)
    assert _flake8_plugin_findings(sample, "--select", "E9") == []


@pytest.mark.parametrize(
    ("options", "expected"),
    [((), [(2, "NNX201")]), (("--select", "NNX"), [(2, "NNX201")]), (("--select", "NNX6"), []),
     (("--select", "E9", "--extend-select", "NNX2"), [(2, "NNX201")])],
)
def test_flake8_runs_the_selected_rules(sample, options, expected):
    assert _flake8_plugin_findings(sample, *options) == expected


# -- linear cost of redefinitions ---------------------------------------------------------------


def _calls_to_lint(source: str) -> int:
    return calls_to_lint(source, "redefinitions.py")


@pytest.mark.slow
def test_redefining_a_class_many_times_costs_linear_work():
    block = ("class M(nnx.Module):\n    def __init__(self, rngs):\n        self.a = self.b = nnx.Linear(2, 2, rngs=rngs)\n"
             "m = M(nnx.Rngs(0))\nnnx.jit(lambda m: m)(m)\n")
    small, large = (_calls_to_lint("from flax import nnx\n" + block * n) for n in (120, 360))
    # Linear work triples with three times the definitions; the old quadratic lookups made it 7-9x.
    assert large / small < 4.5, (small, large)


def test_the_documented_limits_are_the_limits_in_force():
    from checkers.linter_errors.nnx004_analysis_skipped import AnalysisSkipped

    limits = bounds.Limits()
    doc = " ".join((AnalysisSkipped.__doc__ or "").split())
    assert f"{limits.source_bytes >> 20} MiB" in doc and f"{limits.notebook_bytes >> 20} MiB" in doc
    assert f"{limits.source_units:,}".replace(",", " ") + " tokens and lines" in doc
    assert f"{limits.analysis_seconds:g} seconds" in doc
    assert f"{limits.replay_steps:,}".replace(",", " ") + " steps" in doc
    assert f"{limits.imported_units:,}".replace(",", " ") + " tokens and lines in all" in doc
    assert limits.import_share == 0.5 and "half of the file's time" in doc


def test_the_analysed_files_own_warnings_are_not_printed():
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lint_source('from flax import nnx\nx = "a"()\ny = "\\d"\n', "m.py", all_rules())
    assert [w for w in caught if issubclass(w.category, (SyntaxWarning, DeprecationWarning))] == []


def test_fast_lookup_agrees_with_astroid_on_many_redefinitions():
    from astroid import nodes

    from nnx_lint.analysis import parsing
    from nnx_lint.analysis.flow import MANY_BINDINGS, lookup

    count = MANY_BINDINGS + 50
    lines = ["import flax"]
    for index in range(count):
        lines += [f"x = {index}", "y = x", "x = x + 1", "class C:\n    pass", "c = C"]
    lines += ["def f():\n    return x, C"]
    module = parsing.build("\n".join(lines) + "\n", "m.py", "m")
    uses = [n for n in module.nodes_of_class(nodes.Name) if n.name in ("x", "C")]
    assert len(module.locals["x"]) > MANY_BINDINGS
    for use in uses:
        assert lookup(use)[1] == use.lookup(use.name)[1], use.as_string()
