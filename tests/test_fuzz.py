"""Fuzzing: no input makes nnx-lint fail internally, hang, or exit outside its contract.

Two sources of input:

- programs generated from Python's grammar by ``hypothesmith`` (``from_grammar``, and
  ``from_node`` for programs that compile), alone and spliced into the repository's
  fixtures, so that the rules see arbitrary syntax next to NNX code;
- the repository's own fixtures (``tests/fixtures/**/*.py``, and notebooks built from
  them) mutated byte- and line-wise: lines dropped, duplicated or swapped, the file
  truncated, random bytes inserted.

Most examples run through the engine directly (cheap); a small sample runs through the
CLI, flake8 and pylint as subprocesses. "No internal error" means no NNX003 (a rule or
nnx-lint itself failed), no traceback, and exit codes as documented (``check``: 0 or 1).
Each example has a deadline, on top of the engine's own time budget per file.

The default is small enough for every test run (about a minute here); set
``NNX_LINT_FUZZ_EXAMPLES=500`` for a longer, randomised run (the default run is
derandomised, so CI is deterministic). Needs the ``fuzz`` extra (hypothesis, hypothesmith).
"""
from __future__ import annotations

import ast
import importlib.util
import json
import os
import random
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from _support import FIXTURES, REPO

pytestmark = pytest.mark.slow  # fuzzing: hundreds of generated programs, and the CLI, flake8 and pylint on mutated files

hypothesis = pytest.importorskip("hypothesis", reason="fuzzing needs the `fuzz` extra: pip install -e '.[fuzz]'")
if importlib.util.find_spec("hypothesmith") is None:
    pytest.skip("fuzzing needs the `fuzz` extra: pip install -e '.[fuzz]'", allow_module_level=True)
from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from nnx_lint.base.diagnostic import Diagnostic  # noqa: E402
from nnx_lint.engine.walk import lint_bytes, lint_source  # noqa: E402
from nnx_lint.analysis.project import Project, module_name_for  # noqa: E402
from nnx_lint.engine.registry import all_rules  # noqa: E402

_REQUESTED = os.environ.get("NNX_LINT_FUZZ_EXAMPLES")
EXAMPLES = int(_REQUESTED) if _REQUESTED else 20
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=timedelta(seconds=60),
    derandomize=_REQUESTED is None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
RULES = all_rules()
CODES = {rule.code for rule in RULES}
FIXTURE_FILES = sorted(p for p in FIXTURES.rglob("*.py"))
NNX_HEADER = "from flax import nnx\n"


def _grammar_programs():
    import hypothesmith

    return hypothesmith.from_grammar()


def _compiling_programs():
    import hypothesmith

    return hypothesmith.from_node()


# Built when a test first draws from them: importing hypothesmith and building its grammar
# strategy take seconds, which every pytest session would otherwise pay in each worker's
# collection, the quick loop's too (this module is marked slow, but it is still imported).
GRAMMAR_PROGRAMS = st.deferred(_grammar_programs)
COMPILING_PROGRAMS = st.deferred(_compiling_programs)


def assert_no_internal_error(diagnostics: list[Diagnostic]) -> None:
    """Every diagnostic is a known rule's, well placed, and none says nnx-lint failed."""
    for diagnostic in diagnostics:
        assert diagnostic.code != "NNX003", diagnostic.facts.get("traceback", diagnostic.message)
        assert diagnostic.code in CODES, diagnostic
        assert diagnostic.line >= 1 and diagnostic.column >= 1, diagnostic


def lint_as_fixture(data: bytes, fixture: Path, suffix: str = ".py") -> list[Diagnostic]:
    """Lint ``data`` in place of ``fixture`` (its folder is the project: cross-file lookups run)."""
    family_root = FIXTURES / fixture.relative_to(FIXTURES).parts[0]
    module_name, root = module_name_for(fixture)
    project = Project([family_root])
    project.start_file(str(fixture), root)
    return lint_bytes(data, str(fixture.with_suffix(suffix)), RULES, project=project, module_name=module_name)


# -- mutations ------------------------------------------------------------------------------


def mutate(data: bytes, mutations: list[tuple]) -> bytes:
    """Apply line/byte mutations; positions are taken modulo the current size."""
    for kind, *arguments in mutations:
        lines = data.splitlines(keepends=True) or [b""]
        if kind == "drop":
            del lines[arguments[0] % len(lines)]
        elif kind == "duplicate":
            index = arguments[0] % len(lines)
            lines.insert(index, lines[index])
        elif kind == "swap":
            i, j = arguments[0] % len(lines), arguments[1] % len(lines)
            lines[i], lines[j] = lines[j], lines[i]
        if kind in ("drop", "duplicate", "swap"):
            data = b"".join(lines)
        elif kind == "truncate":
            data = data[: arguments[0] % (len(data) + 1)]
        elif kind == "insert":
            at = arguments[0] % (len(data) + 1)
            data = data[:at] + arguments[1] + data[at:]
    return data


_POSITION = st.integers(min_value=0, max_value=1 << 16)
MUTATION = st.one_of(
    st.tuples(st.just("drop"), _POSITION),
    st.tuples(st.just("duplicate"), _POSITION),
    st.tuples(st.just("swap"), _POSITION, _POSITION),
    st.tuples(st.just("truncate"), _POSITION),
    st.tuples(st.just("insert"), _POSITION, st.binary(min_size=1, max_size=12)),
)
MUTATIONS = st.lists(MUTATION, min_size=1, max_size=5)


