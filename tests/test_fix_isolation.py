"""A native crash while fixes are computed costs only that file's fixes (issue 29, ``h4``).

libcst's native parser segfaults on an 8,000-term ``and`` chain. Before, ``--output-format
json``, ``--diff`` and ``--fix`` then died with the whole process (exit 139, no output). Each
test runs the real CLI in a subprocess: the crashing file keeps its diagnostics (without a
fix, with a note on stderr), and every other file still gets its fixes. A last test makes the
fix worker crash through a harness-only hook, so the guarantee does not depend on libcst
keeping that bug.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nnx_lint.fixes.workers import BYTES_PER_FIX_WORKER, _worker_count

pytest.importorskip("libcst")

# NNX201, whose pin fix libcst computes.
FINDING = "from flax import nnx\nx = nnx.StateAxes({nnx.Param: 0})\nf = nnx.vmap(lambda m: m, in_axes=(x,))\n"
# NNX301 (pin fix at @nnx.jit) in a function whose other statement crashes libcst's parser.
BOOL_CHAIN = ("from flax import nnx\n\n@nnx.jit\ndef train(model, a):\n    ok = " + " and ".join(["a"] * 8000)
              + "\n    model.count += 1\n    return ok\n")
NOTE = "its fixes could not be computed (the fix worker was killed by signal SIGSEGV)"
# A file big enough to keep a fix worker of its own busy: `-j 3` then really starts three workers.
LARGE_FINDING = FINDING + "# padding\n" * (BYTES_PER_FIX_WORKER // len("# padding\n") + 1)


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "other.py").write_text(FINDING)
    (repo / "boolchain.py").write_text(BOOL_CHAIN)
    return repo


def _check(repo: Path, *options: str, stdin: str | None = None, jobs: str = "1") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nnx_lint.cli", "check", ".", "--no-cache", "-j", jobs, *options],
                          cwd=repo, capture_output=True, text=True, input=stdin, timeout=120)


@pytest.mark.slow
def test_json_output_survives_a_crashing_parser(tmp_path):
    repo = _repo(tmp_path)
    done = _check(repo, "--output-format", "json")
    assert done.returncode == 1, done.stderr
    found = {d["filename"]: d for d in json.loads(done.stdout)}
    assert set(found) == {"boolchain.py", "other.py"}
    assert found["boolchain.py"]["code"] == "NNX301" and found["boolchain.py"]["fix"] is None
    assert found["other.py"]["fix"]["edits"], "the other file still gets its fix"
    assert f"boolchain.py: {NOTE}" in done.stderr


@pytest.mark.slow
def test_diff_survives_a_crashing_parser(tmp_path):
    repo = _repo(tmp_path)
    done = _check(repo, "--diff")
    assert done.returncode == 1, done.stderr
    assert "+++ b/other.py" in done.stdout and "boolchain.py" not in done.stdout
    assert f"boolchain.py: {NOTE}" in done.stderr
    assert (repo / "boolchain.py").read_text() == BOOL_CHAIN and (repo / "other.py").read_text() == FINDING


def test_diff_is_not_clean_when_the_only_fixable_file_crashes(tmp_path):
    repo = _repo(tmp_path)
    (repo / "other.py").unlink()
    done = _check(repo, "--diff")
    assert done.returncode == 1, "a file whose fixes are unknown may need some: never 'nothing to fix'"
    assert done.stdout == "" and NOTE in done.stderr


@pytest.mark.slow
def test_fix_survives_a_crashing_parser(tmp_path):
    repo = _repo(tmp_path)
    done = _check(repo, "--fix")
    assert done.returncode == 1, done.stderr
    assert "graph=True" in (repo / "other.py").read_text(), "the other file is fixed"
    assert (repo / "boolchain.py").read_text() == BOOL_CHAIN
    assert "boolchain.py:6:5: NNX301" in done.stdout and "other.py" not in done.stdout
    assert f"boolchain.py: {NOTE}" in done.stderr


def test_fix_from_stdin_survives_a_crashing_parser(tmp_path):
    repo = _repo(tmp_path)
    done = subprocess.run([sys.executable, "-m", "nnx_lint.cli", "check", "--fix", "--stdin-filename", "x.py", "-"],
                          cwd=repo, capture_output=True, text=True, input=BOOL_CHAIN, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == BOOL_CHAIN, "the source comes back unchanged"
    assert f"x.py: {NOTE}" in done.stderr


@pytest.mark.slow
def test_many_crashing_files_each_cost_only_their_own_fixes(tmp_path):
    """A fresh fix worker takes over after each crash."""
    repo = _repo(tmp_path)
    for name in ("a.py", "b.py"):
        (repo / name).write_text(BOOL_CHAIN)
    (repo / "z.py").write_text(FINDING)
    done = _check(repo, "--output-format", "json")
    assert done.returncode == 1, done.stderr
    fixes = {d["filename"]: d["fix"] for d in json.loads(done.stdout)}
    assert fixes["a.py"] is None and fixes["b.py"] is None and fixes["boolchain.py"] is None
    assert fixes["other.py"] and fixes["z.py"]
    assert done.stderr.count(NOTE) == 3


@pytest.mark.slow
def test_several_fix_workers_give_the_one_worker_answer(tmp_path):
    """With `-j 3` the files' fixes are asked of up to three workers at once: the same JSON and
    the same notes (in file order) as one worker, each crash still costing only its file."""
    repo = _repo(tmp_path)
    (repo / "a.py").write_text(BOOL_CHAIN)
    for name in ("y.py", "z.py"):
        (repo / name).write_text(LARGE_FINDING)
    one, several = _check(repo, "--output-format", "json"), _check(repo, "--output-format", "json", jobs="3")
    assert several.returncode == one.returncode == 1, several.stderr
    assert several.stdout == one.stdout
    assert [line for line in several.stderr.splitlines() if NOTE in line] == \
        [line for line in one.stderr.splitlines() if NOTE in line] == \
        [f"nnx-lint: warning: {name}: {NOTE}; its diagnostics are reported without fixes"
         for name in ("a.py", "boolchain.py")]
    fixes = {d["filename"]: d["fix"] for d in json.loads(several.stdout)}
    assert fixes["other.py"] and fixes["y.py"] and fixes["z.py"]


@pytest.mark.slow
def test_fix_with_several_workers_writes_what_one_worker_writes_and_what_diff_shows(tmp_path):
    """`--fix -j 3` computes every file's fixes against the files as they were (up to three workers
    at once) and writes them in file order: the same files and notes as `-j 1`, and exactly the
    diff `--diff` printed."""
    trees = {}
    for jobs in ("1", "3"):
        (tmp_path / f"j{jobs}").mkdir()
        repo = _repo(tmp_path / f"j{jobs}")
        for name in ("y.py", "z.py"):
            (repo / name).write_text(LARGE_FINDING)
        shown = _check(repo, "--diff", jobs=jobs)
        done = _check(repo, "--fix", jobs=jobs)
        notes = {line for line in done.stderr.splitlines() if NOTE in line}  # the fixing, then the report's [*]
        assert notes == {f"nnx-lint: warning: boolchain.py: {NOTE}; its diagnostics are reported without fixes"}
        trees[jobs] = {path.name: path.read_text() for path in sorted(repo.glob("*.py"))}
        changed = [name for name, text in trees[jobs].items()
                   if text not in (BOOL_CHAIN, FINDING, LARGE_FINDING)]
        assert sorted(changed) == ["other.py", "y.py", "z.py"]
        assert all(f"+++ b/{name}" in shown.stdout for name in changed) and "boolchain.py" not in shown.stdout
    assert trees["1"] == trees["3"]


@pytest.mark.slow
def test_any_crash_of_the_fix_worker_costs_only_that_file(tmp_path):
    """Whatever kills the fix worker (here a hook swapped in by the harness: the worker
    SIGSEGVs itself on `crash.py`), the other files keep their fixes."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("a.py", "crash.py", "z.py"):
        (repo / name).write_text(FINDING)
    bootstrap = textwrap.dedent("""\
        import sys
        sys.path[:] = sys.argv[2:]
        import os, signal
        import nnx_lint.fixes.isolated as isolated
        _real = isolated.answer
        def answer(request):
            if request["path"].endswith("crash.py"):
                os.kill(os.getpid(), signal.SIGSEGV)
            return _real(request)
        isolated.answer = answer
        from nnx_lint.engine.workers.serve import main
        main(sys.argv[1])
        """)
    program = textwrap.dedent(f"""\
        import sys
        import nnx_lint.engine.workers.process as process
        process.BOOTSTRAP = {bootstrap!r}
        from nnx_lint.cli import main
        sys.exit(main({["check", ".", "--no-cache", "-j", "1", "--output-format", "json"]!r}))
        """)
    done = subprocess.run([sys.executable, "-c", program], cwd=repo, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    fixes = {d["filename"]: d["fix"] for d in json.loads(done.stdout)}
    assert fixes["crash.py"] is None and fixes["a.py"]["edits"] and fixes["z.py"]["edits"]
    assert f"crash.py: {NOTE}" in done.stderr


def test_small_files_share_one_fix_worker_and_large_ones_get_one_each(tmp_path):
    """A fix worker costs about a second of CPU to start: two small files share one, whatever
    ``-j`` allows, and each file that keeps a worker busy (by its size) may get its own."""
    small, large = tmp_path / "small.py", tmp_path / "large.py"
    small.write_text(FINDING)
    large.write_text(LARGE_FINDING)
    attach = {"op": "attach"}
    assert _worker_count([(str(small), attach, None)] * 5, jobs=8) == 1
    assert _worker_count([(str(large), attach, None)] * 5, jobs=8) == 5
    assert _worker_count([(str(large), attach, None)] * 5, jobs=2) == 2
    assert _worker_count([(str(small), {"op": "text", "text": LARGE_FINDING}, None)] * 3, jobs=8) == 3
    assert _worker_count([(str(tmp_path / "gone.py"), attach, None)] * 3, jobs=8) == 1
