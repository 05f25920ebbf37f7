"""The same findings whichever Python runs nnx-lint, and `target-version` as Ruff has it, as a
user runs ``nnx-lint check`` (subprocesses).

Syntax newer than the running Python (PEP 701 f-strings, ``type`` aliases, generics, ``except*``)
must not hide a file's findings; syntax newer than the project's target version is NNX002 at each
use while the file is still analysed; a baseline written on one Python holds on another.

The cross-interpreter tests run ``nnx-lint`` under every other Python they can use
(``NNX_LINT_TEST_PYTHONS``, an ``os.pathsep``-separated list of interpreters, and pyenv's CPythons
from 3.10 on) and skip, saying why, when there is none. The same logic on one Python is unit-tested
in ``test_syntax_versions.py``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: One file of each newer construct, with a Tree Mode finding that the construct must not hide
#: (NNX104, as in tunix's tests/sft/checkpoint_manager_test.py, whose f-string is line 17's).
NEWER = textwrap.dedent('''\
    from flax import nnx


    type Params = nnx.State


    def first[T](items: list[T]) -> T:
        return items[0]


    @nnx.jit
    def create(rngs):
        model = nnx.Linear(2, 2, rngs=rngs)
        return model, nnx.state(model)


    def check(errors, mapping):
        label = f"{mapping["name"]}"
        if errors:
            raise AssertionError(f'Found sharding mismatches:\\n{"\\n".join(errors)}')
        try:
            pass
        except* ValueError:
            pass
        return label
''')
# --- As a user runs it ----------------------------------------------------------------------


def _nnx_lint(python: str, project: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-m", "nnx_lint.cli", "check", ".", "--no-cache", *args], cwd=project,
                          capture_output=True, text=True, timeout=300, env=env)


def _findings(result: subprocess.CompletedProcess) -> list[tuple]:
    assert result.returncode in (0, 1), result.stderr
    return sorted((d["filename"], d["location"]["row"], d["location"]["column"], d["code"], d["message"])
                  for d in json.loads(result.stdout))


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (tmp_path / "model.py").write_text(NEWER)
    return tmp_path


def test_newer_syntax_does_not_hide_findings(project):
    found = _findings(_nnx_lint(sys.executable, project, "--output-format", "json"))
    assert [(row, code) for _, row, _, code, _ in found] == [(14, "NNX104")]


@pytest.mark.slow
def test_target_version_from_requires_python_option_and_flag(project):
    (project / "pyproject.toml").write_text('[project]\nname = "p"\nrequires-python = ">=3.11"\n')
    codes = [(row, code) for _, row, _, code, _ in _findings(_nnx_lint(sys.executable, project, "--output-format", "json"))]
    assert codes == [(4, "NNX002"), (7, "NNX002"), (14, "NNX104"), (18, "NNX002"), (20, "NNX002")]
    text = _nnx_lint(sys.executable, project).stdout
    assert "(1 raises in Tree Mode, 4 newer than the target version; 1 file checked)" in text, text
    flagged = _findings(_nnx_lint(sys.executable, project, "--output-format", "json", "--target-version", "py312"))
    assert [code for *_, code, _ in flagged] == ["NNX104"]
    (project / "pyproject.toml").write_text('[tool.nnx-lint]\ntarget-version = "py310"\n\n'
                                            '[project]\nname = "p"\nrequires-python = ">=3.12"\n')
    configured = _findings(_nnx_lint(sys.executable, project, "--output-format", "json"))
    assert (23, "NNX002") in [(row, code) for _, row, _, code, _ in configured]
    (project / "pyproject.toml").write_text('[tool.nnx-lint]\ntarget-version = "3.11"\n')
    wrong = _nnx_lint(sys.executable, project)
    assert wrong.returncode == 2 and "`target-version` must be one of py37" in wrong.stderr, wrong.stderr


# --- Across interpreters --------------------------------------------------------------------


def _other_pythons() -> list[str]:
    """Interpreters other than this one that can run nnx-lint from this checkout."""
    candidates = [p for p in os.environ.get("NNX_LINT_TEST_PYTHONS", "").split(os.pathsep) if p]
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates += sorted(str(p) for p in pyenv.glob("3.1[0-9]*/bin/python"))
    found: dict[tuple, str] = {}
    for python in candidates:
        version = _version_of(python)
        if version and version != tuple(sys.version_info[:2]) and version not in found:
            found[version] = python
    return [found[version] for version in sorted(found)]


def _environment(python: str, shim: Path) -> dict:
    """This checkout first on the path, and this environment's astroid (pure Python, linked into
    ``shim``) when the other interpreter has none of its own."""
    paths = [str(REPO)]
    if subprocess.run([python, "-c", "import astroid"], capture_output=True).returncode != 0:
        import astroid

        if not (shim / "astroid").exists():
            (shim / "astroid").symlink_to(Path(astroid.__file__).parent)
        paths.append(str(shim))
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def _version_of(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True,
                             text=True, timeout=60)
    except OSError:
        return None
    return tuple(map(int, out.stdout.split())) if out.returncode == 0 else None


@pytest.fixture(scope="module")
def other_pythons(tmp_path_factory):
    """``{interpreter: environment}`` for each other Python that runs this checkout's nnx-lint."""
    shim = tmp_path_factory.mktemp("astroid-shim")
    usable = {}
    for python in _other_pythons():
        env = _environment(python, shim)
        if subprocess.run([python, "-c", "import nnx_lint.cli, astroid"], capture_output=True, env=env).returncode == 0:
            usable[python] = env
    if not usable:
        pytest.skip("no other Python (3.10 or later) that can import nnx_lint and astroid: set "
                    "NNX_LINT_TEST_PYTHONS to interpreters with astroid installed to run these tests")
    return usable


@pytest.mark.slow
def test_same_findings_on_every_python(project, other_pythons):
    here = _findings(_nnx_lint(sys.executable, project, "--output-format", "json"))
    for python, env in other_pythons.items():
        there = _findings(_nnx_lint(python, project, "--output-format", "json", env=env))
        assert there == here, python


@pytest.mark.slow
def test_baseline_written_on_one_python_holds_on_another(project, other_pythons):
    environments = {**other_pythons, sys.executable: None}
    # Written on the newest, checked here; written here, checked on the oldest.
    newest, oldest = list(other_pythons)[-1], list(other_pythons)[0]
    for writer, checker in ((newest, sys.executable), (sys.executable, oldest)):
        baseline = project / f"baseline-{Path(writer).parent.parent.name}.json"
        written = _nnx_lint(writer, project, "--write-baseline", baseline.name, env=environments[writer])
        assert written.returncode == 0, written.stderr
        checked = _nnx_lint(checker, project, "--baseline", baseline.name, env=environments[checker])
        assert checked.returncode == 0, f"written by {writer}, checked by {checker}:\n{checked.stdout}"
        assert "1 of 1 baselined finding remains." in checked.stdout, checked.stdout
