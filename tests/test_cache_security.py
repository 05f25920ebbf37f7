"""The caches can be neither executed nor forged (issue 10, items 2 and 8).

A cache file committed to the linted repository must never run code, hide findings or
forge confirmation verdicts: whatever is planted, a run gives exactly the ``--no-cache``
results, with at most one warning line. Cache writes never go through a symbolic link
and never leave temporary files behind.
"""
from __future__ import annotations

import io
import json
import os
import pickle
import stat
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from nnx_lint.cli import main

STATE_AXES = "from flax import nnx\nf = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"
METADATA = "from flax import nnx\nf = nnx.vmap(g, transform_metadata={nnx.PARTITION_NAME: 'l'})\n"


class _RunsCode:
    """Unpickling this creates a marker file: the harmless stand-in for ``os.system``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def _write_project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "axes.py").write_text(STATE_AXES)
    (root / "pkg" / "meta.py").write_text(METADATA)
    return root


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = _write_project(tmp_path / "project")
    monkeypatch.chdir(root)
    return root


def _check(capsys, *args: str) -> tuple[int, list, list[str]]:
    code = main(["check", "--output-format", "json", *args])
    captured = capsys.readouterr()
    return code, json.loads(captured.out or "[]"), captured.err.splitlines()


@pytest.fixture(scope="module")
def uncached(tmp_path_factory) -> list:
    """The ``--no-cache`` results every cached run below must give, from a project with the
    same files as ``project`` (the output names them relative to it, so they are the same in
    every test's project). A ``--no-cache`` run reads and writes no cache, so one run serves
    the module: each run costs a fix worker's start (the ``fix`` objects are compared too)."""
    root = _write_project(tmp_path_factory.mktemp("uncached") / "project")
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, redirect_stdout(out), redirect_stderr(err):
        patch.chdir(root)
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("user-cache")))
        code = main(["check", "--output-format", "json", "--no-cache"])
    found = json.loads(out.getvalue() or "[]")
    assert code == 1 and len(found) == 2 and err.getvalue() == ""
    return found


@pytest.mark.slow
def test_planted_pickle_caches_are_never_unpickled(project, capsys, tmp_path, uncached):
    expected = uncached
    marker = tmp_path / "pwned"
    planted = project / ".nnx_lint_cache"
    planted.mkdir()
    for name in ("results.pickle", "confirmations.pickle"):
        (planted / name).write_bytes(pickle.dumps(_RunsCode(marker)))
    for args in ((), ("--cache-dir", ".nnx_lint_cache")):
        code, found, _errors = _check(capsys, *args)
        assert not marker.exists(), "a planted pickle ran code"
        assert (code, found) == (1, expected)


@pytest.mark.slow
def test_plain_data_cache_in_the_project_cannot_hide_findings(project, capsys, uncached):
    """A data-only cache (no code) with a correct key, digest and fingerprint, saying "no findings"."""
    import hashlib

    from nnx_lint.engine.cache import code_fingerprint
    from nnx_lint.engine.config import load_settings
    from nnx_lint.engine.runner import _selectors

    expected = uncached
    settings = load_settings(Path("."))
    entries = {}
    for file in sorted((project / "pkg").glob("*.py")):
        data = file.read_bytes()
        relative = Path("pkg") / file.name
        fingerprint = f"{code_fingerprint()}:{_selectors(settings, relative)!r}"
        entries[os.path.abspath(relative)] = {"digest": hashlib.sha256(data).hexdigest(), "fingerprint": fingerprint,
                                              "dependencies": {}, "diagnostics": []}
    planted = project / ".nnx_lint_cache"
    planted.mkdir()
    (planted / "results.json").write_text(json.dumps(entries))
    (planted / "results.pickle").write_bytes(pickle.dumps((1, entries)))  # the old format, for old readers
    for args in ((), ("--cache-dir", ".nnx_lint_cache")):
        code, found, errors = _check(capsys, *args)
        assert (code, found) == (1, expected), "a cache committed to the project hid findings"
        assert len(errors) <= 1


def _tamper_diagnostics(data: bytes) -> bytes:
    header, _, payload = data.partition(b"\n")
    entries = json.loads(payload)
    for entry in entries.values():
        entry["diagnostics"] = []
    return header + b"\n" + json.dumps(entries).encode()


def _signed_by_another_user(data: bytes) -> bytes:
    from nnx_lint.base import cache_store

    _header, _, payload = data.partition(b"\n")
    entries = json.loads(payload)
    for entry in entries.values():
        entry["diagnostics"] = []
    forged = json.dumps(entries, separators=(",", ":"), sort_keys=True).encode()
    mac = cache_store._mac(os.urandom(32), "results", forged)
    return b"nnx-lint-cache 2 results " + mac.encode() + b"\n" + forged


