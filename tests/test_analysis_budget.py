"""The analysis budget holds inside every analysis step (issue 29, "unbounded analysis").

The second red-team pass found analyses the walk's deadline never reached: a 28-level
diamond inheritance (77 s, 6.3 GB: the class model doubled at each level), 20,000 lines
of ``jK = nnx.jit(f)`` (354 s: a per-module pass scanned every call of the file for each
of them) and a small file importing 64 large project modules (124 s, 3.25 GB, and then an
NNX004 hid the file's own NNX101). Each appears here small, with the limits lowered where a
limit is what is tested, so that every test runs in seconds.

Costs are asserted as counts (stores kept, Python calls made), which are deterministic.
Where the time budget is tested, the budgets' clock is replaced so that the file's time runs
out exactly when a chosen step starts; the test then checks that this step stopped the
analysis, that the NNX004 names it, and that what was found before is still reported.
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
from nnx_lint.analysis import parsing
from nnx_lint.analysis.aliases import AliasQueries
from nnx_lint.analysis.construction import ConstructionReplay
from nnx_lint.analysis.context import FileContext
from nnx_lint.engine.walk import lint_bytes, lint_source
from nnx_lint.analysis.project import Project
from nnx_lint.engine.registry import all_rules
from nnx_lint.analysis.transformed import TransformedCode

#: A finding the walk reports on its way (NNX201, line 3), before any class is modelled.
FIRST = "from flax import nnx\nx = nnx.StateAxes({nnx.Param: 0})\nf = nnx.vmap(lambda m: m, in_axes=(x,))\n"


def diamond(levels: int, width: int = 1, head: str = "from flax import nnx\n") -> str:
    """The h1 reproducer: ``A{i}(A{i-1}, B{i-1})`` whose ``__init__`` runs ``super().__init__``,
    then ``A{i-1}.__init__`` ``width`` times and ``B{i-1}.__init__``; ``A0`` stores one Linear
    twice (NNX101, line 4 of the diamond)."""
    source = head + (
        "class A0(nnx.Module):\n    def __init__(self, rngs):\n        self.l = nnx.Linear(2, 2, rngs=rngs)\n"
        "        self.m = self.l\nclass B0(nnx.Module):\n    def __init__(self, rngs):\n"
        "        self.k = nnx.Linear(2, 2, rngs=rngs)\n"
    )
    for i in range(1, levels):
        source += f"class A{i}(A{i - 1}, B{i - 1}):\n    def __init__(self, rngs):\n        super().__init__(rngs)\n"
        source += f"        A{i - 1}.__init__(self, rngs)\n" * width
        source += f"        B{i - 1}.__init__(self, rngs)\nclass B{i}(B{i - 1}, A{i - 1}):\n    pass\n"
    return source + f"m = A{levels - 1}(nnx.Rngs(0))\nnnx.jit(lambda m: 0)(m)\n"


def codes(diagnostics) -> list[tuple[str, int]]:
    return [(d.code, d.line) for d in diagnostics]


def budget_message(diagnostics) -> str:
    (message,) = [d.message for d in diagnostics if d.code == "NNX004"]
    return message


@pytest.fixture
def expire_at(monkeypatch):
    """``expire_at(owner, name)``: the file's time runs out when ``owner.name`` is first called."""
    late = {"now": False}
    real_clock = bounds.clock
    monkeypatch.setattr(bounds, "clock", lambda: real_clock() + (1e9 if late["now"] else 0.0))

    def arm(owner, name: str) -> None:
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            late["now"] = True
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapper)

    return arm


# -- h1: diamond inheritance -----------------------------------------------------------------