def random_mutations(rng: random.Random) -> list[tuple]:
    """The same mutation kinds as :data:`MUTATIONS`, drawn from ``rng`` (for subprocess samples)."""
    chosen = []
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(["drop", "duplicate", "swap", "truncate", "insert"])
        if kind == "swap":
            chosen.append((kind, rng.randrange(1 << 16), rng.randrange(1 << 16)))
        elif kind == "insert":
            chosen.append((kind, rng.randrange(1 << 16), bytes(rng.randrange(256) for _ in range(rng.randint(1, 12)))))
        else:
            chosen.append((kind, rng.randrange(1 << 16)))
    return chosen


def notebook_of(source: bytes) -> bytes:
    """A notebook whose code cells are ``source`` cut at its blank lines (a markdown cell first)."""
    text = source.decode("utf-8", "replace")
    chunks = [chunk for chunk in text.split("\n\n") if chunk.strip()] or [text]
    cells = [{"cell_type": "markdown", "source": ["# nnx\n"], "metadata": {}}]
    cells += [{"cell_type": "code", "source": chunk.splitlines(keepends=True), "metadata": {}, "outputs": [],
               "execution_count": None} for chunk in chunks]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1).encode()


# -- engine ----------------------------------------------------------------------------------


@FUZZ
@given(program=GRAMMAR_PROGRAMS)
def test_grammar_programs(program):
    assert_no_internal_error(lint_source(NNX_HEADER + program, "generated.py", RULES))


@settings(FUZZ, max_examples=max(1, EXAMPLES // 4))
@given(program=COMPILING_PROGRAMS)
def test_compilable_programs(program):
    assert_no_internal_error(lint_source(NNX_HEADER + program, "generated.py", RULES))


@FUZZ
@given(fixture=st.sampled_from(FIXTURE_FILES), program=GRAMMAR_PROGRAMS, at=_POSITION)
def test_programs_spliced_into_fixtures(fixture, program, at):
    lines = fixture.read_bytes().splitlines(keepends=True)
    at %= len(lines) + 1
    data = b"".join(lines[:at]) + program.encode("utf-8", "surrogatepass") + b"\n" + b"".join(lines[at:])
    assert_no_internal_error(lint_as_fixture(data, fixture))


@FUZZ
@given(fixture=st.sampled_from(FIXTURE_FILES), mutations=MUTATIONS)
def test_mutated_fixtures(fixture, mutations):
    assert_no_internal_error(lint_as_fixture(mutate(fixture.read_bytes(), mutations), fixture))


LINE_MUTATION = st.one_of(
    st.tuples(st.just("drop"), _POSITION),
    st.tuples(st.just("duplicate"), _POSITION),
    st.tuples(st.just("swap"), _POSITION, _POSITION),
)


@FUZZ
@given(fixture=st.sampled_from(FIXTURE_FILES), mutations=st.lists(LINE_MUTATION, min_size=1, max_size=6))
def test_line_mutations_that_still_parse(fixture, mutations):
    """Mutants that still parse reach every rule (most byte-level mutants stop at NNX002)."""
    data = mutate(fixture.read_bytes(), mutations)
    try:
        ast.parse(data)
    except (SyntaxError, ValueError):
        assume(False)
    assert_no_internal_error(lint_as_fixture(data, fixture))


@FUZZ
@given(fixture=st.sampled_from(FIXTURE_FILES), mutations=MUTATIONS)
def test_mutated_notebooks(fixture, mutations):
    data = mutate(notebook_of(fixture.read_bytes()), mutations)
    assert_no_internal_error(lint_as_fixture(data, fixture, ".ipynb"))


# -- front-ends ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mutated_sample(tmp_path_factory) -> Path:
    """A directory of mutated fixtures and notebooks (deterministic unless more examples are asked for)."""
    rng = random.Random(None if _REQUESTED else 10)
    directory = tmp_path_factory.mktemp("fuzz")
    for index in range(max(4, EXAMPLES // 4)):
        fixture = rng.choice(FIXTURE_FILES)
        source = fixture.read_bytes()
        if index % 4 == 3:
            (directory / f"m{index}.ipynb").write_bytes(mutate(notebook_of(source), random_mutations(rng)))
        else:
            (directory / f"m{index}_{fixture.name}").write_bytes(mutate(source, random_mutations(rng)))
    return directory


def _run(directory: Path, *command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(command, cwd=directory, capture_output=True, text=True, env=env, timeout=600)


def test_cli_on_mutated_files(mutated_sample):
    result = _run(mutated_sample, sys.executable, "-m", "nnx_lint.cli", "check", ".", "--select", "NNX",
                  "--no-cache", "--output-format", "json")
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    found = json.loads(result.stdout)
    assert [d for d in found if d["code"] == "NNX003"] == []
    assert {d["code"] for d in found} <= CODES


def test_flake8_on_mutated_files(mutated_sample):
    result = _run(mutated_sample, sys.executable, "-m", "flake8", "--select", "NNX", ".")
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert " NNX003 " not in result.stdout, result.stdout


def test_pylint_on_mutated_files(mutated_sample):
    python_files = sorted(str(p.name) for p in mutated_sample.glob("*.py"))
    result = _run(mutated_sample, sys.executable, "-m", "pylint", "--load-plugins=nnx_lint.pylint", "--disable=all",
                  "--enable=nnx", "--persistent=n", "--output-format=json", *python_files)
    # pylint's exit status is a bit field; 32 is a usage error or a crash.
    assert result.returncode & 32 == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert [m for m in json.loads(result.stdout or "[]") if m["symbol"] == "rule-crashed"] == []