MUTATIONS = {
    "payload-edited": _tamper_diagnostics,
    "truncated": lambda data: data[: len(data) // 2],
    "header-only": lambda data: data.partition(b"\n")[0],
    "foreign-key": _signed_by_another_user,
    "older-format": lambda data: data.replace(b"nnx-lint-cache 2", b"nnx-lint-cache 1", 1),
    "other-kind": lambda data: data.replace(b" results ", b" confirmations ", 1),
    "payload-only": lambda data: data.partition(b"\n")[2],
    "garbage": lambda data: os.urandom(len(data)),
    "empty": lambda data: b"",
}


@pytest.mark.parametrize("mutation", MUTATIONS, ids=list(MUTATIONS))
@pytest.mark.parametrize("where", ["user-cache", "cache-dir-in-project"])
@pytest.mark.slow
def test_a_forged_or_broken_cache_gives_the_no_cache_results(project, capsys, mutation, where, uncached):
    from nnx_lint.base.cache_store import default_cache_dir

    expected = uncached
    args = ("--cache-dir", ".cache-in-repo") if where == "cache-dir-in-project" else ()
    directory = project / ".cache-in-repo" if args else default_cache_dir(project)
    assert _check(capsys, *args)[:2] == (1, expected)  # fills the cache
    cache_file = directory / "results.json"
    cache_file.write_bytes(MUTATIONS[mutation](cache_file.read_bytes()))
    code, found, errors = _check(capsys, *args)
    assert (code, found) == (1, expected)
    assert len(errors) <= 1 and all(line.startswith("nnx-lint: warning: ") for line in errors)
    assert _check(capsys, *args)[:3] == (1, expected, []), "the run after rewrote a good cache"


@pytest.mark.slow
def test_cache_entries_are_served_and_signed(project, capsys, private_user_cache, uncached):
    from nnx_lint.base.cache_store import default_cache_dir

    expected = uncached
    _check(capsys)
    data = (default_cache_dir(project) / "results.json").read_bytes()
    assert data.startswith(b"nnx-lint-cache 2 results ") and b"pickle" not in data
    key = private_user_cache / "key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert not (project / ".nnx_lint_cache").exists()
    from nnx_lint.engine.config import load_settings
    from nnx_lint.engine.runner import run

    result = run([Path(".")], load_settings(Path(".")), cache_dir=default_cache_dir(project))
    assert result.files_from_cache == 2 and [d.to_dict() for d in result.diagnostics] != []
    assert _check(capsys)[:3] == (1, expected, [])


@pytest.mark.parametrize("problem", ["group-readable", "world-readable", "symlink", "malformed", "not-owned"])
@pytest.mark.slow
def test_an_untrustworthy_key_is_replaced(project, capsys, private_user_cache, tmp_path, problem, uncached):
    if problem == "not-owned" and getattr(os, "geteuid", lambda: -1)() != 0:
        pytest.skip("giving the key to another user needs root")
    expected = uncached
    _check(capsys)
    key = private_user_cache / "key"
    old = key.read_bytes()
    if problem == "group-readable":
        key.chmod(0o640)
    elif problem == "world-readable":
        key.chmod(0o604)
    elif problem == "not-owned":
        os.chown(key, 4242, -1)
    elif problem == "symlink":
        elsewhere = tmp_path / "attacker-key"
        elsewhere.write_bytes(old)
        elsewhere.chmod(0o600)
        key.unlink()
        key.symlink_to(elsewhere)
    else:
        key.write_bytes(b"not hex\n")
    code, found, errors = _check(capsys)
    assert (code, found) == (1, expected)
    assert len(errors) == 1 and "cache key" in errors[0]
    assert not key.is_symlink() and stat.S_IMODE(key.stat().st_mode) == 0o600
    assert key.read_bytes() != old, "a key others could read is never reused"
    assert _check(capsys)[:3] == (1, expected, [])


@pytest.mark.slow
def test_cache_writes_never_follow_a_symlinked_directory(project, capsys, tmp_path, uncached):
    expected = uncached
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / ".nnx_lint_cache").symlink_to(outside, target_is_directory=True)
    code, found, errors = _check(capsys, "--cache-dir", ".nnx_lint_cache")
    assert (code, found) == (1, expected)
    assert list(outside.iterdir()) == [], "the cache was written through a symlink out of the project"
    assert len(errors) == 1 and "symbolic link" in errors[0]