def test_a_deep_diamond_keeps_each_inherited_store_once():
    source = diamond(16)
    module = parsing.build(source, "diamond.py", "diamond", lambda name: False)
    classes = FileContext(module, "diamond.py", Project()).classes
    for classdef in module.body[1:-2]:
        classes.info(classdef)  # in the file's order, as the rules ask: each base is known first
    # The old model listed A0's and B0's stores once per path through the diamond: 2^15 times.
    assert sorted(store.path for store in classes.info(module.locals["A15"][0]).stores) == ["k", "l", "m"]
    assert codes(lint_source(source, "diamond.py", all_rules())) == [("NNX101", 5)]


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def check_in_a_gigabyte(directory: Path, name: str, source: str) -> list[tuple[str, int]]:
    """``nnx-lint check`` of one file in a subprocess limited to 1 GiB of address space and
    60 s; the (code, line) pairs it reports."""
    (directory / name).write_text(source)
    result = subprocess.run(
        [sys.executable, "-m", "nnx_lint.cli", "check", name, "--no-cache", "-j", "1", "--output-format", "json"],
        cwd=directory, capture_output=True, text=True, timeout=60, preexec_fn=_limit_memory,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert result.stdout.startswith("["), result.stderr[-2000:]
    return [(d["code"], d["location"]["row"]) for d in json.loads(result.stdout)]


@pytest.mark.slow
def test_the_28_level_diamond_is_linted_within_a_gigabyte(tmp_path):
    assert check_in_a_gigabyte(tmp_path, "diamond.py", diamond(28)) == [("NNX101", 5)]


def test_a_wide_diamond_stops_at_the_replay_budget_keeping_earlier_findings(monkeypatch):
    # Each level calls its base initialiser four times: 4^7 replays per class, 7 levels down.
    monkeypatch.setattr(bounds, "LIMITS", bounds.Limits(replay_steps=2_000))
    found = lint_source(diamond(12, width=4, head=FIRST), "diamond.py", all_rules())
    assert codes(found) == [("NNX004", 1), ("NNX201", 3)]
    assert "replaying how class `A" in budget_message(found) and "over 2000 steps" in budget_message(found)


@pytest.mark.slow
def test_the_replay_budget_counts_the_whole_file(monkeypatch):
    """Many classes each just under a per-class bound must not add up to an unbounded model."""
    narrow = diamond(8, width=2, head=FIRST)
    model_steps = _replay_work(narrow)
    monkeypatch.setattr(bounds, "LIMITS", bounds.Limits(replay_steps=model_steps // 2))
    found = lint_source(narrow, "diamond.py", all_rules())
    assert ("NNX004", 1) in codes(found) and ("NNX201", 3) in codes(found)
    assert model_steps // 2 > _largest_replay(narrow)  # no one class is over the lowered bound


def _replay_work(source: str) -> int:
    module = parsing.build(source, "m.py", "m", lambda name: False)
    context = FileContext(module, "m.py", Project())
    for classdef in module.body:
        if classdef.__class__.__name__ == "ClassDef":
            context.classes.construction(classdef)
    return context.classes.replay_work


def _largest_replay(source: str) -> int:
    module = parsing.build(source, "m.py", "m", lambda name: False)
    largest = 0
    for classdef in module.body:
        if classdef.__class__.__name__ == "ClassDef":
            classes = FileContext(module, "m.py", Project()).classes
            classes.construction(classdef)
            largest = max(largest, classes.replay_work)
    return largest


def test_the_class_replay_checks_the_time(expire_at):
    expire_at(ConstructionReplay, "replay")
    found = lint_source(diamond(4, head=FIRST), "diamond.py", all_rules())
    assert codes(found) == [("NNX004", 1), ("NNX201", 3)]
    assert "was stopped in replaying how class" in budget_message(found)


def test_the_alias_search_checks_the_time(expire_at):
    expire_at(AliasQueries, "_find_aliases")
    found = lint_source(diamond(4, head=FIRST), "diamond.py", all_rules())
    assert codes(found) == [("NNX004", 1), ("NNX201", 3)]
    assert "was stopped in looking for objects stored twice by class" in budget_message(found)


# -- h2: many transformed names ----------------------------------------------------------------


def _calls_to_lint(source: str) -> int:
    return calls_to_lint(source, "many_jit.py")


MANY_JIT = {
    # the h2 reproducer: one function transformed under many names
    "one-function": ("from flax import nnx\ndef f(m):\n    m.count += 1\n", "j{i} = nnx.jit(f)\n"),
    # ... each name also called
    "called": ("from flax import nnx\ndef f(m):\n    m.count += 1\nm = nnx.Linear(2, 2, rngs=nnx.Rngs(0))\n",
               "j{i} = nnx.jit(f)\nj{i}(m)\n"),
}


@pytest.mark.parametrize("variant", sorted(MANY_JIT))
@pytest.mark.slow
def test_many_transformed_names_cost_linear_work(variant):
    head, line = MANY_JIT[variant]
    small, large = (_calls_to_lint(head + "".join(line.format(i=i) for i in range(n))) for n in (150, 450))
    # Linear work triples with three times the lines; the per-entry scan of every call made it 6-9x.
    assert large / small < 4, (small, large)


@pytest.mark.slow
def test_20000_transformed_names_are_linted_within_a_gigabyte(tmp_path):
    head, line = MANY_JIT["one-function"]
    source = head + "".join(line.format(i=i) for i in range(1, 20_001))
    assert check_in_a_gigabyte(tmp_path, "many_jit.py", source) == [("NNX301", 3)]  # 354 s on the old main


def test_the_transformed_code_pass_checks_the_time(expire_at):
    expire_at(TransformedCode, "_all_reaches")
    head, line = MANY_JIT["one-function"]
    found = lint_source(FIRST + head.partition("\n")[2] + line.format(i=1), "many_jit.py", all_rules())
    assert codes(found) == [("NNX004", 1), ("NNX201", 3)]
    assert "functions NNX transforms trace" in budget_message(found)  # finding or following them


# -- imported project modules --------------------------------------------------------------------


def _module_source(classes: int) -> str:
    return "from flax import nnx\n" + "".join(
        f"class C{i}(nnx.Module):\n    def __init__(self, rngs):\n        self.l = nnx.Linear(2, 2, rngs=rngs)\n"
        for i in range(classes)
    )


@pytest.fixture
def importing_project(tmp_path):
    """The third reproducer, small: ``main.py`` (an NNX101 of its own) imports a class from
    each of eight project modules, of about 650 units each."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for k in range(8):
        (package / f"m{k}.py").write_text(_module_source(30))
    main = "from flax import nnx\n" + "".join(f"from pkg.m{k} import C29 as D{k}\n" for k in range(8))
    main += "class Top(nnx.Module):\n    def __init__(self, rngs):\n        self.a = nnx.Linear(2, 2, rngs=rngs)\n"
    main += "        self.b = self.a\n" + "".join(f"        self.d{k} = D{k}(rngs)\n" for k in range(8))
    (tmp_path / "main.py").write_text(main)
    (tmp_path / "other.py").write_text(main)
    return tmp_path


def _lint_in(project: Project, path: Path):
    project.start_file(str(path), path.parent)
    return lint_bytes(path.read_bytes(), path.name, all_rules(), project=project, module_name=path.stem)


def _units() -> int:
    return bounds.source_units(_module_source(30))


def test_imports_over_budget_are_skipped_and_the_files_own_findings_stay(importing_project, monkeypatch):
    project = Project([importing_project])
    assert codes(_lint_in(project, importing_project / "main.py")) == [("NNX101", 13)]  # all eight read
    assert len(_file_dependencies(project)) == 8
    monkeypatch.setattr(bounds, "LIMITS", bounds.Limits(imported_units=3 * _units()))
    project = Project([importing_project])
    found = _lint_in(project, importing_project / "main.py")
    assert codes(found) == [("NNX004", 1), ("NNX101", 13)]
    message = budget_message(found)
    assert "5 imported project module(s) were not read (`pkg.m3`, `pkg.m4`, `pkg.m5`, `pkg.m6`, `pkg.m7`)" in message
    # Modules left unread are dependencies all the same: a change to them may let them fit.
    assert len(_file_dependencies(project)) == 8


def test_the_import_charge_does_not_depend_on_the_order_of_files(importing_project, monkeypatch):
    monkeypatch.setattr(bounds, "LIMITS", bounds.Limits(imported_units=3 * _units()))
    main, other = importing_project / "main.py", importing_project / "other.py"
    project = Project([importing_project])
    first = [(d.code, d.line, d.message) for d in _lint_in(project, main) + _lint_in(project, other)]
    project = Project([importing_project])
    second = [(d.code, d.line, d.message) for d in _lint_in(project, other) + _lint_in(project, main)]
    # Trees an earlier file built are charged to the next file too: the same answer both times.
    assert first == second and first[: len(first) // 2] == first[len(first) // 2:]
    assert [code for code, _line, _message in first] == ["NNX004", "NNX101"] * 2


def test_a_module_refused_for_one_file_is_read_for_the_next(importing_project, monkeypatch):
    project = Project([importing_project])
    monkeypatch.setattr(bounds, "LIMITS", bounds.Limits(imported_units=_units()))
    assert codes(_lint_in(project, importing_project / "main.py")) == [("NNX004", 1), ("NNX101", 13)]
    monkeypatch.setattr(bounds, "LIMITS", bounds.Limits())
    assert codes(_lint_in(project, importing_project / "other.py")) == [("NNX101", 13)]
    assert len(_file_dependencies(project)) == 8


def test_building_imports_stops_at_its_share_of_the_time(importing_project, monkeypatch):
    now = {"t": 0.0}
    monkeypatch.setattr(bounds, "clock", lambda: now["t"])
    monkeypatch.setattr(bounds, "LIMITS", bounds.Limits(analysis_seconds=100))
    real_build = parsing.build

    def slow_build(text, path, *args, **kwargs):
        if "pkg" in path:
            now["t"] += 20  # each imported module takes a fifth of the file's time to build
        return real_build(text, path, *args, **kwargs)

    monkeypatch.setattr(parsing, "build", slow_build)
    found = _lint_in(Project([importing_project]), importing_project / "main.py")
    assert codes(found) == [("NNX004", 1), ("NNX101", 13)]
    assert "5 imported project module(s) were not read (`pkg.m3`" in budget_message(found)


def test_reading_an_import_checks_the_time(importing_project, expire_at):
    expire_at(Project, "_source_of")
    found = _lint_in(Project([importing_project]), importing_project / "main.py")
    assert "was stopped in reading the imported module `pkg.m0`" in budget_message(found)


def _file_dependencies(project) -> list[str]:
    """The project files an analysis read (not the module searches it made, also dependencies)."""
    from nnx_lint.analysis.package_roots import MODULE_SEARCH_KEY

    return [key for key in project.dependencies if not key.startswith(MODULE_SEARCH_KEY)]


def test_the_budget_counts_the_analysing_threads_cpu_not_the_wall_clock():
    """A file's time is the CPU its analysis used: a busy machine (a shared CI runner, other
    ``-j`` workers) slows the wall clock, not the answer. Waiting uses no budget; working does."""
    import time as _time

    budget = bounds.AnalysisBudget(seconds=0.2)
    _time.sleep(0.4)  # the wall clock passes the budget, the thread's CPU does not
    assert not budget.expired()
    budget.check("a wait")
    spin_until = _time.thread_time() + 0.3
    while _time.thread_time() < spin_until:
        pass
    assert budget.expired()
    with pytest.raises(bounds.BudgetExceeded):
        budget.check("work")


def test_a_check_well_within_the_budget_does_not_read_the_cpu_clock(monkeypatch):
    """Reading the thread's CPU clock is a system call and the walk checks the budget at every
    node: while the wall time since the last reading cannot have used the budget up (a thread's
    CPU time grows no faster than the wall clock), a check reads only the cheap wall clock."""
    import time as _time

    reads = []

    def counted_thread_time() -> float:
        reads.append(1)
        return _time.thread_time()

    monkeypatch.setattr(bounds, "_THREAD_CPU_TIME", counted_thread_time)
    monkeypatch.setattr(bounds, "clock", counted_thread_time)
    budget = bounds.AnalysisBudget(seconds=60.0)
    for _ in range(1000):
        budget.check("a step")
    assert not budget.expired()
    assert len(reads) == 1  # the budget's start
    short = bounds.AnalysisBudget(seconds=0.05)
    spin_until = _time.thread_time() + 0.1  # CPU, not wall: a loaded machine gives less CPU than wall
    while _time.thread_time() < spin_until:
        pass
    assert short.expired()  # past the wall bound, the CPU clock is read and is over
    with pytest.raises(bounds.BudgetExceeded):
        short.check("work")
