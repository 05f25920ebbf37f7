"""The `[*]` marks and JSON fixes are asked for while the run lints (nnx_lint.fixes.marks).

A check's fixes cost about a second lint of each file with findings, plus a fix worker's start.
The run hands each file's findings to :class:`FixMarks` as soon as they are known, and a
background worker answers meanwhile; the report then keeps the answers whose request is exactly
what the final findings make, and asks again for the rest. These tests run the real run, the
real fix worker and libcst.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from nnx_lint.engine import runner
from nnx_lint.engine.config import load_settings
from nnx_lint.fixes import workers as workers_module
from nnx_lint.fixes.isolated import IsolatedFixes
from nnx_lint.fixes.marks import FixMarks

pytest.importorskip("libcst")

# NNX201, whose pin fix libcst computes, twice in one file.
TWO_FINDINGS = ("from flax import nnx\nx = nnx.StateAxes({nnx.Param: 0})\n"
                "f = nnx.vmap(lambda m: m, in_axes=(x,))\ng = nnx.vmap(lambda m: m, in_axes=(x,))\n")


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name in ("a", "b"):
        (tmp_path / f"{name}.py").write_text(TWO_FINDINGS)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def asked_after_the_run(monkeypatch):
    """The paths the report still had to ask a fix worker about, when the run was over."""
    asked: list[str] = []
    real = workers_module.ask_workers  # FixMarks imports it when it asks (a warm run does not)

    def ask_workers(pending, roots, jobs, warm=None):
        asked.extend(path for path, _request, _key in pending)
        yield from real(pending, roots, jobs, warm)

    monkeypatch.setattr(workers_module, "ask_workers", ask_workers)
    return asked


@pytest.fixture
def asked_at_all(monkeypatch):
    """Every path a fix worker was asked about, during the run or after it."""
    asked: list[str] = []
    real = IsolatedFixes.ask
    monkeypatch.setattr(IsolatedFixes, "ask", lambda self, request: asked.append(request["path"])
                        or real(self, request))
    return asked


def _fixes_by_finding(diagnostics, fixes) -> dict:
    return {(d.path, d.line, d.code): (fixes[i].to_json(), fixes[i].resolves)
            for i, d in enumerate(diagnostics) if i in fixes}


def _linting_slowly(marks: FixMarks, names: tuple[str, ...]):
    """``marks.file_done`` for a run whose next files take longer to lint than the fix worker
    takes to answer about the files in ``names`` (the files here are tiny: the run would
    otherwise be over before the worker has started)."""
    def file_done(path, digest, found):
        marks.file_done(path, digest, found)
        name = Path(path).name
        deadline = time.monotonic() + 60
        while name in names and marks.early[name].answer is None and time.monotonic() < deadline:
            time.sleep(0.01)
    return file_done


def test_the_findings_of_a_file_are_answered_while_the_next_are_linted(project, asked_after_the_run, asked_at_all):
    settings = load_settings(Path("."))
    with FixMarks(False, settings, None, jobs=1) as marks:
        result = runner.run([Path(".")], settings, jobs=1, on_file=_linting_slowly(marks, ("a.py",)))
        during = _fixes_by_finding(result.diagnostics, marks.attach(result.diagnostics))
    assert asked_after_the_run in ([], ["b.py"]), "a.py was answered during the run"
    assert sorted(asked_at_all) == ["a.py", "b.py"], "each file is asked about once"
    with FixMarks(False, settings, None, jobs=1) as afterwards:  # nothing handed over during the run
        after = _fixes_by_finding(result.diagnostics, afterwards.attach(result.diagnostics))
    assert during == after and len(during) == 4
    assert all(resolves for _fix, resolves in during.values()), "the pins make every finding go: all `[*]`"


def test_a_file_whose_reported_findings_changed_is_asked_again(project, asked_after_the_run):
    settings = load_settings(Path("."))
    with FixMarks(False, settings, None, jobs=1) as marks:
        result = runner.run([Path(".")], settings, jobs=1, on_file=_linting_slowly(marks, ("a.py", "b.py")))
        # As a baseline would: one finding of a.py is not reported, so a.py's request changes.
        reported = [d for d in result.diagnostics if not (d.path == "a.py" and d.line == 3)]
        fixes = marks.attach(reported)
    assert asked_after_the_run == ["a.py"]
    assert {(reported[i].path, reported[i].line) for i in fixes} == {("a.py", 4), ("b.py", 3), ("b.py", 4)}


def test_with_lint_workers_each_file_is_handed_over_as_its_worker_answers(project):
    # Five files: enough for the run to start lint workers (a few files are linted in-process).
    for name in ("c", "d", "e"):
        (project / f"{name}.py").write_text(TWO_FINDINGS)
    handed: list[tuple[str, bool]] = []
    on_file = lambda path, digest, found: handed.append((Path(path).name, threading.current_thread() is
                                                         threading.main_thread()))
    result = runner.run([Path(".")], load_settings(Path(".")), jobs=2, on_file=on_file)
    assert sorted(handed) == [(f"{name}.py", False) for name in "abcde"], "once each, from the pool's threads"
    assert len(result.diagnostics) == 10


@pytest.mark.slow
def test_fixes_asked_during_a_run_with_lint_workers_are_the_ones_asked_after_it(project, asked_at_all):
    for name in ("c", "d", "e"):
        (project / f"{name}.py").write_text(TWO_FINDINGS)
    settings = load_settings(Path("."))
    with FixMarks(False, settings, None, jobs=2) as marks:
        result = runner.run([Path(".")], settings, jobs=2, on_file=marks.file_done)
        during = _fixes_by_finding(result.diagnostics, marks.attach(result.diagnostics))
    assert sorted(asked_at_all) == [f"{name}.py" for name in "abcde"], "each file is asked about once"
    with FixMarks(False, settings, None, jobs=2) as afterwards:
        assert _fixes_by_finding(result.diagnostics, afterwards.attach(result.diagnostics)) == during
    assert len(during) == 10


def test_with_one_job_each_file_is_handed_over_before_the_next_is_linted(project, monkeypatch):
    events: list[str] = []
    analyse = runner.analyse_file
    monkeypatch.setattr(runner, "analyse_file", lambda path, *rest: events.append(f"lint {Path(path).name}")
                        or analyse(path, *rest))
    on_file = lambda path, digest, found: events.append(f"done {Path(path).name} {len(found)} {bool(digest)}")
    runner.run([Path(".")], load_settings(Path(".")), jobs=1, on_file=on_file)
    assert events == ["lint a.py", "done a.py 2 True", "lint b.py", "done b.py 2 True"]


def test_cached_files_are_handed_over_too(project, tmp_path):
    settings = load_settings(Path("."))
    cache = tmp_path / "cache"
    runner.run([Path(".")], settings, jobs=1, cache_dir=cache)
    handed: list[tuple[str, int]] = []
    result = runner.run([Path(".")], settings, jobs=1, cache_dir=cache,
                        on_file=lambda path, digest, found: handed.append((Path(path).name, len(found))))
    assert result.files_from_cache == 2 and handed == [("a.py", 2), ("b.py", 2)]


def test_closing_stops_the_background_worker(project):
    settings = load_settings(Path("."))
    marks = FixMarks(False, settings, None, jobs=1)
    result = runner.run([Path(".")], settings, jobs=1, on_file=marks.file_done)
    deadline = time.monotonic() + 60
    while (marks._fixer is None or marks._fixer.worker is None) and time.monotonic() < deadline:
        time.sleep(0.01)
    process = marks._fixer.worker.process
    marks.close()  # as on Ctrl-C: the report never asks
    assert process.wait(timeout=10) is not None
    assert marks._thread is None and marks._fixer is None
    assert result.diagnostics, "there was something to ask about"


# NNX105's fix is display-only here (no use of `Model` in a transform is known); NNX106 and
# NNX601 have fixes --fix applies.
DISPLAY_ONLY_BESIDE_APPLYING = '''from flax import nnx


class Sampler(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.stream = rngs.dropout


class Model(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.rngs = rngs
        self.sampler = Sampler(rngs)


def build(rngs):
    return nnx.vmap(lambda r: Model(r), transform_metadata={nnx.PARTITION_NAME: "layers"})(rngs)
'''


def test_only_the_rules_whose_fixes_apply_lint_the_fixed_text_again(tmp_path, monkeypatch):
    """A display-only fix never earns `[*]`, so its rule does not run on the fixed text (NNX105's
    made the fix worker build the object-flow model of maxtext's largest files a second time)."""
    from nnx_lint.fixes import apply, isolated

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "m.py").write_text(DISPLAY_ONLY_BESIDE_APPLYING)
    monkeypatch.chdir(tmp_path)
    settings = load_settings(tmp_path)
    diagnostics = runner.run([tmp_path / "m.py"], settings, jobs=1).diagnostics
    assert {d.code for d in diagnostics} == {"NNX105", "NNX106", "NNX601"}
    relinted: list[set[str]] = []
    real_fix_file = apply.fix_file

    def fix_file(path, text, rules, *args, **kwargs):
        relinted.append({rule.code for rule in rules})
        return real_fix_file(path, text, rules, *args, **kwargs)

    monkeypatch.setattr(apply, "fix_file", fix_file)
    marks = FixMarks(unsafe=False, settings=settings)
    found = isolated.answer(marks._request("m.py", diagnostics))
    assert relinted == [{"NNX106", "NNX601"}]
    by_code = {diagnostics[int(number)].code: fix for number, fix in found.items()}
    assert by_code["NNX105"]["applicability"] == "display-only"
    assert by_code["NNX106"]["resolves"] and by_code["NNX601"]["resolves"]