@pytest.mark.slow
def test_cache_writes_never_follow_a_symlinked_file(project, capsys, tmp_path, uncached):
    expected = uncached
    target = tmp_path / "victim.txt"
    target.write_text("precious\n")
    cache = project / "cache"
    cache.mkdir()
    (cache / "results.json").symlink_to(target)
    code, found, errors = _check(capsys, "--cache-dir", "cache")
    assert (code, found) == (1, expected)
    assert target.read_text() == "precious\n" and (cache / "results.json").is_symlink()
    assert len(errors) <= 2 and all("symbolic link" in line for line in errors)


@pytest.mark.slow
def test_a_failing_cache_write_leaves_no_temporary_file(project, capsys, monkeypatch, uncached):
    expected = uncached

    def failing_replace(source, destination):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    code, found, errors = _check(capsys, "--cache-dir", "cache")
    assert (code, found) == (1, expected)
    leftovers = [p.name for p in (project / "cache").iterdir() if p.name.endswith(".tmp")]
    assert leftovers == [], "temporary files were left behind"
    # One warning per cache file the run writes: .gitignore, results.json, fixes.json (the [*] markers)
    # and, when the project's files are older than the racy window by then (a loaded machine),
    # stamps.json.
    written = {"cache/.gitignore", "cache/results.json", "cache/fixes.json", "cache/stamps.json"}
    warned = [line.removeprefix("nnx-lint: warning: could not write cache ").partition(":")[0] for line in errors]
    assert errors and set(warned) <= written and len(warned) == len(set(warned)), errors


@pytest.mark.slow
def test_a_fifo_under_the_cache_name_does_not_hang_the_run(project, capsys, uncached):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    expected = uncached
    (project / "cache").mkdir()
    os.mkfifo(project / "cache" / "results.json")
    code, found, errors = _check(capsys, "--cache-dir", "cache")
    assert (code, found) == (1, expected) and len(errors) <= 2


def test_a_planted_confirmation_cache_cannot_forge_a_verdict(tmp_path, monkeypatch):
    pytest.importorskip("jax")
    from nnx_lint.confirmation import oracle as confirmation
    from nnx_lint.confirmation.oracle import OutcomeCache, confirm, oracle_version, reproduction_for
    from nnx_lint.engine.walk import lint_bytes
    from nnx_lint.engine.registry import rule_by_code

    (diagnostic,) = lint_bytes(STATE_AXES.encode(), "m.py", [rule_by_code("NNX201")])
    reproduction = reproduction_for(diagnostic)
    program = reproduction.program(title=f"nnx-lint reproduction of {diagnostic.code} ({diagnostic.symbol})")
    key = OutcomeCache.key(program, "tree_runtime", oracle_version("tree_runtime"))
    forged = {key: {"status": "ok", "observation": None}}  # "ran as graph mode would": NOT CONFIRMED
    planted = tmp_path / ".nnx_lint_cache"
    planted.mkdir()
    (planted / "confirmations.pickle").write_bytes(pickle.dumps(forged))
    (planted / "confirmations.json").write_text(json.dumps(forged))
    runs = []
    real = confirmation.run_programs
    monkeypatch.setattr(confirmation, "run_programs", lambda programs, oracle, timeout=None: runs.append(programs)
                        or real(programs, oracle, timeout))
    (verdict,) = confirm([diagnostic], "tree_runtime", planted).values()
    assert verdict.status == "confirmed", f"a planted cache forged the verdict: {verdict}"
    assert runs == [[program]], "the program really ran"


def test_timeouts_and_crashes_are_not_cached(tmp_path, monkeypatch):
    pytest.importorskip("jax")
    from nnx_lint.confirmation import oracle as confirmation
    from nnx_lint.confirmation.oracle import OutcomeCache, confirm
    from nnx_lint.engine.walk import lint_bytes
    from nnx_lint.engine.registry import rule_by_code

    (diagnostic,) = lint_bytes(STATE_AXES.encode(), "m.py", [rule_by_code("NNX201")])
    monkeypatch.setattr(confirmation, "run_programs", lambda programs, oracle, timeout=None: [
        {"status": "error", "message": "the reproduction timed out after 1 s", "transient": True}] * len(programs))
    (verdict,) = confirm([diagnostic], "tree_runtime", tmp_path).values()
    assert verdict.status == "error" and "timed out" in verdict.evidence
    assert OutcomeCache(tmp_path).entries == {}


@pytest.mark.slow
def test_cache_writes_never_follow_a_symlinked_folder_on_the_way(project, capsys, tmp_path, uncached):
    expected = uncached
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / ".cache").symlink_to(outside, target_is_directory=True)
    code, found, errors = _check(capsys, "--cache-dir", ".cache/nnx-lint")
    assert (code, found) == (1, expected)
    assert list(outside.iterdir()) == [], "the cache was written through a symlinked parent folder"
    assert len(errors) == 1 and "symbolic link" in errors[0]
